/**
 * `lobes extract --control random` from a quantized GGUF (issue: it refused SmolLM2's Q4_1
 * file with "MatMulNBits … cannot redraw yet", and wrote the control under the system temp
 * folder whatever --cache said). The control is drawn from an fp16 conversion of the GGUF made
 * automatically, and everything (the q4 conversion, the fp16 one, the control) lives in --cache.
 * `lobes eval --control random` on the same GGUF lays out the same draw in its genai layout,
 * reaching the fp16 conversion from the genai one without an explicit 4-bit conversion.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SMOLLM2_GGUF } from '../eval/smollm2.js';
import { run as extractCli } from '../../src/cli/extract.js';
import { run as evalCli } from '../../src/cli/eval.js';
import { loadModel } from '../../src/onnx/index.js';
import { defaultControlDir } from '../../src/runtime/control.js';
import { scopedEnv } from '../env.js';

const have = existsSync(SMOLLM2_GGUF);
if (!have) console.warn(`test/extract-run/control-gguf: skipped: ${SMOLLM2_GGUF} is absent`);

describe('control from a GGUF', () => {
  it('the default control folder is the user cache, never the system temp folder', () => {
    expect(defaultControlDir({ LOBES_CACHE: '/c' })).toBe(path.join('/c', 'controls'));
    expect(defaultControlDir({ XDG_CACHE_HOME: '/x' })).toBe(path.join('/x', 'lobes', 'controls'));
    expect(defaultControlDir({ LOBES_MODEL_CACHE: '/m', LOBES_CACHE: '/c' })).toBe('/m');
    expect(defaultControlDir({ HOME: process.env.HOME })).not.toContain(tmpdir());
  });
});

describe.skipIf(!have)('lobes extract --model Q4_1.gguf --control random --cache DIR', () => {
  let root: string;
  let ctlName: string;
  const env = scopedEnv();
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-control-gguf-'));
  });
  afterAll(() => {
    env.restore();
    rmSync(root, { recursive: true, force: true });
  });

  it('draws the control from an fp16 conversion, all under --cache; the GGUF is untouched', async () => {
    const cache = path.join(root, 'cache');
    const sysTmp = path.join(root, 'system-tmp');
    mkdirSync(sysTmp);
    env.set({ TMPDIR: sysTmp, LOBES_MODEL_CACHE: undefined, LOBES_HASH_CACHE: path.join(root, 'file-sha256.json') });
    const data = path.join(root, 'texts.jsonl');
    writeFileSync(data,
      ['The cat sat on the mat.', 'Paris is in France.', 'Two and two make four.', 'She opened the door.'].map((t, i) =>
        JSON.stringify({ id: `t${i}`, text: t, label: i % 2 ? 'a' : 'b' })
      ).join('\n') + '\n');
    const ggufBefore = readFileSync(SMOLLM2_GGUF);
    const out = path.join(root, 'run');
    const code = await extractCli(['--model', SMOLLM2_GGUF, '--data', `jsonl:${data}?text=text&label=label&id=id`,
      '--out', out, '--capture', 'final', '--dtype', 'fp32', '--control', 'random', '--control-seed', '2', '--cache',
      cache, '--quiet']);
    expect(code).toBe(0);
    const m = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.model.control).toMatchObject({ kind: 'random', seed: 2 });
    // The control's source is the fp16 conversion, in --cache.
    const src = m.model.control.source as string;
    expect(path.dirname(src)).toBe(cache);
    expect(JSON.parse(readFileSync(path.join(src, 'lobes-convert.json'), 'utf8')).options.weights).toBe('fp16');
    // The run read the control, which lives in --cache too; nothing went to the system temp folder.
    expect(path.dirname(m.model.dir)).toBe(cache);
    expect(path.basename(m.model.dir)).toMatch(/^control-random-[0-9a-f]{16}-seed2-v1$/);
    expect(readdirSync(sysTmp)).toEqual([]);
    // The control has no 4-bit weights left, and the q4 conversion is there too (the trained model's).
    const g = loadModel(m.model.dir);
    expect(g.model.graph!.node.some((n) => n.opType === 'MatMulNBits')).toBe(false);
    const entries = readdirSync(cache).filter((n) => !n.startsWith('control-'));
    const weights = entries.map((e) =>
      JSON.parse(readFileSync(path.join(cache, e, 'lobes-convert.json'), 'utf8')).options.weights
    ).sort();
    expect(weights).toEqual(['fp16', 'q4']);
    expect(readdirSync(cache).filter((n) => n.endsWith('.lock') || n.includes('.tmp-') || n.startsWith('.'))).toEqual(
      [],
    );
    expect(readFileSync(SMOLLM2_GGUF).equals(ggufBefore)).toBe(true);
    ctlName = path.basename(m.model.dir);
  }, 600_000);

  it(
    'eval --control random draws the same control from the genai conversion, with no explicit 4-bit conversion in between',
    async () => {
      // A fresh cache: the 4-bit genai conversion eval reads says which folder extract draws from
      // (the fp16 conversion), so no explicit 4-bit conversion is written only to learn it.
      const cache = path.join(root, 'cache-eval');
      const items = path.join(root, 'items.jsonl');
      writeFileSync(items,
        JSON.stringify({ id: 'a', q: 'What is the capital of France?', o: ['Berlin', 'Paris'], a: 1 }) + '\n');
      const out = path.join(root, 'eval-ctl');
      const code = await evalCli(['--model', SMOLLM2_GGUF, '--data',
        `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out', out, '--scoring', 'cloze', '--bootstrap', '0',
        '--control', 'random', '--control-seed', '2', '--cache', cache, '--quiet']);
      expect(code).toBe(0);
      const em = JSON.parse(readFileSync(path.join(out, 'eval.json'), 'utf8'));
      // the same draw as extract's (the folder name holds the source graph's sha256, the seed and the version)
      expect(path.basename(em.model.control.layout.drawn)).toBe(ctlName);
      const options = readdirSync(cache)
        .filter((n) => !n.startsWith('control-') && !n.endsWith('.lock'))
        .map((e) => JSON.parse(readFileSync(path.join(cache, e, 'lobes-convert.json'), 'utf8')).options)
        .map((o: { layout: string; weights: string }) => `${o.layout} ${o.weights}`)
        .sort();
      expect(options).toEqual(['explicit fp16', 'genai q4']);
    },
    600_000,
  );
});
