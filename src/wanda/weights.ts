/**
 * Weight sources: which matrices to score and where their bytes are (an ONNX initializer's
 * bytes and storage are located by src/runtime/weights.ts, shared with the lens).
 *
 *  - the run's capture points decide the matrices: each layer site names the projections
 *    reading it (src/hooks.ts): `layers.{i}.mlp.in` feeds gate_proj and up_proj,
 *    `layers.{i}.mlp.down_in` feeds down_proj;
 *  - a Hugging Face safetensors folder (one file, several, or model.safetensors.index.json)
 *    names them `model.layers.{i}.mlp.{gate,up,down}_proj.weight` ([d_out, d_in]);
 *  - an ONNX model names them through the capture points' ProjectionRefs (src/runtime),
 *    stored as MatMul [d_in, d_out], Gemm/HF [d_out, d_in] or MatMulNBits blocks;
 *  - Phi-3 / Phi-4-mini hold gate_proj and up_proj as one `mlp.gate_up_proj.weight`
 *    ([2·intermediate, d_in]: gate rows, then up; llama.cpp's phi3 `blk.{i}.ffn_up`): each part
 *    is located as its row range of the fused tensor, under its own name;
 *  - a llama GGUF (llama.cpp, Ollama) names them `blk.{i}.ffn_{gate,up,down}.weight`, GGML
 *    blocks with one stored row per output, dequantized by the weight pass exactly as the
 *    converted model's weights are (src/convert/gguf-llama.ts).
 *
 * Only headers and graph metadata are read here; the bytes are read by the weight pass.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { readSafetensorsHeader, type StHeader } from '../formats/safetensors.js';
import type { MatrixRef, DenseDtype } from './kernel.js';
import { onnxWeightSource } from '../runtime/weights.js';
import type { ProjectionRef } from '../runtime/types.js';
import type { LoadedModel } from '../onnx/index.js';
import { HOOK_SITES, parseHook, siteModule, siteProjections } from '../hooks.js';
import { openGgufLlama } from '../convert/gguf-llama.js';

/** A matrix wanted by the analysis (from the run's capture points). */
export interface WantedMatrix {
  /** `layers.{i}.{module}.{proj}`, the Hugging Face module path without `model.` and `.weight`. */
  name: string;
  layer: number;
  proj: string;
  input: string;
  /** Input dimension from the capture point. */
  dIn: number;
}

/** Projections in site order, then in each site's order (gate, up, down). */
const PROJECTION_ORDER = HOOK_SITES.flatMap((s) => siteProjections(s));

/**
 * The matrices whose inputs a run captured: for each layer capture point, the projections
 * reading it, named `layers.{i}.{module}.{proj}`; ordered by layer, then gate, up, down.
 * Model-level points (final.hidden) and names outside the hook vocabulary are skipped.
 */
export function wantedMatrices(hooks: { name: string; dim: number }[]): WantedMatrix[] {
  const out: WantedMatrix[] = [];
  for (const h of hooks) {
    const hook = parseHook(h.name);
    if (!hook || hook.layer === null) continue;
    const { layer, site } = hook;
    for (const proj of siteProjections(site))
      out.push({ name: `layers.${layer}.${siteModule(site)}.${proj}`, layer, proj, input: h.name, dIn: h.dim });
  }
  return out.sort((a, b) => a.layer - b.layer || PROJECTION_ORDER.indexOf(a.proj) - PROJECTION_ORDER.indexOf(b.proj));
}

// ---------------------------------------------------------------------------------------
// safetensors folders

export interface SafetensorsCheckpoint {
  dir: string;
  /** Tensor name -> header of the file holding it. */
  tensors: Map<string, StHeader>;
}

/** Is this a folder (or file) with safetensors weights? */
export function isSafetensorsPath(p: string): boolean {
  if (!existsSync(p)) return false;
  if (statSync(p).isFile()) return p.endsWith('.safetensors');
  return readdirSync(p).some((f) => f.endsWith('.safetensors'));
}

