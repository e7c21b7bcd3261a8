/**
 * `lobes lens` on the real SmolLM2-135M-Instruct GGUF (../shared) against Hugging Face
 * transformers' own lens on the same file (test/goldens/lens/make_lens_goldens.py:
 * output_hidden_states, model.model.norm and lm_head on each layer's last-token residual, the
 * last layer's taken before the final norm): per prompt and layer the top-5 token ids and
 * log-probabilities, the entropy, KL(final ‖ layer) and the letters' log-probabilities agree
 * within 1e-4 relative. The model is the default conversion of the GGUF (shared with the rest of
 * the suite through the conversion cache), extracted in fp32.
 *
 * Planted: the lens with the norm weight left out (all ones), with a wrong epsilon, and with the
 * layers shifted by one (each compared with the next layer's goldens) is each far outside the
 * tolerance, so the comparison can fail.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SMOL_GGUF, ROOT, haveShared } from '../convert/gguf-fixtures.js';
import { resolveModel } from '../../src/convert/cache.js';
import { runExtract } from '../../src/extract/run.js';
import { openRun } from '../../src/store/index.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { readLensHead, type LensHead } from '../../src/lens/head.js';
import { entropy, klDivergence, lensLogProbs, topK } from '../../src/lens/compute.js';
import { runLens } from '../../src/lens/run.js';
import type { RunReader } from '../../src/store/types.js';

const HAVE = haveShared(SMOL_GGUF);
if (!HAVE) console.log(`skipping the SmolLM2 lens test: ${SMOL_GGUF} is missing (../shared holds the real model)`);

interface GoldenLayer {
  top_ids: number[];
  top_logp: number[];
  entropy: number;
  kl: number;
  letter_logp: number[];
}
interface Goldens {
  top: number;
  letter_ids: number[];
  layers: number;
  items: { text: string; ids: number[]; layers: GoldenLayer[] }[];
}

const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-6);

/**
 * The worst relative difference of the lens computed through `head` from the goldens, over the
 * given layers (`shift`: compare layer l with the goldens of layer l + shift); top-5 ids that
 * differ count as 1.
 */
async function worst(run: RunReader, head: LensHead, g: Goldens, layers: number[],
  shift = 0): Promise<{ top: number; entropy: number; kl: number; letters: number; ids: number }>
{
  const w = { top: 0, entropy: 0, kl: 0, letters: 0, ids: 0 };
  const dim = head.hidden;
  const rows = new Map<number, Float32Array>();
  for (const l of [...layers, g.layers - 1]) rows.set(l, await run.read(`layers.${l}.resid_out`));
  g.items.forEach((item, i) => {
    const fin = lensLogProbs(rows.get(g.layers - 1)!.subarray(i * dim, (i + 1) * dim), head);
    for (const l of layers) {
      const want = item.layers[l + shift];
      if (!want) continue;
      const lp = lensLogProbs(rows.get(l)!.subarray(i * dim, (i + 1) * dim), head);
      const top = topK(lp, g.top);
      if (top.some((t, j) => t.id !== want.top_ids[j])) w.ids = 1;
      top.forEach((t, j) => (w.top = Math.max(w.top, rel(t.logp, want.top_logp[j]!))));
      w.entropy = Math.max(w.entropy, rel(entropy(lp), want.entropy));
      // the final layer's KL is 0 on both sides
      w.kl = Math.max(w.kl, want.kl > 1e-9 ? rel(klDivergence(fin, lp), want.kl) : Math.abs(klDivergence(fin, lp)));
      g.letter_ids.forEach((id, j) => (w.letters = Math.max(w.letters, rel(lp[id]!, want.letter_logp[j]!))));
    }
  });
  return w;
}

