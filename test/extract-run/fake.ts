/**
 * Deterministic stand-ins for the dataset, tokenizer, batching and capture engine, so the
 * run-directory logic is tested without ONNX Runtime. The fake engine's numbers depend on
 * the padded batch shape (like real kernels do), so a run is only reproducible if batches
 * are planned the same way.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Dataset, Sample } from '../../src/data/types.js';
import type { CaptureEngine, CapturePoint, EngineOptions, LobesTokenizer, TokenBatch, TokenizerOptions,
  BatchPlanOptions } from '../../src/runtime/types.js';
import type { ExtractDeps } from '../../src/extract/run.js';
import { siteFamily } from '../../src/hooks.js';

export const ASPECTS = ['Cooperation', 'Innovation', 'Self-Management'];

export function fakeDataset(n: number, variant = 0): Dataset {
  const samples: Sample[] = [];
  for (let i = 0; i < n; i++) {
    const words = 3 + ((i * 7 + variant) % 11);
    const text = Array.from({ length: words }, (_, w) => `w${(i * 31 + w * 17 + variant) % 97}`).join(' ');
    samples.push({ id: `item-${String(i).padStart(4, '0')}`, text,
      labels: { aspect: ASPECTS[i % 3], language: i % 4 === 0 ? 'zh' : 'en' } });
  }
  return { spec: `fake:${n}${variant ? `?v=${variant}` : ''}`, samples, excluded: [], axes: ['aspect', 'language'] };
}

export function fakeTokenizer(opts: TokenizerOptions): LobesTokenizer {
  return {
    source: 'fake-tokenizer',
    addBos: true,
    chatTemplate: opts.chatTemplate,
    padId: 0,
    paddingSide: 'left',
    encode(text: string) {
      const ids = [1, ...text.split(' ').map((w) => 2 + (Number(w.slice(1)) % 500))];
      const fullLength = ids.length;
      if (opts.maxTokens !== null && ids.length > opts.maxTokens)
        return { ids: ids.slice(ids.length - opts.maxTokens), fullLength, truncated: true };
      return { ids, fullLength, truncated: false };
    },
  };
}

/** Longest first, then fill batches up to `batch` rows and `tokenBudget` padded tokens. */
export function fakePlanBatches(lengths: ArrayLike<number>, opts: BatchPlanOptions): number[][] {
  const order = Array.from({ length: lengths.length }, (_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const out: number[][] = [];
  let cur: number[] = [];
  for (const i of order) {
    const longest = cur.length ? lengths[cur[0]] : lengths[i];
    const tooMany = opts.batch !== undefined && cur.length >= opts.batch;
    const tooBig = opts.tokenBudget !== undefined && (cur.length + 1) * longest > opts.tokenBudget;
    if (cur.length && (tooMany || tooBig)) {
      out.push(cur);
      cur = [];
    }
    cur.push(i);
  }
  if (cur.length) out.push(cur);
  return out;
}

export function fakePadBatch(seqs: number[][], padId: number, side: 'left' | 'right'): TokenBatch {
  const batch = seqs.length;
  const seq = Math.max(...seqs.map((s) => s.length));
  const inputIds = new BigInt64Array(batch * seq).fill(BigInt(padId));
  const attentionMask = new BigInt64Array(batch * seq);
  const lastIndex = new Int32Array(batch);
  seqs.forEach((s, r) => {
    const off = side === 'left' ? seq - s.length : 0;
    for (let t = 0; t < s.length; t++) {
      inputIds[r * seq + off + t] = BigInt(s[t]);
      attentionMask[r * seq + off + t] = 1n;
    }
    lastIndex[r] = off + s.length - 1;
  });
  return { inputIds, attentionMask, batch, seq, lastIndex };
}

export const FAKE_HOOKS: CapturePoint[] = [
  { layer: null, site: 'final.hidden', name: 'final.hidden', dim: 16, value: 'fake/final' },
  { layer: 0, site: 'mlp.in', name: 'layers.0.mlp.in', dim: 8, value: 'fake/mlp.in' },
  { layer: 0, site: 'mlp.down_in', name: 'layers.0.mlp.down_in', dim: 24, value: 'fake/down_in' },
];

/** The value the fake engine gives row r of a batch for feature j of a hook. */
export function fakeValue(tokens: number[], hookIdx: number, j: number,
  batchShape: { batch: number; seq: number }): number
{
  let s = 0;
  for (let t = 0; t < tokens.length; t++) s += Math.sin(tokens[t] * 0.37 + (j + 1) * (t + 1) * 0.11 + hookIdx);
  // Padding- and batch-shape-dependent term, as real kernels have.
  return s / Math.sqrt(tokens.length) + 1e-3 * batchShape.seq + 1e-4 * batchShape.batch;
}

export function fakeEngine(opts: EngineOptions, delayMs = 0): CaptureEngine {
  const hooks = FAKE_HOOKS.filter((h) => opts.capture.includes(siteFamily(h.site)));
  return {
    info: {
      dir: 'fake',
      arch: { family: 'llama', layers: 1, hidden: 16, intermediate: 24, heads: 2, kvHeads: 2, vocab: 512,
        dtype: 'float32', quantization: null },
      points: FAKE_HOOKS,
      providers: [{ name: 'cpu', available: true }],
      inputs: [],
    },
    hooks,
    async run(b: TokenBatch) {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      const out = new Map<string, Float32Array>();
      for (const h of hooks) {
        const hi = FAKE_HOOKS.indexOf(h);
        const v = new Float32Array(b.batch * h.dim);
        for (let r = 0; r < b.batch; r++) {
          const toks: number[] = [];
          for (let t = 0; t < b.seq; t++)
            if (b.attentionMask[r * b.seq + t] === 1n) toks.push(Number(b.inputIds[r * b.seq + t]));
          for (let j = 0; j < h.dim; j++) v[r * h.dim + j] = fakeValue(toks, hi, j, b);
        }
        out.set(h.name, v);
      }
      return out;
    },
    async close() {},
  };
}

export function fakeDeps(n: number, opts: { variant?: number; delayMs?: number } = {}): ExtractDeps {
  return {
    loadDataset: async () => fakeDataset(n, opts.variant ?? 0),
    loadTokenizer: async (_dir, o) => fakeTokenizer(o),
    openCaptureEngine: async (_dir, o) => fakeEngine(o, opts.delayMs ?? 0),
    planBatches: fakePlanBatches,
    padBatch: fakePadBatch,
    modelFiles: fakeModelFiles,
  };
}

/** The fake model folder's files: model.onnx (not a real graph, so not decoded) and a tokenizer.json when present. */
export function fakeModelFiles(model: string): { path: string; name: string; role: 'graph' | 'data' | 'tokenizer' }[] {
  const files: { path: string; name: string; role: 'graph' | 'data' | 'tokenizer' }[] = [{
    path: path.join(model, 'model.onnx'),
    name: 'model.onnx',
    role: 'graph',
  }];
  const tok = path.join(model, 'tokenizer.json');
  if (existsSync(tok)) files.push({ path: tok, name: 'tokenizer.json', role: 'tokenizer' });
  return files;
}

/** A model folder whose model.onnx is just bytes (the fake engine never reads it). */
export function fakeModelDir(root: string, content = 'fake graph v1'): string {
  const d = path.join(root, 'model');
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'model.onnx'), content);
  return d;
}
