import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // After vitest's summary: how many conformance tests ../shared/testdata being absent skipped.
    reporters: ['default', './test/conformance-reporter.ts'],
  },
});
