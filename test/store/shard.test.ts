import { describe, it, expect } from 'vitest';
import { parseShard, shardRange, expandOut } from '../../src/store/layout.js';

describe('--shard parsing', () => {
  it('i/n is 0-based and validated', () => {
    expect(parseShard('2/3', {})).toEqual({ index: 2, count: 3 });
    expect(parseShard(undefined, {})).toBeNull();
    expect(() => parseShard('3/3', {})).toThrow(/shard index 3 is outside 0\.\.2/);
    expect(() => parseShard('1/0', {})).toThrow(/shard count must be at least 1/);
    expect(() => parseShard('1:3', {})).toThrow(/^shard must be i\/n/);
  });

  it('auto reads Slurm job arrays, minding SLURM_ARRAY_TASK_MIN and STEP', () => {
    expect(parseShard('auto', { SLURM_ARRAY_TASK_ID: '0', SLURM_ARRAY_TASK_COUNT: '4' })).toEqual({ index: 0,
      count: 4 });
    // --array=1-3: ids 1,2,3, MIN 1.
    expect(parseShard('auto', { SLURM_ARRAY_TASK_ID: '3', SLURM_ARRAY_TASK_MIN: '1', SLURM_ARRAY_TASK_COUNT: '3' }))
      .toEqual({ index: 2, count: 3 });
    // --array=10-30:10: ids 10,20,30.
    expect(
      parseShard('auto', { SLURM_ARRAY_TASK_ID: '20', SLURM_ARRAY_TASK_MIN: '10', SLURM_ARRAY_TASK_STEP: '10',
        SLURM_ARRAY_TASK_COUNT: '3' }),
    ).toEqual({ index: 1, count: 3 });
    expect(() => parseShard('auto', { SLURM_ARRAY_TASK_ID: '2' })).toThrow(/SLURM_ARRAY_TASK_COUNT is not/);
    expect(() => parseShard('auto', { SLURM_ARRAY_TASK_ID: '5', SLURM_ARRAY_TASK_COUNT: '3' })).toThrow(
      /shard index 5 is outside 0\.\.2/,
    );
  });

  it('auto reads Kubernetes Indexed Jobs with the count from auto/N or LOBES_SHARD_COUNT', () => {
    expect(parseShard('auto/8', { JOB_COMPLETION_INDEX: '7' })).toEqual({ index: 7, count: 8 });
    expect(parseShard('auto', { JOB_COMPLETION_INDEX: '1', LOBES_SHARD_COUNT: '2' })).toEqual({ index: 1, count: 2 });
    expect(() => parseShard('auto', { JOB_COMPLETION_INDEX: '1' })).toThrow(/shard count is unknown/);
    expect(() => parseShard('auto', {})).toThrow(/neither SLURM_ARRAY_TASK_ID .* nor JOB_COMPLETION_INDEX/);
  });

  it('--out may name the shard', () => {
    expect(expandOut('runs/x-{i}-of-{n}', { index: 1, count: 4 })).toBe('runs/x-1-of-4');
    expect(() => expandOut('runs/x-{i}', null)).toThrow(/uses \{i\}\/\{n\} but no shard is given/);
  });
});

describe('shard ranges', () => {
  it('every dataset row falls in exactly one shard, on chunk boundaries, in order', () => {
    for (const N of [0, 1, 7, 23, 100, 257]) {
      for (const K of [1, 4, 10, 64]) {
        for (const n of [1, 2, 3, 5, 8, 40]) {
          const owner = new Int32Array(N).fill(-1);
          let prevEnd = 0;
          for (let i = 0; i < n; i++) {
            const r = shardRange(N, K, { index: i, count: n });
            expect(r.rowStart).toBe(prevEnd);
            expect(r.rowStart % K === 0 || r.rowStart === N).toBe(true);
            for (let x = r.rowStart; x < r.rowEnd; x++) {
              expect(owner[x]).toBe(-1);
              owner[x] = i;
            }
            prevEnd = r.rowEnd;
          }
          expect(prevEnd).toBe(N);
          expect(owner.every((o) => o >= 0)).toBe(true);
          // Balanced: shard sizes in chunks differ by at most one.
          const sizes = Array.from({ length: n }, (_, i) => {
            const r = shardRange(N, K, { index: i, count: n });
            return r.chunkEnd - r.chunkStart;
          });
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
        }
      }
    }
  });
});
