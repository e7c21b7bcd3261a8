/**
 * Every error code of docs/api.md ("Error codes") is produced by a real failing call, not by
 * constructing the error: a folder whose lock is held, a folder lobes did not write, an
 * analysis record checked against another run, a bad flag, a model family lobes does not convert, a
 * missing dataset file and an aborted signal. The CLI's --json failure object carries the code.
 */
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ERROR_CODES, LobesError } from '../../src/util/errors.js';
import { tryLock } from '../../src/util/lock.js';
import { runExtract } from '../../src/extract/run.js';
import { runAblate } from '../../src/ablate/run.js';
import { convertHfCheckpoint } from '../../src/convert/convert.js';
import { loadDataset } from '../../src/data/index.js';
import { analysisProvenance, checkProvenance, openRun, readManifest } from '../../src/store/index.js';
import { main } from '../../src/cli/main.js';
import { fakeDeps, fakeModelDir } from '../extract-run/fake.js';

/** The error a call fails with (the test fails when it succeeds or throws something else). */
async function failure(call: () => unknown): Promise<LobesError> {
  let got: unknown = null;
  try {
    await call();
  } catch (e) {
    got = e;
  }
  expect(got, 'the call was expected to fail').toBeInstanceOf(LobesError);
  return got as LobesError;
}

/** Run the CLI, returning its exit code and what it wrote to stdout and stderr. */
async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((
    s: string | Uint8Array,
  ) => ((stdout += String(s)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((
    s: string | Uint8Array,
  ) => ((stderr += String(s)), true));
  try {
    const code = await main(argv);
    return { code, stdout, stderr };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

describe('error codes, each from a real failing call', () => {
  let root: string;
  let model: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-codes-'));
    model = fakeModelDir(root);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const extract = (out: string, extra: Record<string, unknown> = {}) =>
    runExtract({ model, data: 'fake', out, chunkRows: 4, batch: 3, quiet: true, deps: fakeDeps(12), ...extra });

  it('E_LOCKED: a job folder whose lock another writer holds', async () => {
    const out = path.join(root, 'locked');
    mkdirSync(out);
    const lock = tryLock(path.join(out, '.lobes-lock'), { purpose: 'lobes extract' });
    if (!('release' in lock)) throw new Error('the test could not take the lock');
    try {
      const e = await failure(() => extract(out));
      expect(e.code).toBe('E_LOCKED');
      expect(e.message).toMatch(/another lobes process is writing this folder/);
    } finally {
      lock.release();
    }
    // Once let go, the same call runs.
    await extract(out);
    expect(existsSync(path.join(out, 'manifest.json'))).toBe(true);
  });

  it('E_EXISTS: a folder lobes did not write is refused and left as it was', async () => {
    const out = path.join(root, 'foreign');
    mkdirSync(out);
    writeFileSync(path.join(out, 'notes.txt'), 'mine');
    const e = await failure(() => extract(out));
    expect(e.code).toBe('E_EXISTS');
    expect(e.message).toMatch(/output folder exists and is not a lobes run/);
    expect(readdirSync(out)).toEqual(['notes.txt']);
    expect(readFileSync(path.join(out, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('E_STALE: what an analysis read of one run, checked against another run', async () => {
    const a = path.join(root, 'run-a');
    const b = path.join(root, 'run-b');
    await extract(a);
    await extract(b, { deps: fakeDeps(12, { variant: 1 }) });
    const read = analysisProvenance(await openRun(a));
    // The record of run a belongs to run a as it is now.
    checkProvenance(a, readManifest(a), read, 'the results', path.join(a, 'settings.json'), 'lobes cluster');
    const e = await failure(() =>
      checkProvenance(b, readManifest(b), read, 'the results', path.join(b, 'settings.json'), 'lobes cluster')
    );
    expect(e.code).toBe('E_STALE');
    expect(e.message).toMatch(/the results belong to another run/);
  });

  it('E_USAGE: a bad option value (a UsageError)', async () => {
    const e = await failure(() =>
      runAblate({ run: root, region: 'x', data: 'builtin:social', out: path.join(root, 'usage'), random: 0 })
    );
    expect(e.code).toBe('E_USAGE');
    expect(e.exitCode).toBe(2);
  });

  it('E_MODEL: a Hugging Face model family lobes does not convert', async () => {
    const dir = path.join(root, 'mamba');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'mamba' }));
    writeFileSync(path.join(dir, 'model.safetensors'), '');
    const e = await failure(() => convertHfCheckpoint(dir, path.join(root, 'mamba-out')));
    expect(e.code).toBe('E_MODEL');
    expect(e.message).toMatch(/model_type "mamba" is not one lobes converts/);
    // The command line with --json: the one line on stderr, and the code in a JSON object on stdout.
    const r = await cli(['convert', dir, '--out', path.join(root, 'mamba-out'), '--json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^lobes convert: .*model_type "mamba" is not one lobes converts/);
    expect(JSON.parse(r.stdout)).toEqual({
      error: { code: 'E_MODEL', message: e.message, option: null, file: e.file, where: 'model_type', hint: null,
        exitCode: 1 },
    });
    expect(existsSync(path.join(root, 'mamba-out'))).toBe(false);
  });

  it('E_INPUT, the default: a dataset file that is not there; without --json the CLI prints no JSON', async () => {
    const missing = path.join(root, 'absent.jsonl');
    const e = await failure(() => loadDataset(`jsonl:${missing}`));
    expect(e.code).toBe('E_INPUT');
    const j = await cli(['data', 'inspect', `jsonl:${missing}`, '--json']);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout).error).toMatchObject({ code: 'E_INPUT', file: missing, exitCode: 1 });
    const plain = await cli(['data', 'inspect', `jsonl:${missing}`]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/^lobes data: /);
  });

  it('E_USAGE through the CLI --json: exit code 2', async () => {
    const r = await cli(['extract', '--data', 'builtin:social', '--out', path.join(root, 'cli-usage'), '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'E_USAGE', exitCode: 2 });
  });

  it('E_ABORTED: a call given an aborted signal stops before it writes anything', async () => {
    const ac = new AbortController();
    ac.abort();
    const out = path.join(root, 'aborted');
    const e = await failure(() => extract(out, { signal: ac.signal }));
    expect(e.code).toBe('E_ABORTED');
    expect(existsSync(out)).toBe(false);
    const a = await failure(() =>
      runAblate({ run: root, region: 'x', data: 'builtin:social', out, signal: ac.signal })
    );
    expect(a.code).toBe('E_ABORTED');
    expect(existsSync(out)).toBe(false);
  });

  it('every code the tests above produce is one ERROR_CODES lists, with a line on it', () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual(['E_ABORTED', 'E_EXISTS', 'E_INPUT', 'E_LOCKED', 'E_MODEL',
      'E_STALE', 'E_USAGE']);
    for (const v of Object.values(ERROR_CODES)) expect(v.length).toBeGreaterThan(10);
  });
});
