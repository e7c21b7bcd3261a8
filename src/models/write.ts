/**
 * Writing generated models as Hugging Face style model folders, and the on-demand cache of
 * the larger generated models.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as os from 'node:os';
import * as path from 'node:path';
import { makeDirs, writeFileAtomicSync } from '../util/io.js';
import { Rng } from '../util/rng.js';
import { UsageError } from '../util/errors.js';
import { buildGraph, configJson, generateParams, type TinyLlamaOptions, type TinyLlamaParams } from './tinyllama.js';
import { encodeGGraph, type GGraph, type GInit } from '../convert/llama-onnx/graph.js';
import { tokenizerConfigJson, tokenizerJson } from './tokenizer.js';
import { writeJsonAtomic } from '../store/json.js';

/** Bumped whenever the generator's output changes; part of the cache key. */
export const GENERATOR_VERSION = 1;

export interface WriteOptions {
  /** Store the weights in `model.onnx_data` next to model.onnx (default: inline). */
  externalData?: boolean;
  /**
   * Replace every node name, intermediate value name and initializer name by an opaque one
   * and emit the nodes in a seeded random topological order (graph inputs/outputs keep
   * their names), as a check that nothing relies on exporter naming or node order.
   */
  opaqueNames?: { seed: number };
  /** Store weights and compute in float16 (inputs/outputs/past in float16, as fp16 exports do). */
  dtype?: 'float32' | 'float16';
}

/** Rename everything but the graph inputs/outputs, and shuffle the node order topologically. */
export function obfuscateGraph(g: GGraph, seed: number): GGraph {
  const rng = new Rng(seed);
  const keep = new Set([...g.inputs, ...g.outputs].map((v) => v.name));
  const rename = new Map<string, string>();
  const order = [...g.initializers.map((t) => t.name), ...g.nodes.flatMap((n) => n.outputs)];
  rng.shuffle(order);
  let k = 0;
  for (const name of order) if (!keep.has(name) && !rename.has(name)) rename.set(name, `t${k++}`);
  const r = (n: string) => rename.get(n) ?? n;
  // Random topological order: repeatedly pick a random node whose inputs are all available.
  const available = new Set<string>([...g.inputs.map((v) => v.name), ...g.initializers.map((t) => t.name), '']);
  const pending = g.nodes.slice();
  const ordered: GGraph['nodes'] = [];
  while (pending.length) {
    const ready = pending.filter((n) => n.inputs.every((i) => available.has(i)));
    if (!ready.length) throw new Error('graph is not acyclic');
    const pick = ready[rng.int(ready.length)]!;
    pending.splice(pending.indexOf(pick), 1);
    for (const o of pick.outputs) available.add(o);
    ordered.push(pick);
  }
  return {
    ...g,
    nodes: ordered.map((n, i) => ({ ...n, name: `n${i}`, inputs: n.inputs.map(r), outputs: n.outputs.map(r) })),
    initializers: rng.shuffle(g.initializers.map((t) => ({ ...t, name: r(t.name) }))),
  };
}

/** Encode a generated graph as ONNX bytes (parts) plus the external data parts, if any. */
export function encodeGraph(g: GGraph, opts: WriteOptions = {}): { model: Uint8Array[]; data: Uint8Array[] | null } {
  const dataParts: Uint8Array[] = [];
  let offset = 0;
  const initializers = g.initializers.map((t): GInit => {
    // Small tensors stay inline (as exporters do); large ones go to the data file.
    if (!opts.externalData || !t.data || t.data.byteLength < 1024) return t;
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    const pad = (64 - (offset % 64)) % 64;
    if (pad) {
      dataParts.push(new Uint8Array(pad));
      offset += pad;
    }
    dataParts.push(bytes);
    const ext: GInit = { name: t.name, dtype: t.dtype, dims: t.dims,
      external: { location: 'model.onnx_data', offset, length: bytes.byteLength } };
    offset += bytes.byteLength;
    return ext;
  });
  const model = encodeGGraph({ ...g, initializers }, { irVersion: 8, producerName: 'lobes-models',
    producerVersion: String(GENERATOR_VERSION) });
  return { model, data: opts.externalData ? dataParts : null };
}

const json = (o: object) => JSON.stringify(o, null, 2) + '\n';

/**
 * Write a model folder: model.onnx (+ model.onnx_data), config.json, generation_config.json,
 * tokenizer.json, tokenizer_config.json, and plant.json when groups were planted.
 */
export function writeModelFolder(dir: string, p: TinyLlamaParams, opts: WriteOptions = {}): void {
  makeDirs(dir);
  let graph = buildGraph(p, opts.dtype === 'float16' ? 'fp16' : 'fp32');
  if (opts.opaqueNames) graph = obfuscateGraph(graph, opts.opaqueNames.seed);
  const { model, data } = encodeGraph(graph, opts);
  if (data) writeFileAtomicSync(path.join(dir, 'model.onnx_data'), data);
  writeFileAtomicSync(path.join(dir, 'model.onnx'), model);
  writeFileAtomicSync(
    path.join(dir, 'config.json'),
    json({ ...configJson(p), torch_dtype: opts.dtype ?? 'float32' }),
  );
  writeFileAtomicSync(
    path.join(dir, 'generation_config.json'),
    json({ bos_token_id: p.tokenizer.bosId, eos_token_id: p.tokenizer.eosId, pad_token_id: p.tokenizer.padId }),
  );
  writeJsonAtomic(path.join(dir, 'tokenizer.json'), tokenizerJson(p.tokenizer));
  writeFileAtomicSync(path.join(dir, 'tokenizer_config.json'), json(tokenizerConfigJson(p.tokenizer)));
  if (p.planted.length > 0) {
    writeFileAtomicSync(path.join(dir, 'plant.json'), json({ blockSize: 256, seed: p.opts.seed, groups: p.planted }));
  }
}

