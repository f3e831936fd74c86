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
    // Most tests wait on child processes, Chromium and PostgreSQL rather than compute, and each has
    // its own database, ports and folders: two workers on a 2-core machine took the suite from 16
    // to 11 minutes (Vitest's default there is one).
    maxWorkers: 2,
  },
});
