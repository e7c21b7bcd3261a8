/**
 * writeLlamaOnnx: a Llama spec plus a weight source → an ONNX model folder (model.onnx,
 * model.onnx.data, config.json, genai_config.json for the genai layout), with the weights
 * streamed into the data file tensor by tensor. The folder is built in a temporary sibling and
 * renamed into place, so readers never see half a model.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, rmdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../../util/errors.js';
import { fsyncDir, makeDirs, writeFileAtomicSync } from '../../util/io.js';
import { buildOptions, GraphBuilder, type BuildOptions } from './build.js';
import { genaiConfigJson, llamaConfigJson } from './config.js';
import { buildExplicit } from './explicit.js';
import { buildGenai } from './genai.js';
import { encodeGGraph, type GGraph } from './graph.js';
import { FileSink, InlineSink, type TensorSink } from './sink.js';
import { checkSource, checkSpec, expectedWeights } from './spec.js';
import type { LlamaSpec, LlamaWeightSource, WriteLlamaOptions, WriteLlamaResult } from './types.js';

/** Name of the external data file. */
export const DATA_FILE = 'model.onnx.data';

/** Producer version written into model.onnx. */
export const WRITER_VERSION = '1';

/**
 * Build the graph of a spec over a weight source into `sink` (weights streamed as the graph
 * is built). The explicit and genai layouts are described in explicit.ts and genai.ts.
 */
export function buildLlamaGraph(spec: LlamaSpec, src: LlamaWeightSource, sink: TensorSink,
  opts: WriteLlamaOptions): { graph: GGraph; storage: Record<string, string> }
{
  checkSpec(spec);
  checkSource(spec, src);
  const bo = buildOptions(opts);
  const b = new GraphBuilder(spec, src, sink, bo);
  const graph = opts.layout === 'explicit' ? buildExplicit(b) : opts.layout === 'genai' ? buildGenai(b) : null;
  if (!graph) throw new LobesError(`layout '${String(opts.layout)}' is not one of explicit, genai`);
  return { graph, storage: b.storage };
}

/** The graph with every initializer inline (small models in memory). */
export function buildLlamaGraphInline(spec: LlamaSpec, src: LlamaWeightSource, opts: WriteLlamaOptions): GGraph {
  return buildLlamaGraph(spec, src, new InlineSink(), opts).graph;
}

/** Planned bytes of model.onnx.data (exact unless the source gives nbits blocks of another form). */
export function plannedDataBytes(spec: LlamaSpec, opts: BuildOptions, layout: WriteLlamaOptions['layout']): number {
  const fsz = opts.dtype === 'fp16' ? 2 : 4;
  const wsz = opts.weights === 'fp32' ? 4 : opts.weights === 'fp16' || opts.weights === 'bf16' ? 2 : fsz;
  let total = 0;
  for (const [name, shape] of expectedWeights(spec)) {
    const n = shape.reduce((a, b) => a * b, 1);
    // lm_head: MatMulNBits in genai, and in explicit when the source gives its blocks (as a quantized GGUF does).
    const isProj = /_proj\.weight$/.test(name) || name === 'lm_head.weight';
    if (shape.length === 1) total += n * fsz;
    else if (isProj && opts.weights === 'q4') {
      const nb = shape[1]! / 32;
      total += n / 2 + shape[0]! * nb * fsz + shape[0]! * Math.ceil(nb / 2);
    } else if (name === 'model.embed_tokens.weight' && opts.weights === 'q4') total += n * fsz;
    else total += n * wsz;
  }
  if (layout === 'genai') total += 2 * spec.maxPositions * ((spec.rotaryDim ?? spec.headDim) / 2) * fsz;
  return total;
}

function checkTarget(dir: string, overwrite: boolean): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory())
    throw new LobesError('the output path exists and is not a folder', { file: dir,
      hint: `choose another ${opt('out')}` });
  if (readdirSync(dir).length > 0 && !overwrite) {
    throw new LobesError('the output folder exists and is not empty', { file: dir,
      hint: 'choose another folder or remove it first', code: 'E_EXISTS' });
  }
}