/** Open a checkpoint: a .safetensors file, or a folder with model.safetensors.index.json or *.safetensors. */
export function openSafetensorsCheckpoint(p: string): SafetensorsCheckpoint {
  if (!existsSync(p)) throw new LobesError('no such file or folder', { file: p });
  const tensors = new Map<string, StHeader>();
  const add = (file: string) => {
    const h = readSafetensorsHeader(file);
    for (const name of h.tensors.keys()) {
      const other = tensors.get(name);
      if (other)
        throw new LobesError(
          `tensor ${name} is in two weight files, ${path.basename(other.file)} and ${path.basename(file)}`,
          { file: p,
            hint: 'keep one copy of each tensor, or add a model.safetensors.index.json naming the file of each' },
        );
      tensors.set(name, h);
    }
    return h;
  };
  if (statSync(p).isFile()) {
    add(p);
    return { dir: path.dirname(p), tensors };
  }
  const index = path.join(p, 'model.safetensors.index.json');
  if (existsSync(index)) {
    let map: Record<string, string>;
    try {
      map = JSON.parse(readFileSync(index, 'utf8')).weight_map;
    } catch (e: any) {
      throw new LobesError(`not valid JSON (${e.message})`, { file: index });
    }
    if (!map || typeof map !== 'object') throw new LobesError('has no "weight_map" object', { file: index });
    const headers = new Map<string, StHeader>();
    for (const [name, shard] of Object.entries(map)) {
      if (typeof shard !== 'string' || shard.includes('..') || path.isAbsolute(shard))
        throw new LobesError(`bad shard file name ${JSON.stringify(shard)}`, { file: index, where: name });
      const file = path.join(p, shard);
      if (!headers.has(file)) {
        if (!existsSync(file))
          throw new LobesError(`shard ${shard} listed in the index is missing`, { file: index, where: name });
        headers.set(file, readSafetensorsHeader(file));
      }
      const h = headers.get(file)!;
      if (!h.tensors.has(name))
        throw new LobesError(`the index puts ${name} in ${shard}, but that file does not hold it`, { file });
      tensors.set(name, h);
    }
    return { dir: p, tensors };
  }
  const files = readdirSync(p).filter((f) => f.endsWith('.safetensors')).sort();
  if (files.length === 0) throw new LobesError('no .safetensors file in the folder', { file: p });
  for (const f of files) add(path.join(p, f));
  return { dir: p, tensors };
}

function stDtype(d: string, file: string, name: string): DenseDtype {
  if (d === 'F32' || d === 'F16' || d === 'BF16') return d;
  throw new LobesError(`weight dtype ${d} is not supported (F32, F16 or BF16)`, { file, where: name });
}

/** Locate every wanted matrix in a safetensors checkpoint; missing tensors and shape mismatches are errors. */
export function safetensorsMatrices(ck: SafetensorsCheckpoint, wanted: WantedMatrix[]): MatrixRef[] {
  const missing: string[] = [];
  const out: MatrixRef[] = [];
  for (const w of wanted) {
    // HF names: model.layers.{i}.{module}.{proj}.weight (or without the model. prefix).
    const candidates = [`model.${w.name}.weight`, `${w.name}.weight`];
    const tname = candidates.find((c) => ck.tensors.has(c));
    // A weight whose d_in is not the captured input's belongs to another model.
    const checkDIn = (dOut: number, dIn: number, file: string, where: string) => {
      if (dIn !== w.dIn)
        throw new LobesError(
          `weight shape [${dOut}, ${dIn}] has d_in=${dIn} but the run captured ${w.input} with dim ${w.dIn}`,
          { file, where, hint: 'the checkpoint does not belong to the model of this run' },
        );
    };
    const dense = (dOut: number, dIn: number, tensor: string, dtype: ReturnType<typeof stDtype>,
      data: { file: string; offset: number; byteLength: number }): MatrixRef => ({ name: w.name, layer: w.layer,
        proj: w.proj, input: w.input, dOut, dIn, source: { kind: 'dense', tensor, dtype, layout: 'out_in', data } });
    const fused = tname ? null : fusedMlpPart(w);
    const fname = fused && [`model.${fused.tensor}`, fused.tensor].find((c) => ck.tensors.has(c));
    if (fused && fname) {
      const h = ck.tensors.get(fname)!;
      const t = h.tensors.get(fname)!;
      if (t.shape.length !== 2 || t.shape[0]! % 2 !== 0)
        throw new LobesError(`expected a 2-D weight of gate rows then up rows, got shape ${JSON.stringify(t.shape)}`, {
          file: h.file,
          where: fname,
        });
      const [rows, dIn] = t.shape as [number, number];
      checkDIn(rows, dIn, h.file, fname);
      const dOut = rows / 2;
      const rowBytes = t.byteLength / rows;
      const r0 = fused.part * dOut;
      out.push(
        dense(dOut, dIn, `${fname}[${r0}:${r0 + dOut}]`, stDtype(t.dtype, h.file, fname), { file: h.file,
          offset: t.offset + r0 * rowBytes, byteLength: dOut * rowBytes }),
      );
      continue;
    }
    if (!tname) {
      missing.push(candidates[0]);
      continue;
    }
    const h = ck.tensors.get(tname)!;
    const t = h.tensors.get(tname)!;
    if (t.shape.length !== 2)
      throw new LobesError(`expected a 2-D weight, got shape ${JSON.stringify(t.shape)}`, { file: h.file,
        where: tname });
    const [dOut, dIn] = t.shape as [number, number];
    checkDIn(dOut, dIn, h.file, tname);
    out.push(
      dense(dOut, dIn, tname, stDtype(t.dtype, h.file, tname), { file: h.file, offset: t.offset,
        byteLength: t.byteLength }),
    );
  }
  if (missing.length) {
    throw new LobesError(
      `${missing.length} weight tensor${missing.length === 1 ? '' : 's'} missing: ${missing.slice(0, 3).join(', ')}${
        missing.length > 3 ? ', ...' : ''
      }`,
      {
        file: ck.dir,
        hint: `the run captured inputs of these projections; pass the checkpoint of the same model with ${
          opt('weights')
        }`,
      },
    );
  }
  return out;
}

