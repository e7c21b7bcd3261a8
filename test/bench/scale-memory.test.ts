/**
 * The memory plan of bench/scale-8b.ts: a stage whose model cannot fit in the free memory is
 * skipped with its reason in the JSON line instead of being started (and killed).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { availableMemory, int4Estimate, stageNeed, verdict, type MemoryContext } from '../../bench/scale/memory.js';
import { LLAMA_31_8B } from '../../bench/scale/weights.js';
import { SMALL } from '../../bench/scale/specs.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-scale-memory-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Llama-3.1-8B's parameter count, from its published shape (8.03 B). */
const P8B = 8_030_261_248;
const ctx = (over: Partial<MemoryContext> = {}): MemoryContext => ({ spec: LLAMA_31_8B, parameters: P8B, device: 'cpu',
  int4Bytes: null, fp16Bytes: null, exportKind: 'int4', batch: { rows: 8, seq: 256 }, ...over });

describe('scale bench memory plan', () => {
  it('estimates the int4 export near the size measured at 8B (6.98 GB) and within 15 % at the small shape (0.356 GB: its 4-layer projections are a small part, so the fixed per-tensor parts weigh more)', () => {
    expect(Math.abs(int4Estimate(LLAMA_31_8B) / 6.98e9 - 1)).toBeLessThan(0.03);
    expect(Math.abs(int4Estimate(SMALL) / 356_207_856 - 1)).toBeLessThan(0.15);
  });

  it('skips the CPU fp16 session on a 24 GB machine, naming both figures, and runs it where memory allows', () => {
    const need = stageNeed('fp16-session', ctx());
    // fp16 weights (2 bytes per parameter) and their float32 casts (4): above 48 GB.
    expect(need.bytes).toBeGreaterThan(6 * P8B);
    const free = { bytes: 20e9, source: 'test' };
    const v = verdict('fp16-session', need, free);
    expect(v.run).toBe(false);
    expect(v.reason).toMatch(/fp16-session needs about 49\.\d\d GB .* but 20\.00 GB is free \(test\)/);
    expect(verdict('fp16-session', need, { bytes: 60e9, source: 'test' }).run).toBe(true);
    // On a GPU the host holds the fp16 weights once.
    expect(stageNeed('fp16-session', ctx({ device: 'cuda' })).bytes).toBeLessThan(17.5e9);
  });

  it('counts the measured export and one batch for the extraction stages', () => {
    const e = stageNeed('extract', ctx({ int4Bytes: 7e9 }));
    // 7 GB + 4·8·256·(2·32·256 + 4·4096 + 3·14336) bytes + 1 GiB
    expect(e.bytes).toBe(7e9 + 4 * 8 * 256 * (2 * 32 * 256 + 4 * 4096 + 3 * 14336) + 2 ** 30);
    expect(verdict('extract', e, { bytes: 8e9, source: 'x' }).run).toBe(false);
    expect(verdict('extract', e, { bytes: 9e9, source: 'x' }).run).toBe(true);
  });

  it('reads MemAvailable from a meminfo file, and falls back to os.freemem()', () => {
    const f = path.join(tmp, 'meminfo');
    writeFileSync(f, 'MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   12345678 kB\n');
    expect(availableMemory(f)).toEqual({ bytes: 12345678 * 1024, source: `${f} MemAvailable` });
    expect(availableMemory(path.join(tmp, 'missing')).source).toBe('os.freemem()');
  });

  it('the script with its default stages and a 20 GB budget plans every stage but fp16-session, which it skips with the reason', () => {
    const cache = path.join(tmp, 'cache');
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/scale-8b.ts'), '--plan',
      '--memory-gb', '20'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOBES_MODEL_CACHE: cache } });
    expect(r.status, r.stderr).toBe(0);
    const line = JSON.parse(r.stdout.trim());
    expect(line.plan).toBe(true);
    expect(Object.keys(line.stages)).toEqual(['fp16-session']);
    expect(line.stages['fp16-session'].skipped).toMatch(
      /not enough free memory: fp16-session needs about 49\.\d\d GB .* but 20\.00 GB is free \(--memory-gb\)/,
    );
    for (const st of ['inspect', 'session', 'extract', 'forward', 'cat', 'wanda', 'cluster', 'report', 'report-2000',
      'dataset']) expect(line.memory.stages[st].run, st).toBe(true);
    // Nothing was generated.
    expect(existsSync(cache)).toBe(false);
  });
});