describe.skipIf(!HAVE)('the logit lens on SmolLM2-135M-Instruct against Hugging Face transformers', () => {
  let g: Goldens;
  let tmp: string;
  let modelDir: string;
  let runDir: string;
  let run: RunReader;
  let head: LensHead;
  beforeAll(async () => {
    g = JSON.parse(readFileSync(path.join(ROOT, 'test', 'goldens', 'lens', 'lens-goldens.json'), 'utf8'));
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-lens-smollm2-'));
    modelDir = (await resolveModel(SMOL_GGUF, { log: () => {} })).dir;
    const data = path.join(tmp, 'prompts.jsonl');
    writeFileSync(data,
      g.items.map((it, i) =>
        JSON.stringify({ id: `p${i}`, text: it.text, kind: it.text.startsWith('Question') ? 'mcq' : 'text' })
      ).join('\n') + '\n');
    runDir = path.join(tmp, 'run');
    await runExtract({ model: modelDir, data: `jsonl:${data}?text=text&label=kind&id=id`, out: runDir,
      capture: ['final', 'resid'], dtype: 'fp32', batch: 4, quiet: true });
    run = await openRun(runDir);
    head = readLensHead(modelDir);
  }, 600_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('reads the prompts as Hugging Face does (the same token ids)', async () => {
    const tok = await loadTokenizer(modelDir, { maxTokens: null, chatTemplate: false });
    expect(g.items.map((it) => tok.encode(it.text).ids)).toEqual(g.items.map((it) => it.ids));
    expect(run.samples.map((s) => s.tokens)).toEqual(g.items.map((it) => it.ids.length));
  });

  it('finds the final norm and the tied unembedding', () => {
    expect(head.hidden).toBe(576);
    expect(head.vocab).toBe(49152);
    expect(head.eps).toBeCloseTo(1e-5, 12);
    expect(head.found.tied).toBe(true);
  });

  it('every layer: top-5 ids and log-probabilities, entropy, KL to the final layer and the letters within 1e-4',
    async () => {
      const all = Array.from({ length: g.layers }, (_, l) => l);
      const w = await worst(run, head, g, all);
      expect(w.ids, 'top-5 ids').toBe(0);
      expect(w.top).toBeLessThan(1e-4);
      expect(w.entropy).toBeLessThan(1e-4);
      expect(w.kl).toBeLessThan(1e-4);
      expect(w.letters).toBeLessThan(1e-4);
    }, 300_000);

  it('lobes lens writes the same numbers (the job, not just the arithmetic)', async () => {
    const { result } = await runLens(run, { noWrite: true, quiet: true, head });
    expect(result.layers.map((p) => p.point)).toEqual(
      Array.from({ length: g.layers }, (_, l) => `layers.${l}.resid_out`),
    );
    const w = { top: 0, entropy: 0, kl: 0 };
    result.items.forEach((it, i) => it.layers.forEach((l, j) => {
      const want = g.items[i]!.layers[j]!;
      expect(l.top.map((t) => t.id)).toEqual(want.top_ids);
      l.top.forEach((t, k) => (w.top = Math.max(w.top, rel(Math.log(t.p), want.top_logp[k]!))));
      w.entropy = Math.max(w.entropy, rel(l.entropy, want.entropy));
      w.kl = Math.max(w.kl, want.kl > 1e-9 ? rel(l.kl, want.kl) : Math.abs(l.kl));
    }));
    expect(w.top).toBeLessThan(1e-4);
    expect(w.entropy).toBeLessThan(1e-4);
    expect(w.kl).toBeLessThan(1e-4);
    expect(result.summary.at(-1)!.kl).toBe(0);
  }, 300_000);

  it(
    'a missing norm weight, a wrong epsilon and layers off by one are each far outside the tolerance (the comparison can fail)',
    async () => {
      const some = [0, 1, 14, 28];
      const noWeight = await worst(run, { ...head, normWeight: new Float32Array(head.hidden).fill(1) }, g, some);
      expect(Math.max(noWeight.top, noWeight.entropy, noWeight.kl, noWeight.ids)).toBeGreaterThan(1e-2);
      const wrongEps = await worst(run, { ...head, eps: 1e-2 }, g, some);
      expect(Math.max(wrongEps.top, wrongEps.entropy, wrongEps.kl, wrongEps.ids)).toBeGreaterThan(1e-3);
      const shifted = await worst(run, head, g, some, 1);
      expect(Math.max(shifted.top, shifted.entropy, shifted.kl, shifted.ids)).toBeGreaterThan(1e-2);
    },
    300_000,
  );
});