/** gate_proj / up_proj as part 0 / 1 of the layer's fused `mlp.gate_up_proj.weight` (Phi-3); null for other projections. */
function fusedMlpPart(w: WantedMatrix): { tensor: string; part: 0 | 1 } | null {
  if (w.proj !== 'gate_proj' && w.proj !== 'up_proj') return null;
  return { tensor: `layers.${w.layer}.mlp.gate_up_proj.weight`, part: w.proj === 'gate_proj' ? 0 : 1 };
}

// ---------------------------------------------------------------------------------------
// ONNX models

/**
 * Matrices of an ONNX model for the wanted list, from the capture points' ProjectionRefs
 * (ModelInfo.points from inspectModel).
 */
export function onnxMatrices(m: LoadedModel, points: { name: string; dim: number; projections?: ProjectionRef[] }[],
  wanted: WantedMatrix[]): MatrixRef[]
{
  const byHook = new Map(points.map((p) => [p.name, p]));
  const out: MatrixRef[] = [];
  const missing: string[] = [];
  for (const w of wanted) {
    const pt = byHook.get(w.input);
    const ref = pt?.projections?.find((p) => p.proj === w.proj);
    if (!ref) {
      missing.push(w.name);
      continue;
    }
    if (ref.dIn !== w.dIn) {
      throw new LobesError(
        `weight ${JSON.stringify(ref.weight)} has d_in=${ref.dIn} but the run captured ${w.input} with dim ${w.dIn}`,
        {
          file: m.file,
          hint: 'the model does not match the run',
        },
      );
    }
    out.push({ name: w.name, layer: w.layer, proj: w.proj, input: w.input, dOut: ref.dOut, dIn: ref.dIn,
      source: onnxWeightSource(m, ref) });
  }
  if (missing.length) {
    throw new LobesError(
      `no weight found in the graph for ${missing.length} projection${missing.length === 1 ? '' : 's'}: ${
        missing.slice(0, 3).join(', ')
      }${missing.length > 3 ? ', ...' : ''}`,
      {
        file: m.file,
        hint: `pass a safetensors checkpoint of the same model with ${opt('weights')}`,
      },
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// GGUF files

/**
 * Locate every wanted matrix in a llama GGUF (checked as a convertible Llama model first).
 * Only the MLP projections are scored, whose rows llama.cpp stores in Hugging Face order;
 * q_proj / k_proj (rows permuted for llama.cpp's rotary layout) are refused.
 */
export function ggufMatrices(file: string, wanted: WantedMatrix[]): MatrixRef[] {
  const model = openGgufLlama(file);
  try {
    const out: MatrixRef[] = [];
    for (const w of wanted) {
      const hf = `model.${w.name}.weight`;
      const fused = fusedMlpPart(w);
      const fusedMapped = fused && model.mapped.find((m) => m.name === `model.${fused.tensor}`);
      if (fused && fusedMapped) {
        // phi3's ffn_up: gate rows then up rows, each stored row one output (a row range is a byte range).
        const [rows, dIn] = fusedMapped.shape as [number, number];
        if (dIn !== w.dIn)
          throw new LobesError(
            `weight shape [${rows}, ${dIn}] has d_in=${dIn} but the run captured ${w.input} with dim ${w.dIn}`,
            { file, where: `tensor ${JSON.stringify(fusedMapped.tensor.name)}`,
              hint: 'the GGUF does not belong to the model of this run' },
          );
        const t = fusedMapped.tensor;
        const dOut = rows / 2;
        const rowBytes = t.nbytes / rows;
        const r0 = fused.part * dOut;
        out.push({ name: w.name, layer: w.layer, proj: w.proj, input: w.input, dOut, dIn,
          source: { kind: 'ggml', tensor: `${t.name}[${r0}:${r0 + dOut}]`, type: t.type,
            data: { file, offset: t.offset + r0 * rowBytes, byteLength: dOut * rowBytes } } });
        continue;
      }
      const mapped = model.mapped.find((m) => m.name === hf);
      if (!mapped) throw new LobesError(`no tensor for ${hf} in this llama GGUF`, { file });
      if (mapped.permutedHeads)
        throw new LobesError(`${w.proj} rows are permuted in GGUF files; lobes scores MLP projections only`, { file,
          where: `tensor ${JSON.stringify(mapped.tensor.name)}` });
      const [dOut, dIn] = mapped.shape;
      if (dIn !== w.dIn) {
        throw new LobesError(
          `weight shape [${dOut}, ${dIn}] has d_in=${dIn} but the run captured ${w.input} with dim ${w.dIn}`,
          {
            file,
            where: `tensor ${JSON.stringify(mapped.tensor.name)}`,
            hint: 'the GGUF does not belong to the model of this run',
          },
        );
      }
      const t = mapped.tensor;
      out.push({ name: w.name, layer: w.layer, proj: w.proj, input: w.input, dOut, dIn,
        source: { kind: 'ggml', tensor: t.name, type: t.type,
          data: { file, offset: t.offset, byteLength: t.nbytes } } });
    }
    return out;
  } finally {
    model.close();
  }
}
