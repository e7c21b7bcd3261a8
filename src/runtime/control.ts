/**
 * The random-weights control of a model (`lobes extract --control random`): a copy of the model
 * folder, same graph, same tokenizer, whose learned weights are drawn again from a seed. What the
 * trained model shows beyond its control is what training put into the weights; what the control
 * shows too comes from the architecture and the tokens alone.
 *
 * Which weights (found by graph structure, never by name):
 *  - projections: the stored weight of every MatMul / Gemm that reads or writes the hidden size
 *    or reads the intermediate size (attention, MLP, lm_head);
 *  - the input embedding: the 2-D table a Gather reads with the token ids;
 *  - normalization scales, set to 1 (and LayerNorm biases to 0): the scale input of
 *    (Skip)SimplifiedLayerNormalization, (Skip)LayerNormalization and RMSNormalization, and a
 *    hidden-sized 1-D constant multiplying a computed value (an RMSNorm written out as ops).
 * Everything else (rotary tables, inv_freq, masks, shapes, constants) is kept as it is.
 *
 * How: each redrawn tensor gets independent N(0, σ²) values, σ the standard deviation of that
 * tensor's trained values, from its own generator (one seeded stream forked per tensor in graph
 * order), stored in the tensor's own dtype. Keeping each tensor's scale keeps the activations at
 * the trained model's magnitudes through the same norms (so the comparison is not about scale);
 * setting the norm gains to 1 removes the learned per-dimension gains (outlier dimensions), which
 * are structure too. The graph records the control in its metadata (lobes.control), so its sha256
 * differs from the trained model's, and the run's manifest records it as model.control.
 *
 * The control folder is built once per (model graph, seed) in the control cache (`cacheDir`:
 * `lobes extract --cache DIR` passes DIR; else $LOBES_MODEL_CACHE, else $LOBES_CACHE/controls,
 * else $XDG_CACHE_HOME/lobes/controls or ~/.cache/lobes/controls: never the system temp folder,
 * which is often small, as a control is as large as its model) and reused; it is written into a
 * private temporary folder and renamed into place under a lock (src/util/lock.ts), so a crash
 * leaves nothing half-written and shards starting together build it once.
 *
 * 4-bit MatMulNBits weights are not redrawn here: a GGUF's control is drawn from an fp16
 * conversion of it, made automatically (src/cli/extract.ts, `controlSourceFolder`).
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmSync,
  statSync, writeFileSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { LobesError, UsageError, opt } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { Progress } from '../util/progress.js';
import { floatArrayToHalf, floatToBf16 } from '../util/half.js';
import { bytesOf, makeDirs } from '../util/io.js';
import { DataLocation, DataType, GraphIndex, PASSTHROUGH, getAttr, isExternal, loadModel, readInitializerFloat32,
  writeModel, type LoadedModel, type NodeProto, type TensorProto } from '../onnx/index.js';
import { sha256File } from '../store/chunks.js';
import type { ControlInfo } from '../store/types.js';
import { acquireLock } from '../util/lock.js';
import { folderProblem, hashFolder, rememberFolder, type FolderHashes,
  type RecordedFile } from '../convert/folder-hash.js';
import { readJsonFile } from '../store/json.js';
import { jobIO, type JobIO, type JobIOOptions } from '../util/jobio.js';

/** Bumped when the way controls are drawn changes (a new version never reuses an old folder). */
export const CONTROL_VERSION = 1;

export const CONTROL_SCHEME =
  "each projection and the embedding drawn from N(0, σ²) with σ the trained tensor's standard deviation; normalization scales set to 1";

/** Its IO (`io`: log lines and progress) and the deprecated `quiet` (src/util/jobio.ts). */
export interface ControlOptions extends JobIOOptions {
  /** Seed of the draws (default 0). */
  seed?: number;
  /** Folder under which control models are cached (default: `defaultControlDir`). */
  cacheDir?: string;
}

/** What was redrawn. */
export interface ControlPlan {
  /** Initializer name -> role. */
  redraw: Map<string, 'projection' | 'embedding'>;
  /** Initializer name -> value it is filled with (1 for norm scales, 0 for norm biases). */
  fill: Map<string, number>;
}

const NORM_SCALE_INPUT: Record<string, number[]> = {
  SimplifiedLayerNormalization: [1],
  SkipSimplifiedLayerNormalization: [2],
  LayerNormalization: [1],
  SkipLayerNormalization: [2],
  RMSNormalization: [1],
};
const NORM_BIAS_INPUT: Record<string, number[]> = { LayerNormalization: [2], SkipLayerNormalization: [3, 4] };
const FLOAT_TYPES = new Set<number>([DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE]);

