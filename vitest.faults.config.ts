import { defineConfig } from 'vitest/config';

// The fault-injection suite (test/faults): each file brings its own PostgreSQL cluster and
// service processes, so there is no globalSetup. Files run one at a time: the scenarios measure
// latencies and recovery times and must not compete for the CPU.
export default defineConfig({
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    include: ['test/faults/**/*.test.ts'],
    setupFiles: ['reflect-metadata', 'test/setup/test-operator.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
