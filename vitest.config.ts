import { configDefaults, defineConfig } from 'vitest/config';

/** The one test file that replaces a module (node:crypto) for its whole run: it gets a module registry of its own. */
const REPLACES_MODULES = ['test/unit/clients/client-secret.test.ts'];

// Nest's dependency injection reads decorator metadata: Vite's Oxc transform emits it like tsc.
export default defineConfig({
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    setupFiles: ['reflect-metadata', 'test/setup/test-operator.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most tests wait on timers, child processes, Chromium and PostgreSQL rather than compute (a
    // run keeps about 1.2 of the 2 cores busy), and each has its own database, ports and folders:
    // on a 2-core machine two workers took the suite from 16 to 11 minutes, four to about 7.5.
    maxWorkers: 4,
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          // The fault-injection suite runs on its own afterwards (vitest.faults.config.ts): it kills and locks things.
          exclude: [...configDefaults.exclude, 'test/faults/**', ...REPLACES_MODULES],
          // A worker keeps the modules it loaded from one file to the next (Nest, TypeORM and the
          // service's own cost about 2 s of CPU per file to load). So a file must leave nothing
          // behind: every app it starts is closed, and a closed app runs no timer (Nest's logger
          // is one per process: a leftover app would write into a later file's CLI output).
          isolate: false,
        },
      },
      { extends: true, test: { name: 'isolated', include: REPLACES_MODULES } },
    ],
  },
});
