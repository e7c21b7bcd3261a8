/**
 * Library errors in library terms (issue 46): an error about an option names it by its library
 * key (`option`, `also`) and its message carries no `--flag`; the CLI prints the same error with
 * the command's flags (the flag definitions' `key`, else the flag in camelCase), byte for byte
 * the line it printed before, and `--json` adds `option`. The option checks that ran after work
 * had started run before it: before the run is opened (wanda, ablate) or before the first stage
 * (cluster's sweep).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { flagsOfKeys, spellOption } from '../../src/cli/args.js';
import { LobesError, UsageError, opt, optionText } from '../../src/util/errors.js';
import { runWanda } from '../../src/wanda/run.js';
import { runAblate } from '../../src/ablate/run.js';
import { runCluster } from '../../src/cluster/run.js';
import { resolveConvertOptions } from '../../src/convert/convert.js';
import { parseShard } from '../../src/store/layout.js';
import { capture } from '../capture.js';

afterEach(() => vi.restoreAllMocks());

const dir = mkdtempSync(path.join(tmpdir(), 'lobes-usage-option-'));
/** A run folder that does not exist: an error about it means the run was opened. */
const NO_RUN = path.join(dir, 'no-run');

/** What `fn` threw (it must throw). */
async function thrown(fn: () => unknown): Promise<LobesError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof LobesError) return e;
    throw e;
  }
  throw new Error('did not throw');
}

/** The command's one stderr line and its exit code. */
async function cli(argv: string[]): Promise<{ rc: number; err: string; out: string }> {
  const c = capture();
  const rc = await main(argv);
  vi.restoreAllMocks();
  return { rc, err: c.err(), out: c.out() };
}

describe('UsageError in library terms', () => {
  it('takes { option, message, hint, also, code } and keeps (message, hint)', () => {
    const e = new UsageError({ option: 'sweep', also: ['resolution'], message: "sweep needs resolution 'block'",
      hint: 'or leave sweep out' });
    expect([e.option, e.also, e.code, e.exitCode, e.message, e.hint]).toEqual(['sweep', ['resolution'], 'E_USAGE', 2,
      "sweep needs resolution 'block' (or leave sweep out)", 'or leave sweep out']);
    expect(new UsageError({ option: 'data', code: 'E_INPUT', message: 'x' }).code).toBe('E_INPUT');
    const old = new UsageError('expected 1 argument, got 0', 'usage: lobes wanda RUN');
    expect([old.option, old.message, old.code]).toEqual([undefined,
      'expected 1 argument, got 0 (usage: lobes wanda RUN)', 'E_USAGE']);
  });

  it("options marked with opt() read as their keys, are the error's option and also, and spell as anything else", () => {
    const e = new LobesError(`${opt('cot')} needs a KV cache`, { hint: `use ${opt('sharePrefix', 'off')}` });
    expect([e.message, e.hint, e.option, e.also]).toEqual(['cot needs a KV cache (use sharePrefix off)',
      'use sharePrefix off', 'cot', ['sharePrefix']]);
    expect(optionText(e.marked!.message, (k) => `--${k.toUpperCase()}`)).toBe(
      '--COT needs a KV cache (use --SHAREPREFIX off)',
    );
  });

  it("the CLI flag of a key: the definition's key, else camelCase; an old spelling names none; a key no flag sets: kebab-case", () => {
    const flags = flagsOfKeys({ model: { type: 'string', key: 'weights' }, 'top-k': { type: 'string' },
      weights: { type: 'string', renamed: 'model' } });
    expect([...flags]).toEqual([['weights', '--model'], ['topK', '--top-k']]);
    expect(spellOption('chunkUnits')).toBe('--chunk-units');
    expect(spellOption('top.scope')).toBe('--scope');
  });
});

