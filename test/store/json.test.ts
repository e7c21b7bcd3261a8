/**
 * readJsonFile and writeJsonAtomic (src/store/json.ts): the default one-line errors, a reader's
 * own words for a file it cannot read or parse, the fallback of an optional file (a file holding
 * null is null, not the fallback), and the bytes of each indent style.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonFile, writeJsonAtomic } from '../../src/store/json.js';
import { LobesError } from '../../src/util/errors.js';

const dir = mkdtempSync(path.join(tmpdir(), 'lobes-json-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const put = (name: string, text: string) => {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
};
const failure = (f: () => unknown): LobesError => {
  try {
    f();
  } catch (e) {
    return e as LobesError;
  }
  throw new Error('did not throw');
};

describe('readJsonFile', () => {
  const good = put('good.json', '{"a": [1, 2]}');
  const bad = put('bad.json', '{"a": ');
  const nul = put('null.json', 'null');
  const missing = path.join(dir, 'missing.json');

  it('parses, and names the file in one line when it cannot read or parse it', () => {
    expect(readJsonFile(good)).toEqual({ a: [1, 2] });
    const m = failure(() => readJsonFile(missing));
    expect(m).toBeInstanceOf(LobesError);
    expect(m.message).toBe(`${missing}: cannot read (ENOENT)`);
    expect(failure(() => readJsonFile(bad)).message).toMatch(
      new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: invalid JSON: `),
    );
  });

  it("words the failures as the reader does, with its hint, or throws the reader's own error", () => {
    const o = {
      unreadable: (e: NodeJS.ErrnoException) => (e.code === 'ENOENT'
        ? new LobesError('not ours: x.json is missing', { file: 'elsewhere' })
        : `x is not valid JSON (${e.message})`),
      invalid: (msg: string) => `x is not valid JSON (${msg})`,
      hint: 'write it again',
    };
    expect(failure(() => readJsonFile(missing, o)).message).toBe('elsewhere: not ours: x.json is missing');
    const e = failure(() => readJsonFile(bad, o));
    expect(e.message).toMatch(/bad\.json: x is not valid JSON \(/);
    expect(e.hint).toBe('write it again');
    // a folder is unreadable (EISDIR), not missing
    mkdirSync(path.join(dir, 'sub'));
    expect(failure(() => readJsonFile(path.join(dir, 'sub'), o)).message).toMatch(/sub: x is not valid JSON \(EISDIR/);
  });

  it('returns the fallback for a missing, unreadable or invalid optional file, and null for a file holding null', () => {
    expect(readJsonFile(missing, { fallback: undefined })).toBeUndefined();
    expect(readJsonFile(bad, { fallback: 7 })).toBe(7);
    expect(readJsonFile(nul, { fallback: undefined })).toBeNull();
    expect(readJsonFile(good, { fallback: null })).toEqual({ a: [1, 2] });
  });
});

describe('writeJsonAtomic', () => {
  it('writes the bytes of JSON.stringify at indent 0, 1 or 2 and a newline', () => {
    const v = { b: [1, { c: 'x' }], a: null };
    for (const indent of [0, 1, 2] as const) {
      const f = path.join(dir, `w${indent}.json`);
      writeJsonAtomic(f, v, indent);
      expect(readFileSync(f, 'utf8')).toBe(JSON.stringify(v, null, indent) + '\n');
    }
    writeJsonAtomic(path.join(dir, 'default.json'), v);
    expect(readFileSync(path.join(dir, 'default.json'), 'utf8')).toBe('{"b":[1,{"c":"x"}],"a":null}\n');
  });
});

describe('the readers keep their own words through readJsonFile', () => {
  it('run manifest, chunk index and eval.json: missing, not a folder, not JSON', async () => {
    const { readManifest } = await import('../../src/store/manifest.js');
    const { readChunkIndex, indexPath } = await import('../../src/store/chunks.js');
    const { readEvalManifest } = await import('../../src/eval/store.js');
    const run = path.join(dir, 'run');
    mkdirSync(run);
    let e = failure(() => readManifest(run));
    expect(e.message).toContain(`${path.join(run, 'manifest.json')}: not a lobes run: manifest.json is missing`);
    expect(e.hint).toBe('give the folder written by lobes extract or lobes merge');
    // the run given as . (the working folder): named by its full path, not as a bare manifest.json
    const cwd = process.cwd();
    process.chdir(run);
    try {
      expect(failure(() => readManifest('.')).message).toContain(`${path.join(run, 'manifest.json')}: not a lobes run`);
    } finally {
      process.chdir(cwd);
    }
    const file = put('plain.txt', 'x');
    expect(failure(() => readManifest(file)).message).toContain(`${file}: not a lobes run: not a folder`);
    writeFileSync(path.join(run, 'manifest.json'), '{');
    expect(failure(() => readManifest(run)).message).toMatch(/manifest\.json: manifest is not valid JSON \(/);
    mkdirSync(path.dirname(indexPath(run)), { recursive: true });
    writeFileSync(indexPath(run), '[');
    expect(failure(() => readChunkIndex(run)).message).toMatch(/: chunk index is not valid JSON \(/);
    e = failure(() => readEvalManifest(run));
    expect(e.message).toContain(`${path.join(run, 'eval.json')}: not a lobes evaluation: eval.json is missing`);
    expect(e.hint).toBe('give the folder written by lobes eval');
    writeFileSync(path.join(run, 'eval.json'), 'nope');
    expect(failure(() => readEvalManifest(run)).message).toMatch(/eval\.json: eval\.json is not valid JSON \(/);
  });
});