/** The stored initializer behind value `v` (looking through casts, identities and transposes), if any. */
export function storedWeight(g: GraphIndex, init: Map<string, TensorProto>, v: string | undefined): string | null {
  for (let k = 0; k < 4 && v; k++) {
    if (init.has(v)) return v;
    const p = g.prod(v);
    if (!p || p.domain || !(PASSTHROUGH.has(p.opType) || p.opType === 'Transpose')) return null;
    v = p.input[0];
  }
  return v && init.has(v) ? v : null;
}

/** Which initializers of a model the control redraws or fills, by structure. */
export function controlPlan(m: LoadedModel, hidden: number, intermediate: number): ControlPlan {
  const graph = m.model.graph!;
  const g = new GraphIndex(graph);
  const init = m.initializers;
  const redraw = new Map<string, 'projection' | 'embedding'>();
  const fill = new Map<string, number>();
  const intInputs = new Set(
    graph.input.filter((v) =>
      v.type?.tensorType?.elemType === DataType.INT64 || v.type?.tensorType?.elemType === DataType.INT32
    ).map((v) => v.name),
  );
  const isFloat = (n: string) => FLOAT_TYPES.has(init.get(n)?.dataType ?? -1);
  for (const node of graph.node) {
    const dom = node.domain ?? '';
    if (dom === 'com.microsoft' && node.opType === 'MatMulNBits') {
      throw new UsageError(
        `${opt('control', 'random')}: the model stores ${
          node.name ?? 'a projection'
        } as 4-bit MatMulNBits, which the control does not redraw`,
        `give the GGUF itself as ${
          opt('model')
        } (its control is drawn from an fp16 conversion made automatically), or a float (fp16/fp32) export of the model`,
      );
    }
    if ((node.opType === 'MatMul' || node.opType === 'Gemm') && !dom)
      projection(g, init, node, hidden, intermediate, redraw, isFloat);
    if (node.opType === 'Gather' && !dom && isIdsInput(g, intInputs, node.input[1])) {
      const w = storedWeight(g, init, node.input[0]);
      if (w && isFloat(w) && init.get(w)!.dims.length === 2 && !redraw.has(w)) redraw.set(w, 'embedding');
    }
    for (const i of NORM_SCALE_INPUT[node.opType] ?? []) {
      const w = storedWeight(g, init, node.input[i]);
      if (w && isFloat(w)) fill.set(w, 1);
    }
    for (const i of NORM_BIAS_INPUT[node.opType] ?? []) {
      const w = storedWeight(g, init, node.input[i]);
      if (w && isFloat(w)) fill.set(w, 0);
    }
    if (node.opType === 'Mul' && !dom) {
      // an RMSNorm written out as ops ends in Mul(normalized, weight[hidden])
      const ins = node.input.map((v) => (init.has(v) ? v : null));
      const w = ins[0] ?? ins[1];
      const other = ins[0] ? node.input[1] : node.input[0];
      if (w && !init.has(other!) && isFloat(w) && init.get(w)!.dims.length === 1 &&
        Number(init.get(w)!.dims[0]) === hidden) fill.set(w, 1);
    }
  }
  for (const w of fill.keys()) redraw.delete(w);
  return { redraw, fill };
}

/** Whether `v` carries token ids: an integer graph input, maybe through casts. */
function isIdsInput(g: GraphIndex, ints: Set<string | undefined>, v: string | undefined): boolean {
  for (let k = 0; k < 3 && v; k++) {
    if (ints.has(v)) return true;
    const p = g.prod(v);
    v = p && p.opType === 'Cast' ? p.input[0] : undefined;
  }
  return false;
}

function projection(g: GraphIndex, init: Map<string, TensorProto>, node: NodeProto, hidden: number,
  intermediate: number, redraw: ControlPlan['redraw'], isFloat: (n: string) => boolean): void
{
  const w = storedWeight(g, init, node.input[1]);
  if (!w || !isFloat(w)) return;
  const t = init.get(w)!;
  if (t.dims.length !== 2) return;
  let [r, c] = t.dims.map(Number) as [number, number];
  // which dim is the input: MatMul [d_in, d_out]; Gemm transB or a Transpose swaps them
  let transposed = node.opType === 'Gemm' && Number(getAttr(node, 'transB')?.i ?? 0) === 1;
  for (let v = node.input[1]; v && v !== w; v = g.prod(v)!.input[0])
    if (g.prod(v)!.opType === 'Transpose') transposed = !transposed;
  if (transposed) [r, c] = [c, r];
  const dIn = r;
  const dOut = c;
  if (dIn === hidden || dIn === intermediate || dOut === hidden) redraw.set(w, 'projection');
}