export interface GeneratedModelSpec {
  model: TinyLlamaOptions;
  write?: WriteOptions;
}

/** The generated models lobes knows by name. */
export const GENERATED_MODELS: Record<string, GeneratedModelSpec> = {
  /** The built-in model committed under models/tiny-llama/. */
  'tiny-llama': { model: { layers: 2, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 20251 } },
  /** The same weights with KV-cache inputs and present.* outputs. */
  'tiny-llama-past': {
    model: { layers: 2, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 20251, withPast: true },
  },
  /** tiny-llama with opaque names and a shuffled (topological) node order. */
  'tiny-llama-opaque': {
    model: { layers: 2, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 20251 },
    write: { opaqueNames: { seed: 5 } },
  },
  /** tiny-llama stored and computed in float16, with KV-cache inputs (like fp16 exports). */
  'tiny-llama-fp16': {
    model: { layers: 2, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 20251, withPast: true },
    write: { dtype: 'float16' },
  },
  /** tiny-llama with 4-bit MatMulNBits layer projections (block size 32, with zero points). */
  'tiny-llama-q4': {
    model: { layers: 2, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 20251,
      quant: { bits: 4, blockSize: 32 } },
  },
  /** Several 256×256 blocks per matrix (gate/up pooled 4×2, down 2×4), two planted groups. */
  blocks: {
    model: {
      layers: 2,
      hidden: 512,
      intermediate: 1024,
      heads: 8,
      kvHeads: 2,
      vocab: 512,
      seed: 20252,
      plant: [
        { group: 'alpha', hiddenBlock: 0, interBlock: 1 },
        { group: 'beta', hiddenBlock: 1, interBlock: 3 },
      ],
    },
  },
  /** The blocks model with 4-bit MatMulNBits projections (block size 32, zero points). */
  'blocks-q4': {
    model: {
      layers: 2,
      hidden: 512,
      intermediate: 1024,
      heads: 8,
      kvHeads: 2,
      vocab: 512,
      seed: 20252,
      plant: [
        { group: 'alpha', hiddenBlock: 0, interBlock: 1 },
        { group: 'beta', hiddenBlock: 1, interBlock: 3 },
      ],
      quant: { bits: 4, blockSize: 32 },
    },
  },
  /** About 106M parameters, weights in external data (benchmarks). */
  bench: {
    model: { layers: 12, hidden: 768, intermediate: 3072, heads: 12, kvHeads: 4, vocab: 1024, seed: 20253 },
    write: { externalData: true },
  },
};

/** Cache folder of a generated model: $LOBES_MODEL_CACHE or os.tmpdir()/lobes-models. */
export function modelCacheDir(): string {
  return process.env.LOBES_MODEL_CACHE ?? path.join(os.tmpdir(), 'lobes-models');
}

/**
 * Hash of the generator's own source files, so a changed generator never reuses a stale cache.
 * The TypeScript sources are preferred (in a checkout, dist/ and tsx then share one cache
 * entry); an installed package hashes its compiled files.
 */
let sourceHash: string | null = null;
function generatorSourceHash(): string {
  if (sourceHash !== null) return sourceHash;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const srcDir = path.resolve(here, '..', '..', 'src', 'models');
  const names = ['tinyllama', 'tokenizer', 'corpus', 'write',
    ...['build', 'explicit', 'graph', 'sink', 'source', 'spec', 'weights', 'writer'].map((f) => `llama-onnx/${f}`)];
  const useTs = names.every((f) => existsSync(path.join(srcDir, f + '.ts')));
  const h = createHash('sha256');
  for (const f of names) {
    const file = useTs ? path.join(srcDir, f + '.ts') : path.join(here, f + '.js');
    h.update(existsSync(file) ? readFileSync(file) : f);
  }
  sourceHash = h.digest('hex');
  return sourceHash;
}

function specHash(spec: GeneratedModelSpec): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: GENERATOR_VERSION, spec, src: generatorSourceHash() }))
    .digest('hex')
    .slice(0, 12);
}

/**
 * The folder of a named generated model (see GENERATED_MODELS), generating it on first use
 * into the cache. Safe when several processes ask at once (each builds in a private temp
 * folder; the first rename wins).
 */
export function ensureGeneratedModel(name: string): string {
  const spec = GENERATED_MODELS[name];
  if (!spec)
    throw new UsageError(`unknown generated model "${name}"`, `known: ${Object.keys(GENERATED_MODELS).join(', ')}`);
  return ensureModelFromSpec(name, spec);
}

/** Like ensureGeneratedModel for any spec; `name` only prefixes the cache folder. */
export function ensureModelFromSpec(name: string, spec: GeneratedModelSpec): string {
  const root = modelCacheDir();
  const dir = path.join(root, `${name}-${specHash(spec)}`);
  if (existsSync(path.join(dir, 'model.onnx'))) return dir;
  makeDirs(root);
  const tmp = path.join(root, `.${name}-${process.pid}-${Date.now()}`);
  try {
    writeModelFolder(tmp, generateParams(spec.model), spec.write);
    try {
      renameSync(tmp, dir);
    } catch (e) {
      if (!existsSync(path.join(dir, 'model.onnx'))) throw e;
    }
  } finally {
    if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

/** Parameters of a named generated model (regenerated in memory; deterministic). */
export function generatedModelParams(name: string): TinyLlamaParams {
  const spec = GENERATED_MODELS[name];
  if (!spec)
    throw new UsageError(`unknown generated model "${name}"`, `known: ${Object.keys(GENERATED_MODELS).join(', ')}`);
  return generateParams(spec.model);
}
