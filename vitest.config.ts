import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // 2-core machines: keep parallelism modest so timing-sensitive work does not starve.
    maxWorkers: 2,
    // Longest files first (test/durations.json), so that no long file starts last and runs alone.
    sequence: { sequencer: LongestFirstSequencer },
  },
});