/** Standard deviation of a tensor's values (two passes, float64). */
export function tensorStd(v: Float32Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i];
  const mean = s / Math.max(v.length, 1);
  let q = 0;
  for (let i = 0; i < v.length; i++) q += (v[i] - mean) ** 2;
  return Math.sqrt(q / Math.max(v.length, 1));
}

/** Values in a tensor's dtype, as bytes. */
function encodeAs(dataType: number, v: Float32Array): Uint8Array {
  if (dataType === DataType.FLOAT) return bytesOf(v);
  if (dataType === DataType.FLOAT16) return bytesOf(floatArrayToHalf(v));
  if (dataType === DataType.BFLOAT16) return bytesOf(Uint16Array.from(v, floatToBf16));
  return bytesOf(Float64Array.from(v));
}

/** Default folder of control models (see the module comment). */
export function defaultControlDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LOBES_MODEL_CACHE) return env.LOBES_MODEL_CACHE;
  if (env.LOBES_CACHE) return path.join(env.LOBES_CACHE, 'controls');
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'lobes', 'controls');
}

/**
 * The random-weights control of `modelDir` for `seed`: built (once) in the cache and returned
 * with what the manifest records.
 */
export async function randomControlModel(modelDir: string, arch: { hidden: number; intermediate: number },
  opts: ControlOptions = {}): Promise<{ dir: string; info: ControlInfo }>
{
  const io = jobIO(opts);
  const seed = opts.seed ?? 0;
  if (!Number.isInteger(seed) || seed < 0)
    throw new UsageError(`${opt('control.seed')} must be a non-negative integer, got ${seed}`);
  const m = loadModel(modelDir);
  const sourceGraphSha256 = sha256File(m.file).sha256;
  const info: ControlInfo = { kind: 'random', seed, source: path.resolve(modelDir), sourceGraphSha256,
    scheme: CONTROL_SCHEME, version: CONTROL_VERSION };
  const root = opts.cacheDir ?? defaultControlDir();
  const dir = path.join(root, `control-random-${sourceGraphSha256.slice(0, 16)}-seed${seed}-v${CONTROL_VERSION}`);
  await cachedControlFolder(dir, `drawing the random-weights control of ${path.resolve(modelDir)}`, io, () => {
    const plan = controlPlan(m, arch.hidden, arch.intermediate);
    if (plan.redraw.size === 0)
      throw new LobesError('found no projection or embedding weights to redraw', { file: m.file,
        hint: 'is this a Llama-class model with float weights?' });
    return plan;
  }, (tmp, plan) => writeControl(m, plan, seed, tmp, info, io));
  return { dir, info };
}

/**
 * A control folder `dir` in the control cache, used as it is when its record says its files are
 * as written (controlProblem), else built: `check` runs first (its refusals leave nothing
 * behind), then, under a lock (shards starting together build it once), `write` fills a private
 * temporary folder, returning the files' hashes, and the folder is renamed into place.
 */
