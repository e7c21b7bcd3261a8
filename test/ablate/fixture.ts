/**
 * A run folder for ablation tests: a synthetic run (src/report/synthetic.ts) whose manifest names
 * a real model folder (its graph's sha256) and whose wanda results hold given regions over the
 * model's MLP matrices, with the provenance a real wanda pass records.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { runIdentity } from '../../src/store/provenance.js';
import { modelIdentity } from '../../src/runtime/modelfiles.js';
import type { BlockSet, WandaMatrix } from '../../src/wanda/types.js';
import { storedMatrices } from '../../src/ablate/patch.js';
import type { EvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import type { LoglikEngine, LoglikRequest } from '../../src/runtime/loglik.js';

export const TINY_DIMS: Record<string, [number, number]> = { gate_proj: [256, 64], up_proj: [256, 64],
  down_proj: [64, 256] };

/** The MLP matrices of the generated tiny-llama (2 layers) for a block size. */
export function tinyMatrices(block: [number, number], layers = 2): WandaMatrix[] {
  const out: WandaMatrix[] = [];
  for (let l = 0; l < layers; l++) {
    for (const proj of ['gate_proj', 'up_proj', 'down_proj']) {
      const [dOut, dIn] = TINY_DIMS[proj]!;
      out.push({ name: `layers.${l}.mlp.${proj}`, layer: l, proj,
        input: proj === 'down_proj' ? `layers.${l}.mlp.down_in` : `layers.${l}.mlp.in`, dOut, dIn,
        rowBlocks: Math.ceil(dOut / block[0]), colBlocks: Math.ceil(dIn / block[1]) });
    }
  }
  return out;
}

/** `files`: record every model file by content in the manifest, as lobes extract does (default: the graph alone, as older runs did). */
export function writeAblateRun(dir: string, modelDir: string, regions: Record<string, BlockSet>,
  block: [number, number], by = 'group', files = false): string
{
  const groups = Object.keys(regions);
  writeSyntheticRun(dir, { groups, layers: 2, samplesPerGroup: 2, wanda: true, cluster: false, pooled: false });
  const mf = path.join(dir, 'manifest.json');
  const m = JSON.parse(readFileSync(mf, 'utf8'));
  m.model = { ...m.model, dir: modelDir,
    graphSha256: createHash('sha256').update(readFileSync(path.join(modelDir, 'model.onnx'))).digest('hex') };
  if (files) m.model.files = modelIdentity(modelDir).files;
  else delete m.model.files;
  delete m.identity;
  m.identity = runIdentity(m);
  writeFileSync(mf, JSON.stringify(m, null, 1) + '\n');
  const sf = path.join(dir, 'wanda', 'settings.json');
  const s = JSON.parse(readFileSync(sf, 'utf8'));
  Object.assign(s, { by, groups, block, provenance: { ...s.provenance, run: m.identity } });
  writeFileSync(sf, JSON.stringify(s, null, 1) + '\n');
  writeFileSync(path.join(dir, 'wanda', 'regions.json'),
    JSON.stringify({ matrices: tinyMatrices(block), regions, differences: [] }) + '\n');
  return dir;
}

export interface GoldenItem {
  id: string;
  group: string;
  context: string;
  continuation: string;
  contextIds: number[];
  continuationIds: number[];
}
export const GOLD = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/ablate/tiny-llama.json'), 'utf8')) as {
  block: [number, number];
  regions: Record<string, BlockSet>;
  items: GoldenItem[];
  blocks: Record<string, { tensor: string; rows: [number, number]; cols: [number, number] }[]>;
  before: number[];
  after: Record<string, number[]>;
};

/** The golden items as a jsonl file and the spec lobes ablate reads it with. */
export function writeGoldenItems(dir: string): string {
  const f = path.join(dir, 'items.jsonl');
  writeFileSync(f,
    GOLD.items.map((it) =>
      JSON.stringify({ id: it.id, group: it.group, context: it.context, continuation: it.continuation })
    ).join('\n') + '\n');
  return `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`;
}

/** A tokenizer of one token per character (its code), no chat template, prefix token 1: for stand-in scorers that read the text back. */
export const CHAR_TOKENIZER: EvalTokenizer = {
  source: 'chars',
  chat: null,
  encode: (t) => [...t].map((c) => c.charCodeAt(0)),
  encodePiece: (t) => [...t].map((c) => c.charCodeAt(0)),
  decode: (ids) => String.fromCharCode(...ids),
  eos: new Set(),
  padId: 0,
  prefixId: 1,
  answerSlot: () => {
    throw new Error('unused');
  },
  pieceSlot: () => {
    throw new Error('unused');
  },
};

/**
 * A stand-in log-likelihood engine for planted models: `scoreRequest` gives each continuation's
 * log-likelihood (one token each); `onDone` is told as the continuations are done.
 */
export function fakeLoglikEngine(scoreRequest: (r: LoglikRequest) => number[]): LoglikEngine {
  const stats = { scoredTokens: 0, computedTokens: 0, runs: 0, tensors: 0, liveTensors: 0 };
  const score = (ll: number) => ({ logprob: ll, tokens: 1, greedy: false, tokenLogprobs: new Float32Array([ll]),
    tokenGreedy: new Uint8Array(1) });
  return {
    info: {} as any,
    usesCache: false,
    stats,
    async score(reqs: readonly LoglikRequest[], onDone) {
      const out = reqs.map((r) => scoreRequest(r).map(score));
      const requests = reqs.flatMap((r, i) => r.continuations.map(() => i));
      onDone?.(requests.length, { requests, tokens: requests.length });
      return out;
    },
    async close() {},
  };
}

/** A deterministic number in [0, 1) for (item, key): the planted scorers' per-item and per-block noise. */
export function unitHash(i: number, key: string): number {
  let h = 2166136261 ^ i;
  for (const ch of key) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return ((h >>> 0) % 10007) / 10007;
}

/**
 * The blocks zeroed in an ablation folder's weight files, as "MATRIX#b" (b counted row-major over
 * the block grid), read from the float32 MatMul [d_in, d_out] initializers: a block is zeroed
 * when its first weight W[r, c] (element c · d_out + r) is 0.
 */
export function zeroedBlocks(dir: string, matrices: WandaMatrix[], block: [number, number]): string[] {
  const zeroed: string[] = [];
  for (const [k, sm] of storedMatrices(dir, matrices).entries()) {
    const m = matrices[k]!;
    const s = sm.ref.source as { data: { file: string; offset: number; byteLength: number } };
    const buf = readFileSync(s.data.file);
    const f = new Float32Array(
      buf.buffer.slice(buf.byteOffset + s.data.offset, buf.byteOffset + s.data.offset + s.data.byteLength),
    );
    for (let b = 0; b < m.rowBlocks * m.colBlocks; b++) {
      const r = Math.floor(b / m.colBlocks) * block[0];
      const c = (b % m.colBlocks) * block[1];
      if (f[c * m.dOut + r] === 0) zeroed.push(`${m.name}#${b}`);
    }
  }
  return zeroed;
}
