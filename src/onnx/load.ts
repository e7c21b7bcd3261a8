/**
 * Loading a model from disk: finding the graph file of a model folder, decoding it (never
 * its external weights), and validating every external-data reference (relative location,
 * no '..', inside the model folder, byte range inside the file).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { LobesError } from '../util/errors.js';
import { checkRegularFile } from '../util/io.js';
import { decodeModel } from './decode.js';
import { isExternal, tensorByteSize, type ModelProto, type TensorProto } from './types.js';

export interface ExternalRef {
  /** Absolute path of the data file. */
  path: string;
  /** Location as written in the model. */
  location: string;
  offset: number;
  length: number;
}

export interface LoadedModel {
  /** The graph file. */
  file: string;
  /** Folder holding the graph file; external locations are relative to it. */
  dir: string;
  model: ModelProto;
  /** The bytes of the graph file (tensor raw data views point into them). */
  bytes: Uint8Array;
  /** Initializers by name. */
  initializers: Map<string, TensorProto>;
  /** External data of each externally stored initializer, validated. */
  external: Map<string, ExternalRef>;
}

/** Graph file names tried, in order, when loadModel is given a folder. */
export const MODEL_FILE_CANDIDATES = [
  'model.onnx',
  'decoder_model_merged.onnx',
  'decoder_model.onnx',
  'onnx/model.onnx',
  'onnx/decoder_model_merged.onnx',
  'onnx/decoder_model.onnx',
];

/** Find the graph file of a model folder (or return the file given). */
export function resolveModelFile(dirOrFile: string): string {
  if (!existsSync(dirOrFile)) throw new LobesError('no such file or folder', { file: dirOrFile });
  const st = statSync(dirOrFile);
  if (st.isFile()) return dirOrFile;
  // A pipe or a device would block or never end: only folders and regular files.
  if (!st.isDirectory()) checkRegularFile(dirOrFile, 'model', 'give a model folder or an .onnx file');
  // onnxruntime-genai names its decoder file in genai_config.json.
  const genai = join(dirOrFile, 'genai_config.json');
  if (existsSync(genai)) {
    try {
      const fname = JSON.parse(readFileSync(genai, 'utf8'))?.model?.decoder?.filename;
      if (typeof fname === 'string' && !isAbsolute(fname) && !fname.split(/[\\/]/).includes('..') &&
        existsSync(join(dirOrFile, fname)))
      {
        return join(dirOrFile, fname);
      }
    } catch {
      // fall through to the usual names
    }
  }
  for (const c of MODEL_FILE_CANDIDATES) {
    const p = join(dirOrFile, c);
    if (existsSync(p) && statSync(p).isFile()) return p;
  }
  const onnx = readdirSync(dirOrFile).filter((f) => f.endsWith('.onnx'));
  if (onnx.length === 1) {
    checkRegularFile(join(dirOrFile, onnx[0]!), 'model graph');
    return join(dirOrFile, onnx[0]!);
  }
  throw new LobesError(
    onnx.length === 0
      ? 'no .onnx file in the model folder'
      : `several .onnx files (${onnx.join(', ')}) and none named model.onnx`,
    { file: dirOrFile, hint: 'pass the .onnx file itself' },
  );
}

function externalOf(t: TensorProto): Map<string, string> {
  const m = new Map<string, string>();
  for (const e of t.externalData ?? []) if (e.key !== undefined) m.set(e.key, e.value ?? '');
  return m;
}

/**
 * Validate the external-data reference of a tensor: the location must be relative, free of
 * '..', inside `dir`, and the byte range must lie within the file. `sizes` caches file
 * sizes across calls.
 */
export function resolveExternal(dir: string, t: TensorProto, graphFile: string,
  sizes = new Map<string, number>()): ExternalRef
{
  const kv = externalOf(t);
  const name = t.name ?? '(unnamed)';
  const where = `initializer ${name}`;
  const location = kv.get('location');
  if (!location) throw new LobesError('external data without a location', { file: graphFile, where });
  const parts = location.split(/[\\/]+/);
  const abs = resolve(dir, location);
  const rel = relative(resolve(dir), abs);
  if (isAbsolute(location) || /^[a-zA-Z]:/.test(location) || parts.includes('..') || rel.startsWith('..') ||
    isAbsolute(rel) || rel === '')
  {
    throw new LobesError(
      `external data location ${JSON.stringify(location)} points outside the model folder (rejected: path traversal)`,
      {
        file: graphFile,
        where,
        hint: 'external data must be a relative path inside the model folder',
      },
    );
  }
  const offset = Number(kv.get('offset') ?? '0');
  const lenStr = kv.get('length');
  const expected = tensorByteSize(t);
  const length = lenStr !== undefined ? Number(lenStr) : expected;
  if (!Number.isSafeInteger(offset) || offset < 0 || length === null || !Number.isSafeInteger(length) || length < 0) {
    throw new LobesError(`bad external data offset/length (${kv.get('offset')}/${lenStr})`, { file: graphFile, where });
  }
  let size = sizes.get(abs);
  if (size === undefined) {
    if (!existsSync(abs)) {
      throw new LobesError(`external data file ${location} is missing`, { file: graphFile, where,
        hint: `expected at ${abs}` });
    }
    size = statSync(abs).size;
    sizes.set(abs, size);
  }
  if (offset + length > size) {
    throw new LobesError(
      `external data range ${offset}+${length} runs past the end of ${location} (${size} bytes; truncated?)`,
      {
        file: graphFile,
        where,
      },
    );
  }
  return { path: abs, location, offset, length };
}

/**
 * Load a model's graph file (never its external weights) and validate every external
 * data reference. `dirOrFile` is a model folder or an .onnx file.
 */
export function loadModel(dirOrFile: string): LoadedModel {
  const file = resolveModelFile(dirOrFile);
  const dir = dirname(resolve(file));
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(`cannot read: ${e.code ?? e.message}`, { file });
  }
  const model = decodeModel(bytes, file);
  const initializers = new Map<string, TensorProto>();
  const external = new Map<string, ExternalRef>();
  const sizes = new Map<string, number>();
  for (const t of model.graph!.initializer) {
    if (t.name !== undefined) initializers.set(t.name, t);
    if (isExternal(t)) external.set(t.name ?? '', resolveExternal(dir, t, file, sizes));
  }
  // Constant nodes may hold external tensors too.
  for (const n of model.graph!.node) {
    for (const a of n.attribute) {
      if (a.t && isExternal(a.t)) resolveExternal(dir, a.t, file, sizes);
    }
  }
  return { file, dir, model, bytes, initializers, external };
}