const json = (o: object) => JSON.stringify(o, null, 2) + '\n';

/**
 * Write model.onnx + model.onnx.data + config.json (+ genai_config.json for 'genai') and any
 * `extraFiles` into `dir`, atomically: built in a temporary sibling folder, renamed into place.
 * Memory: one row chunk of one tensor (opts.chunkBytes), plus a weight's nbits blocks when
 * the source gives them. Returns sizes, timings and how each weight was stored.
 */
export async function writeLlamaOnnx(dir: string, spec: LlamaSpec, src: LlamaWeightSource,
  opts: WriteLlamaOptions): Promise<WriteLlamaResult>
{
  const t0 = performance.now();
  checkSpec(spec);
  const bo = buildOptions(opts);
  checkSource(spec, src);
  const target = path.resolve(dir);
  checkTarget(target, !!opts.overwrite);
  const parent = path.dirname(target);
  makeDirs(parent);
  const tmp = path.join(parent, `.${path.basename(target)}.tmp-${process.pid}-${Date.now()}`);
  mkdirSync(tmp);
  let sink: FileSink | null = null;
  try {
    let total = plannedDataBytes(spec, bo, opts.layout);
    let done = 0;
    const onWrite = (n: number, tensor: string) => {
      done += n;
      if (done > total) total = done;
      opts.onProgress?.(done, total, tensor);
    };
    sink = new FileSink(path.join(tmp, DATA_FILE), DATA_FILE, opts.onProgress ? onWrite : () => {});
    const { graph, storage } = buildLlamaGraph(spec, src, sink, opts);
    const dataBytes = sink.size;
    const ts = performance.now();
    sink.close();
    sink = null;
    const t1 = performance.now();
    const model = encodeGGraph(graph, { producerName: 'lobes', producerVersion: WRITER_VERSION });
    writeFileAtomicSync(path.join(tmp, 'model.onnx'), model);
    const modelBytes = model.reduce((a, p) => a + p.byteLength, 0);
    const t2 = performance.now();
    writeFileAtomicSync(path.join(tmp, 'config.json'), json(llamaConfigJson(spec, opts)));
    const gen: Record<string, unknown> = {};
    if (spec.bosTokenId != null) gen.bos_token_id = spec.bosTokenId;
    if (spec.eosTokenId != null) gen.eos_token_id = spec.eosTokenId;
    if (spec.padTokenId != null) gen.pad_token_id = spec.padTokenId;
    writeFileAtomicSync(path.join(tmp, 'generation_config.json'), json(gen));
    if (opts.layout === 'genai') writeFileAtomicSync(path.join(tmp, 'genai_config.json'), json(genaiConfigJson(spec)));
    for (const [name, data] of Object.entries(opts.extraFiles ?? {})) {
      if (name.includes('/') || name.includes('\\') || name.startsWith('.'))
        throw new LobesError(`extra file name "${name}" must be a plain file name`);
      writeFileAtomicSync(path.join(tmp, name), data);
    }
    opts.beforeCommit?.(tmp);
    // Into place: an existing (empty, or with overwrite) folder is moved aside first.
    let old: string | null = null;
    if (existsSync(target)) {
      if (readdirSync(target).length === 0) rmdirSync(target);
      else {
        old = path.join(parent, `.${path.basename(target)}.old-${process.pid}-${Date.now()}`);
        renameSync(target, old);
      }
    }
    renameSync(tmp, target);
    fsyncDir(parent);
    if (old) rmSync(old, { recursive: true, force: true });
    const t3 = performance.now();
    return {
      dir: target,
      modelBytes,
      dataBytes,
      seconds: { weights: (t1 - t0) / 1000, sync: (t1 - ts) / 1000, graph: (t2 - t1) / 1000, total: (t3 - t0) / 1000 },
      storage,
    };
  } catch (e) {
    sink?.abort();
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