describe('a library call with a bad option', () => {
  it('wanda: sweep with resolution weight names sweep and resolution, no flag, before the run is opened', async () => {
    const e = await thrown(() => runWanda(NO_RUN, { sweep: true, resolution: 'weight', quiet: true }));
    expect(e).toBeInstanceOf(UsageError);
    expect([e.option, e.also, e.message]).toEqual(['sweep', ['resolution'], 'sweep needs resolution block']);
  });

  it('wanda: weight resolution with another scope, and a repeated sweep size, before the run is opened', async () => {
    const s = await thrown(() => runWanda(NO_RUN, { resolution: 'weight', top: { scope: 'global' }, quiet: true }));
    expect([s.option, s.message]).toEqual(['resolution',
      'resolution weight selects weights per matrix; top.scope global is not available with it']);
    const r = await thrown(() => runWanda(NO_RUN, { sweep: { blocks: [4, 4], tops: [0.1] }, quiet: true }));
    expect([r.option, r.message]).toEqual(['sweep',
      'sweep: block size 4 is given twice (it would be a duplicate row)']);
  });

  it('ablate: a dose-response with the iae task names tops and task, before the run and its wanda results are read', async () => {
    const e = await thrown(() =>
      runAblate({ run: NO_RUN, region: 'all', data: 'builtin:social', out: path.join(dir, 'ablate'), tops: [0.1],
        task: 'iae', quiet: true })
    );
    expect(e).toBeInstanceOf(UsageError);
    expect([e.option, e.also, e.message]).toEqual(['tops', ['task'],
      'tops (a dose–response) applies to the continuation task; task iae ablates the stored regions only']);
    const s = await thrown(() =>
      runAblate({ run: NO_RUN, region: 'all', data: 'builtin:social', out: path.join(dir, 'ablate'), shuffled: -1,
        quiet: true })
    );
    expect([s.option, s.message]).toEqual(['shuffled', 'shuffled must be a non-negative integer, got -1']);
  });

  it('convert and shard: the option keys, no flag', async () => {
    const c = await thrown(() => resolveConvertOptions({ dtype: 'fp16', weights: 'fp32' }));
    expect([c.option, c.also, c.message]).toEqual(['weights', ['dtype'],
      'weights fp32 needs dtype fp32 (an fp16 graph would cast them down at every run) (use weights fp16 or q4 with dtype fp16)']);
    const s = await thrown(() => parseShard('auto', {}));
    expect([s.option, s.message]).toEqual(['shard',
      'shard auto: neither SLURM_ARRAY_TASK_ID (Slurm job array) nor JOB_COMPLETION_INDEX (Kubernetes Indexed Job) is set (use shard i/n)']);
  });

  it('cluster: a sweep over a matrix is refused before the first stage ends (a cancelled call gets the refusal, not the cancellation)', async () => {
    const rows = 12;
    const header = "{'descr': '<f4', 'fortran_order': False, 'shape': (12, 2), }";
    const pad = 64 - ((10 + header.length + 1) % 64);
    const head = Buffer.from(`\x93NUMPY\x01\x00`, 'latin1');
    const len = Buffer.alloc(2);
    len.writeUInt16LE(header.length + pad + 1);
    const data = Buffer.from(new Float32Array(Array.from({ length: rows * 2 }, (_, i) => Math.sin(i + 1))).buffer);
    const npy = path.join(dir, 'x.npy');
    writeFileSync(npy, Buffer.concat([head, len, Buffer.from(header + ' '.repeat(pad) + '\n', 'latin1'), data]));
    const labels = path.join(dir, 'labels.txt');
    writeFileSync(labels, Array.from({ length: rows }, (_, i) => (i % 2 ? 'a' : 'b')).join('\n') + '\n');
    const cancelled = new AbortController();
    cancelled.abort();
    const e = await thrown(() =>
      runCluster(npy, { input: { labels }, probe: { sweep: true }, tsne: { perplexity: 2 }, output: { noWrite: true },
        execution: { quiet: true, signal: cancelled.signal } })
    );
    expect([e.code, e.option, e.message]).toEqual(['E_INPUT', 'sweep',
      'sweep needs a run directory (a matrix file has one layer)']);
  });
});

describe('the same errors through the CLI print the flags', () => {
  it('wanda: the line it printed before, and --json adds the option as the flag', async () => {
    const r = await cli(['wanda', NO_RUN, '--sweep', 'all', '--resolution', 'weight']);
    expect([r.rc, r.err]).toEqual([2, 'lobes wanda: --sweep needs --resolution block\n']);
    const j = await cli(['wanda', NO_RUN, '--sweep', 'all', '--resolution', 'weight', '--json']);
    expect(JSON.parse(j.out)).toEqual({
      error: { code: 'E_USAGE', message: '--sweep needs --resolution block', option: '--sweep', file: null, where: null,
        hint: null, exitCode: 2 },
    });
  });

  it('wanda --scope sets top.scope: printed as --scope', async () => {
    const r = await cli(['wanda', NO_RUN, '--resolution', 'weight', '--scope', 'layer']);
    expect([r.rc, r.err]).toEqual([2,
      'lobes wanda: --resolution weight selects weights per matrix; --scope layer is not available with it\n']);
  });

  it('ablate --top sets tops: printed as --top, with --task', async () => {
    const r = await cli(['ablate', NO_RUN, '--region', 'all', '--data', 'builtin:social', '--out',
      path.join(dir, 'ablate-cli'), '--top', '0.1', '--task', 'iae', '--quiet']);
    expect([r.rc, r.err]).toEqual([2,
      'lobes ablate: --top (a dose–response) applies to the continuation task; --task iae ablates the stored regions only\n']);
  });
});
