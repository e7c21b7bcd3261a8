/**
 * The random-weights control of a GGUF in the genai layout (`lobes eval --control random`, whose
 * GGUF conversions have a KV cache): the control drawn in the explicit layout (exactly extract's,
 * src/runtime/control.ts) with the same values laid out again by the project's Llama writer
 * (src/convert/llama-onnx), so an evaluation of the control costs what the trained one does and
 * its weights are extract's control, value for value.
 *
 * Why not draw in the genai layout: the draw forks one generator per stored tensor in graph
 * order and scales it by that tensor's standard deviation, and the genai layout stores q, k and v
 * as one fused tensor (and a tied embedding transposed), so a draw there would be another control.
 * Laid out again, nothing is drawn: the explicit control's tensors are read back under their
 * Hugging Face names (its projections are MatMuls named after them, stored [d_in, d_out]; the
 * embedding and norms carry the names themselves) and handed to the writer as a weight source.
 * Float storage copies values exactly (fp16 stays fp16, bf16 stays bf16, fp32 stays fp32), so the control's
 * numbers change only by how the two graphs compute.
 *
 * The folder is cached next to the explicit control (`<its name>-genai-…`), built once under a
 * lock, checked on every use by its lobes-control.json, like the control itself.
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { DataType, GraphIndex, loadModel, readInitializerFloat32, writeModel } from '../onnx/index.js';
import { expectedWeights, writeLlamaOnnx, DATA_FILE, WRITER_VERSION, type LlamaSpec,
  type LlamaWeightSource } from '../convert/llama-onnx/index.js';
import { transposeInto } from '../convert/llama-onnx/weights.js';
import { hashFolder } from '../convert/folder-hash.js';
import { sha256File } from '../store/chunks.js';
import type { ControlInfo } from '../store/types.js';
import { CONTROL_RECORD, cachedControlFolder, storedWeight } from './control.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';

/** A float tensor of the explicit control under its Hugging Face name. */
interface Placed {
  init: string;
  /** Stored [d_in, d_out] (a MatMul weight) rather than in Hugging Face's [d_out, d_in]. */
  transposed: boolean;
}

/**
 * The explicit-layout model folder `dir` (a lobes conversion, or its control) as a weight source
 * by Hugging Face name: projections found as the stored weight of the MatMul node
 * `/model/layers.L/self_attn/q_proj/MatMul` (→ model.layers.L.self_attn.q_proj.weight) and
 * `/lm_head/MatMul`, embedding and norms by their own names. Every weight `spec` needs must be
 * found with its shape, else a one-line error names it.
 */
export function explicitWeightSource(dir: string,
  spec: LlamaSpec): { source: LlamaWeightSource; storage: 'fp16' | 'bf16' | 'fp32' }
{
  const m = loadModel(dir);
  const graph = m.model.graph!;
  const g = new GraphIndex(graph);
  const want = new Map(expectedWeights(spec));
  const placed = new Map<string, Placed>();
  for (const node of graph.node) {
    if (node.opType !== 'MatMul' || node.domain || !node.name?.endsWith('/MatMul')) continue;
    const w = storedWeight(g, m.initializers, node.input[1]);
    const hf = node.name.slice(1, -'/MatMul'.length).split('/').join('.') + '.weight';
    if (w && want.has(hf)) placed.set(hf, { init: w, transposed: true });
  }
  for (const name of want.keys())
    if (!placed.has(name) && m.initializers.has(name)) placed.set(name, { init: name, transposed: false });
  let storage: 'fp16' | 'bf16' | 'fp32' = 'fp32';
  for (const [name, shape] of want) {
    const p = placed.get(name);
    if (!p)
      throw new LobesError(
        `no float tensor for ${name} (not a lobes conversion in the explicit layout with float weights)`,
        { file: m.file },
      );
    const t = m.initializers.get(p.init)!;
    const dims = t.dims.map(Number);
    const hfDims = p.transposed ? [dims[1], dims[0]] : dims;
    if (hfDims.join('x') !== shape.join('x'))
      throw new LobesError(
        `tensor ${p.init} for ${name} has shape [${dims.join(', ')}], [${shape.join(', ')}] expected${
          p.transposed ? ' transposed' : ''
        }`,
        { file: m.file },
      );
    if (t.dataType !== DataType.FLOAT && t.dataType !== DataType.FLOAT16 && t.dataType !== DataType.BFLOAT16)
      throw new LobesError(`tensor ${p.init} for ${name} is not float32, float16 or bfloat16 (data type ${t.dataType})`,
        { file: m.file });
    if (shape.length === 2 && t.dataType === DataType.FLOAT16) storage = 'fp16';
    if (shape.length === 2 && t.dataType === DataType.BFLOAT16) storage = 'bf16';
  }
  // One tensor in Hugging Face layout at a time (the writer reads each weight's rows in order).
  let cached: { name: string; cols: number; values: Float32Array } | null = null;
  const full = (name: string) => {
    if (cached?.name === name) return cached;
    const p = placed.get(name);
    if (!p) throw new LobesError('weight not found in the explicit model', { file: m.file, where: name });
    const shape = want.get(name)!;
    const stored = readInitializerFloat32(m, p.init);
    let values = stored;
    if (p.transposed) {
      values = new Float32Array(stored.length);
      transposeInto(stored, shape[1]!, shape[0]!, values);
    }
    cached = { name, cols: shape.length === 1 ? 1 : shape[1]!, values };
    return cached;
  };
  const source: LlamaWeightSource = {
    shape: (name) => {
      const s = want.get(name);
      if (!s || !placed.has(name))
        throw new LobesError('weight not found in the explicit model', { file: m.file, where: name });
      return [...s];
    },
    rows: (name, r0, r1) => {
      const f = full(name);
      return f.values.slice(r0 * f.cols, r1 * f.cols);
    },
  };
  return { source, storage };
}

