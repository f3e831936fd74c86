import { configDefaults, defineConfig } from 'vitest/config';

// Nest's dependency injection reads decorator metadata: Vite's Oxc transform emits it like tsc.
export default defineConfig({
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    include: ['test/**/*.test.ts'],
    // The fault-injection suite runs on its own afterwards (vitest.faults.config.ts): it kills and locks things.
    exclude: [...configDefaults.exclude, 'test/faults/**'],
    globalSetup: ['test/setup/global-setup.ts'],
    setupFiles: ['reflect-metadata'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most tests wait on timers, child processes, Chromium and PostgreSQL rather than compute (a
    // run keeps about 1.2 of the 2 cores busy), and each has its own database, ports and folders:
    // on a 2-core machine two workers took the suite from 16 to 11 minutes, four to about 8.
    // Each file keeps a process of its own (isolate): Nest's logger is one per process, so an
    // app of an earlier file that is still winding down would write into a later file's CLI output.
    maxWorkers: 4,
  },
});
