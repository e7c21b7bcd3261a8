/**
 * One parser per kind of value: integers are decimal and range-checked in every command and
 * inside --shard, --block, --sweep and --layers; --layers is recorded in a canonical form;
 * --sweep grids are checked; --shard auto refuses two schedulers that disagree. Every refusal
 * is one line naming the flag, exit 2, and leaves earlier results byte-identical.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { parseInteger, parseNumber } from '../../src/util/parse.js';
import { canonicalLayerSpec, parseLayerSelection } from '../../src/runtime/layers.js';
import { parseShard } from '../../src/store/layout.js';
import { UsageError } from '../../src/util/errors.js';
import { capture } from '../capture.js';
import { asCli } from '../flags.js';
import { tree } from '../tree.js';

const TINY = path.resolve(__dirname, '../../models/tiny-llama');
const HAVE = existsSync(path.join(TINY, 'model.onnx'));

afterEach(() => vi.restoreAllMocks());

function refusal(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    // the line the CLI prints (the library's names the options by their keys)
    if (e instanceof UsageError) return asCli(e);
    throw e;
  }
  throw new Error('not refused');
}

/** Run a refused command: exit 2 and one line on stderr (returned). */
async function refused(argv: string[]): Promise<string> {
  const c = capture();
  const rc = await main(argv);
  vi.restoreAllMocks();
  expect(rc).toBe(2);
  const lines = c.err().split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('integers', () => {
  it('are decimal digits only, range-checked, and never past 2^53 - 1', () => {
    expect(parseInteger('16', '--limit', 1)).toBe(16);
    expect(parseInteger('-1', '--x')).toBe(-1);
    for (const bad of ['0x10', '1e2', ' 3', '3 ', '3.0', '', '+3', '0b1', '1_000', 'Infinity']) {
      expect(refusal(() => parseInteger(bad, '--limit', 1))).toBe(
        `--limit must be a decimal integer of at least 1, got ${JSON.stringify(bad)}`,
      );
    }
    expect(refusal(() => parseInteger('99999999999999999999', '--limit', 1))).toBe(
      '--limit 99999999999999999999 is too large (at most 9007199254740991)',
    );
    expect(refusal(() => parseInteger('4294967296', '--seed', 0, 2 ** 32 - 1))).toBe(
      '--seed must be a decimal integer from 0 to 4294967295, got "4294967296"',
    );
    expect(parseNumber('1e-3', '--probe-c', 0)).toBe(0.001);
    expect(parseNumber('.5', '--top', 0, 1)).toBe(0.5);
    for (const bad of ['0x1', ' 0.1', 'Infinity', 'NaN', ''])
      expect(refusal(() => parseNumber(bad, '--top', 0, 1))).toBe(
        `--top must be a decimal number from 0 to 1, got ${JSON.stringify(bad)}`,
      );
  });

  it("--shard reads its numbers and the schedulers' variables with the same parser", () => {
    expect(refusal(() => parseShard('0x1/4', {}))).toContain('--shard must be i/n');
    expect(refusal(() => parseShard('0/99999999999999999999', {}))).toBe(
      '--shard n 99999999999999999999 is too large (at most 9007199254740991)',
    );
    expect(refusal(() => parseShard('auto/4', { JOB_COMPLETION_INDEX: '0x1' }))).toBe(
      '--shard auto: JOB_COMPLETION_INDEX must be a decimal integer of at least 0, got "0x1"',
    );
  });
});

describe('--shard auto with two schedulers', () => {
  it('refuses Slurm and Kubernetes indices that disagree, naming both; agreeing ones are one shard', () => {
    const env = { SLURM_ARRAY_TASK_ID: '2', SLURM_ARRAY_TASK_COUNT: '4', JOB_COMPLETION_INDEX: '1' };
    expect(refusal(() => parseShard('auto', env))).toBe(
      '--shard auto: two schedulers disagree: Slurm gives shard 2 (SLURM_ARRAY_TASK_ID=2) and Kubernetes shard 1 (JOB_COMPLETION_INDEX=1) (unset the variable of the scheduler that did not start this job, or use --shard i/n)',
    );
    expect(parseShard('auto', { ...env, JOB_COMPLETION_INDEX: '2' })).toEqual({ index: 2, count: 4 });
    expect(parseShard('auto/4', { JOB_COMPLETION_INDEX: '3' })).toEqual({ index: 3, count: 4 });
    expect(parseShard('auto', { SLURM_ARRAY_TASK_ID: '5', SLURM_ARRAY_TASK_MIN: '4', SLURM_ARRAY_TASK_COUNT: '3' }))
      .toEqual({ index: 1, count: 3 });
  });
});

describe('--layers', () => {
  it('is canonical before it is recorded, and resolved against the model', () => {
    for (const s of ['0,0', '00', ' 0', '0 ']) expect(canonicalLayerSpec(s)).toBe('0');
    for (const s of ['0-1,1', '1,0', '0,1', '0-0,1-1']) expect(canonicalLayerSpec(s)).toBe('0-1');
    expect(canonicalLayerSpec('7,3,4,5,10-12,11')).toBe('3-5,7,10-12');
    expect(canonicalLayerSpec('last:020')).toBe('last:20');
    expect(refusal(() => canonicalLayerSpec(''))).toBe(
      '--layers is empty (use all, last:N, or 0-based layers like 0,3,10-19)',
    );
    expect(refusal(() => canonicalLayerSpec('0x1'))).toBe(
      '--layers: a layer must be a decimal integer of at least 0, got "0x1"',
    );
    expect(refusal(() => canonicalLayerSpec('3-1'))).toBe('--layers: range 3-1 runs backwards');
    expect(refusal(() => parseLayerSelection('last:99', 2))).toBe(
      '--layers last:99: the model has 2 layers (use --layers last:2 or all)',
    );
    expect(parseLayerSelection('last:99', 2, { clamp: true })).toEqual([0, 1]);
    expect(refusal(() => parseLayerSelection('2', 2))).toBe(
      '--layers: layer 2 does not exist (the model has layers 0..1)',
    );
  });
});

describe.skipIf(!HAVE)('refusals on the command line', () => {
  let dir: string;
  let run: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'lobes-values-'));
    run = path.join(dir, 'run');
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(
      await main(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '30', '--out', run, '--quiet']),
    ).toBe(0);
    vi.restoreAllMocks();
  }, 60000);

  it('loose integers are refused naming the flag, before anything is written', async () => {
    const before = tree(run);
    for (const [v, line] of [
      ['0x10', 'lobes extract: --limit must be a decimal integer of at least 1, got "0x10"'],
      ['1e2', 'lobes extract: --limit must be a decimal integer of at least 1, got "1e2"'],
      [' 3', 'lobes extract: --limit must be a decimal integer of at least 1, got " 3"'],
      ['99999999999999999999', 'lobes extract: --limit 99999999999999999999 is too large (at most 9007199254740991)'],
    ] as const) {
      const out = path.join(dir, `x-${v.trim()}`);
      expect(
        await refused(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', v, '--out', out, '--quiet']),
      ).toBe(line);
      expect(existsSync(out)).toBe(false);
    }
    expect(await refused(['wanda', run, '--seed', '0x10', '--quiet'])).toBe(
      'lobes wanda: --seed must be a decimal integer from 0 to 4294967295, got "0x10"',
    );
    expect(await refused(['wanda', run, '--block', '99999999999999999999', '--quiet'])).toBe(
      'lobes wanda: --block 99999999999999999999 is too large (at most 9007199254740991)',
    );
    expect(tree(run)).toEqual(before);
  });

  it('a --limit above the item count says so, and records both numbers', async () => {
    const out = path.join(dir, 'over');
    const c = capture();
    expect(
      await main(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '500', '--out', out, '--quiet',
        '--capture', 'final']),
    ).toBe(0);
    vi.restoreAllMocks();
    expect(c.err()).toBe('lobes: note: --limit 500 is more than the 150 items; all 150 are used\n');
    expect(JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')).dataset.limit).toMatchObject({ limit: 500,
      of: 150 });
  }, 30000);

  it('equal --layers selections get equal records; last:99 on a 2-layer model is refused', async () => {
    const selection = async (spec: string) => {
      const out = path.join(dir, `layers-${spec.replace(/\W/g, '_')}`);
      vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      expect(
        await main(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '4', '--capture', 'final,mlp',
          '--layers', spec, '--out', out, '--quiet']),
      ).toBe(0);
      vi.restoreAllMocks();
      return JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')).capture;
    };
    const zero = await selection('0');
    expect(zero.selection).toEqual(['final', 'mlp', 'layers=0']);
    expect(await selection('0,0')).toEqual(zero);
    expect(await selection('00')).toEqual(zero);
    expect(await selection('0-1,1')).toEqual(await selection('1,0'));
    const out = path.join(dir, 'layers-99');
    expect(
      await refused(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '4', '--layers', 'last:99',
        '--out', out, '--quiet']),
    ).toBe('lobes extract: --layers last:99: the model has 2 layers (use --layers last:2 or all)');
    expect(
      await refused(['attend', '--model', TINY, '--data', 'builtin:social', '--limit', '4', '--layers', 'last:99',
        '--out', out, '--quiet']),
    ).toBe('lobes attend: --layers last:99: the model has 2 layers (use --layers last:2 or all)');
    expect(
      await refused(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '4', '--layers', '', '--out',
        out, '--quiet']),
    ).toBe('lobes extract: --layers is empty (use all, last:N, or 0-based layers like 0,3,10-19)');
    expect(existsSync(out)).toBe(false);
  }, 60000);

  it('--sweep grids are checked before any work: repeats, sizes past every matrix, a missing side', async () => {
    const before = tree(run);
    const w = (sweep: string) => refused(['wanda', run, '--sweep', sweep, '--permutations', '3', '--quiet']);
    expect(await w('4,4/0.1,0.1')).toBe(
      'lobes wanda: --sweep: block size 4 is given twice (it would be a duplicate row)',
    );
    expect(await w('4,8/0.1,0.1')).toBe(
      'lobes wanda: --sweep: top fraction 0.1 is given twice (it would be a duplicate row)',
    );
    expect(await w('99999/0.1')).toBe(
      'lobes wanda: --sweep: block size 99999 is larger than every matrix (the longest side is 256) (give block sizes up to 256)',
    );
    expect(await w('/0.1')).toBe(
      'lobes wanda: --sweep /0.1 has no block sizes (give both lists, e.g. --sweep 16,32/0.05,0.1, or --sweep all for the default grid)',
    );
    expect(await w('4/0x1')).toBe('lobes wanda: --sweep top fraction must be a decimal number from 0 to 1, got "0x1"');
    expect(tree(run)).toEqual(before);
    expect(existsSync(path.join(run, 'wanda'))).toBe(false);
  }, 30000);
});
