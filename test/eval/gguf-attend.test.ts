/**
 * One GGUF is one model to every command (issue: the documented eval → attend path failed
 * with "the evaluation was run with another model", because eval converts the GGUF in the
 * genai layout and attend in the explicit one, whose graphs differ). docs/attend.md's own
 * example, on the tiny Llama-3.1-shaped GGUF: `lobes eval G.gguf …` then
 * `lobes attend G.gguf --eval DIR`. A GGUF with other weights (same header, same size) is
 * still another model, and the evaluation's files are left byte-identical either way.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cli } from '../runtime/helpers.js';
import { TINY_GGUF } from '../convert/tiny-llama3.js';
import { readGgufHeader } from '../../src/formats/gguf.js';
import { scopedEnv } from '../env.js';

let root: string;
let cache: string;
let items: string;
const env = scopedEnv();
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-gguf-attend-'));
  cache = path.join(root, 'cache');
  env.set({ LOBES_HASH_CACHE: path.join(root, 'file-sha256.json') });
  items = path.join(root, 'items.jsonl');
  writeFileSync(
    items,
    [
      { id: 'a', q: 'What is the capital of France?', o: ['Berlin', 'Paris', 'Rome', 'Madrid'], a: 1 },
      { id: 'b', q: 'Which number is even?', o: ['3', '7', '8', '5'], a: 2 },
      { id: 'c', q: 'Which is a colour?', o: ['red', 'dog', 'run', 'six'], a: 0 },
    ]
      .map((x) => JSON.stringify(x))
      .join('\n') + '\n',
  );
});
afterAll(() => {
  env.restore();
  rmSync(root, { recursive: true, force: true });
});

function files(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f)).toString('base64')]));
}

describe('lobes eval G.gguf, then lobes attend G.gguf --eval DIR', { timeout: 300_000 }, () => {
  it('is one model: attend reads the evaluation (eval used the genai layout, attend the explicit one)', async () => {
    const ev = path.join(root, 'eval');
    const e = await cli(['eval', TINY_GGUF, '--data', `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out', ev,
      '--cache', cache, '--quiet']);
    expect(e.code, e.err).toBe(0);
    const em = JSON.parse(readFileSync(path.join(ev, 'eval.json'), 'utf8'));
    expect(em.model.source.options.layout).toBe('genai');
    expect(em.model.source.identity).toMatch(/^[0-9a-f]{64}$/);
    const before = files(ev);
    const out = path.join(root, 'attend');
    const a = await cli(['attend', TINY_GGUF, '--eval', ev, '--items', 'all', '--out', out, '--cache', cache,
      '--quiet']);
    expect(a.code, a.err).toBe(0);
    const s = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8'));
    expect(s.model.source.options.layout).toBe('explicit');
    // Two layouts, two graphs, one model identity.
    expect(s.model.graphSha256).not.toBe(em.model.graphSha256);
    expect(s.model.source.identity).toBe(em.model.source.identity);
    expect(s.input.selected ?? s.input.items).toBeTruthy();
    expect(files(ev)).toEqual(before);
  });

  it('a GGUF with other weights (same size, same header) is another model: refused in one line', async () => {
    const ev = path.join(root, 'eval');
    const other = path.join(root, 'other.gguf');
    const buf = readFileSync(TINY_GGUF);
    const t = readGgufHeader(TINY_GGUF).tensors.find((x) => x.name === 'output_norm.weight')!;
    for (let i = 0; i < t.nbytes; i += 4) buf.writeFloatLE(buf.readFloatLE(t.offset + i) * 1.5, t.offset + i);
    writeFileSync(other, buf);
    const before = files(ev);
    const out = path.join(root, 'attend-other');
    const a = await cli(['attend', other, '--eval', ev, '--items', 'all', '--out', out, '--cache', cache, '--quiet']);
    expect(a.code).toBe(1);
    const lines = a.err.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `lobes attend: ${
        path.join(ev, 'eval.json')
      }: the evaluation was run with another model (its eval.json records another GGUF identity: other file contents, dtype or weight storage) (give lobes attend the GGUF the evaluation used, converted the same way (lobes convert --dtype and --weights))`,
    );
    expect(files(ev)).toEqual(before);
  });
});