/**
 * The genai-layout folder of the explicit control `explicit` (randomControlModel's result):
 * built once in the control cache next to it, with the compute dtype `dtype` of the trained
 * model's genai conversion; returns it with the manifest's record (the explicit control's,
 * plus `layout`).
 */
export async function genaiControlModel(explicit: { dir: string; info: ControlInfo }, spec: LlamaSpec,
  opts: { dtype: 'fp32' | 'fp16' } & JobIOOptions): Promise<{ dir: string; info: ControlInfo }>
{
  const dir = `${explicit.dir}-genai-${opts.dtype}-w${WRITER_VERSION}`;
  const info: ControlInfo = { ...explicit.info, layout: { name: 'genai', drawn: explicit.dir } };
  await cachedControlFolder(
    dir,
    `laying out the random-weights control ${explicit.dir} in the genai layout`,
    jobIO(opts),
    () => explicitWeightSource(explicit.dir, spec),
    async (tmp, { source, storage }) => {
      const weights = opts.dtype === 'fp16' ? 'fp16' : storage;
      // The tokenizer's files travel as they are; the graph, its data and the config files are the genai layout's own.
      const extraFiles: Record<string, Uint8Array> = {};
      for (const f of readdirSync(explicit.dir)) {
        if (!NOT_COPIED.has(f) && statSync(path.join(explicit.dir, f)).isFile())
          extraFiles[f] = readFileSync(path.join(explicit.dir, f));
      }
      // The writer builds in a sibling folder and renames it onto the (empty) temporary folder.
      await writeLlamaOnnx(tmp, spec, source, { layout: 'genai', dtype: opts.dtype, weights, extraFiles });
      // The graph records the control, as the explicit control's does (so its sha256 is not a trained model's).
      const graphFile = path.join(tmp, 'model.onnx');
      const g = loadModel(graphFile);
      g.model.metadataProps = [...g.model.metadataProps.filter((p) => p.key !== 'lobes.control'), {
        key: 'lobes.control',
        value: JSON.stringify(info),
      }];
      writeModel(graphFile, g.model);
      const hashed = hashFolder(tmp, CONTROL_RECORD, 'control model file');
      writeFileSync(path.join(tmp, CONTROL_RECORD),
        JSON.stringify({ ...info, drawnGraphSha256: sha256File(path.join(explicit.dir, 'model.onnx')).sha256,
          files: hashed.files }, null, 1) + '\n');
      return hashed;
    },
  );
  return { dir, info };
}

/** Files of the explicit control that are not the tokenizer's. */
const NOT_COPIED = new Set(['model.onnx', DATA_FILE, 'config.json', 'generation_config.json', 'genai_config.json',
  CONTROL_RECORD, 'lobes-convert.json', 'lobes-cache.json']);