export async function cachedControlFolder<T>(dir: string, purpose: string, io: JobIO, check: () => T,
  write: (tmp: string, checked: T) => FolderHashes | Promise<FolderHashes>): Promise<void>
{
  const root = path.dirname(dir);
  const done = () => controlProblem(dir) === null;
  const problem = controlProblem(dir);
  if (problem === null) return;
  if (problem !== 'absent') io.log(`control ${dir} is not used: ${problem}; drawing it again`);
  const checked = check();
  makeDirs(root, { what: 'control cache folder', hint: `pass ${opt('cache', 'DIR')}, or set LOBES_CACHE` });
  const lock = await acquireLock(`${dir}.lock`, {
    purpose,
    onWait: (h) => {
      io.log(`waiting for another lobes process (pid ${h.pid} on ${h.host}) writing the control into ${dir}`);
    },
    until: done,
  });
  if (!lock) return;
  try {
    if (done()) return;
    const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
    mkdirSync(tmp, { recursive: true });
    try {
      const hashed = await write(tmp, checked);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      rememberFolder(dir, hashed);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
  } finally {
    lock.release();
  }
}

/** The record of a control folder: what it is, what was redrawn, and every file's size and sha256. */
export const CONTROL_RECORD = 'lobes-control.json';

/**
 * The control a model folder is (kind, seed and version from its lobes-control.json), or null
 * for a folder that is not a control lobes wrote: what a command given the folder itself records
 * of it, to compare with a run's or an evaluation's model.control (src/store/provenance.ts).
 */
export function controlOfFolder(dir: string): { kind: 'random'; seed: number; version: number } | null {
  const rec = readJsonFile(path.join(dir, CONTROL_RECORD), { fallback: null });
  if (rec?.kind !== 'random' || !Number.isInteger(rec.seed)) return null;
  return { kind: 'random', seed: rec.seed, version: Number.isInteger(rec.version) ? rec.version : 1 };
}

/**
 * Why the control folder `dir` cannot be used, or null when it can: its record must be there
 * with the size and sha256 of every file as written, and the files must still have them
 * (src/convert/folder-hash.ts; 'absent' when there is no folder).
 */
export function controlProblem(dir: string): string | null {
  // undefined: no file, or not JSON (a file holding null is read as null)
  const rec = readJsonFile(path.join(dir, CONTROL_RECORD), { fallback: undefined });
  if (rec === undefined) return existsSync(dir) ? `no readable ${CONTROL_RECORD}` : 'absent';
  if (!rec?.files || typeof rec.files !== 'object') return `${CONTROL_RECORD} records no file hashes (an older lobes)`;
  try {
    return folderProblem(dir, rec.files as Record<string, RecordedFile>, CONTROL_RECORD, 'control model file');
  } catch (e: any) {
    return `its files cannot be read (${e instanceof LobesError ? e.message : (e?.code ?? e?.message)})`;
  }
}

/** Write the control folder: the other files copied, the graph with the new weights (external data for external tensors); returns the files' hashes, recorded in lobes-control.json. */
function writeControl(m: LoadedModel, plan: ControlPlan, seed: number, out: string, info: ControlInfo,
  io: JobIO): FolderHashes
{
  const graphName = path.basename(m.file);
  const externalFiles = new Set([...m.external.values()].map((r) => r.path));
  for (const f of readdirSync(m.dir)) {
    const src = path.join(m.dir, f);
    if (f === graphName || externalFiles.has(src) || !statSync(src).isFile()) continue;
    copyFileSync(src, path.join(out, f));
  }
  const dataName = `${graphName}.data`;
  const fd = openSync(path.join(out, dataName), 'w');
  let offset = 0;
  const rng = new Rng(seed);
  const total = m.model.graph!.initializer.length;
  const prog = new Progress({ label: 'control weights', total, unit: 'tensors', io });
  const redrawn: Record<string, { role: string; std: number }> = {};
  try {
    for (const t of m.model.graph!.initializer) {
      const name = t.name ?? '';
      const role = plan.redraw.get(name);
      const fillV = plan.fill.get(name);
      const tensorRng = role ? rng.fork() : null;
      let bytes: Uint8Array | null = null;
      if (role || fillV !== undefined) {
        const trained = readInitializerFloat32(m, name);
        const v = new Float32Array(trained.length);
        if (role) {
          const std = tensorStd(trained);
          for (let i = 0; i < v.length; i++) v[i] = tensorRng!.normal() * std;
          redrawn[name] = { role, std };
        } else v.fill(fillV!);
        bytes = encodeAs(t.dataType!, v);
      } else if (isExternal(t)) {
        const ref = m.external.get(name)!;
        bytes = new Uint8Array(ref.length);
        const src = openSync(ref.path, 'r');
        try {
          let got = 0;
          while (got < ref.length) {
            const n = readSync(src, bytes, got, ref.length - got, ref.offset + got);
            if (n <= 0) throw new LobesError('external data ended early', { file: ref.path, where: name });
            got += n;
          }
        } finally {
          closeSync(src);
        }
      }
      if (bytes) setData(t, bytes, isExternal(t), fd, dataName, offset, (n) => (offset += n));
      prog.tick(1);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  prog.finish();
  if (offset === 0) rmSync(path.join(out, dataName));
  m.model.metadataProps = [...m.model.metadataProps.filter((p) => p.key !== 'lobes.control'), { key: 'lobes.control',
    value: JSON.stringify({ ...info, version: CONTROL_VERSION }) }];
  writeModel(path.join(out, graphName), m.model);
  const hashed = hashFolder(out, CONTROL_RECORD, 'control model file');
  writeFileSync(path.join(out, CONTROL_RECORD),
    JSON.stringify({ ...info, version: CONTROL_VERSION, redrawn, filled: Object.fromEntries(plan.fill),
      files: hashed.files }, null, 1) + '\n');
  return hashed;
}

/** Store `bytes` as the tensor's data: appended to the control's data file when it was external, inline otherwise. */
function setData(t: TensorProto, bytes: Uint8Array, external: boolean, fd: number, dataName: string, offset: number,
  advance: (n: number) => void): void
{
  delete t.floatData;
  delete t.doubleData;
  delete t.int32Data;
  delete t.int64Data;
  delete t.uint64Data;
  if (!external) {
    t.rawData = bytes;
    return;
  }
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, offset + done);
  advance(bytes.length);
  delete t.rawData;
  t.dataLocation = DataLocation.EXTERNAL;
  t.externalData = [
    { key: 'location', value: dataName },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(bytes.length) },
  ];
}
