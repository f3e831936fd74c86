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
  },
});
