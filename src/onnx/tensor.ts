/**
 * Tensor data: the bytes of a TensorProto whatever their storage (inline raw data, typed
 * fields, or an external file read by byte range), and their values as float32 or numbers.
 */
import { basename } from 'node:path';
import { LobesError } from '../util/errors.js';
import { bf16ArrayToFloat, halfArrayToFloat } from '../util/half.js';
import { bytesOf, readFileRange } from '../util/io.js';
import { resolveExternal, type LoadedModel } from './load.js';
import { DataType, dataTypeName, isExternal, type TensorProto } from './types.js';

/** Bytes of a tensor, little-endian in ONNX layout; `dir` resolves external data. */
export function tensorBytes(t: TensorProto, dir: string, graphFile = dir): Uint8Array {
  if (isExternal(t)) {
    const ref = resolveExternal(dir, t, graphFile);
    return readFileRange(ref.path, ref.offset, ref.length, 'external data file');
  }
  if (t.rawData) return t.rawData;
  if (t.floatData) return bytesOf(t.floatData);
  if (t.doubleData) return bytesOf(t.doubleData);
  if (t.int32Data) return int32FieldBytes(t.int32Data.map(Number), t.dataType);
  if (t.int64Data) return bytesOf(BigInt64Array.from(t.int64Data, (x) => BigInt(x)));
  if (t.uint64Data) return bytesOf(BigUint64Array.from(t.uint64Data, (x) => BigInt.asUintN(64, BigInt(x))));
  return new Uint8Array(0);
}

/** int32_data holds every type of 32 bits or fewer, one value per element: narrow it to the type's width. */
function int32FieldBytes(v: number[], dt: number | undefined): Uint8Array {
  switch (dt) {
    case DataType.FLOAT16:
    case DataType.BFLOAT16:
    case DataType.UINT16:
    case DataType.INT16: {
      const o = new Uint16Array(v.length);
      for (let i = 0; i < v.length; i++) o[i] = v[i]! & 0xffff;
      return bytesOf(o);
    }
    case DataType.INT8:
    case DataType.UINT8:
    case DataType.BOOL: {
      const o = new Uint8Array(v.length);
      for (let i = 0; i < v.length; i++) o[i] = v[i]! & 0xff;
      return o;
    }
    default:
      return bytesOf(Int32Array.from(v));
  }
}

/** An aligned copy when needed, so typed-array views can be made. */
function aligned(b: Uint8Array, k: number): Uint8Array {
  return b.byteOffset % k === 0 ? b : new Uint8Array(b);
}

/** A float tensor (fp32, fp16, bf16, fp64) as float32. */
export function tensorToFloat32(t: TensorProto, bytes: Uint8Array, where = t.name ?? 'tensor'): Float32Array {
  switch (t.dataType) {
    case DataType.FLOAT: {
      const b = aligned(bytes, 4);
      return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    }
    case DataType.FLOAT16: {
      const b = aligned(bytes, 2);
      return halfArrayToFloat(new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2));
    }
    case DataType.BFLOAT16: {
      const b = aligned(bytes, 2);
      return bf16ArrayToFloat(new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2));
    }
    case DataType.DOUBLE: {
      const b = aligned(bytes, 8);
      return Float32Array.from(new Float64Array(b.buffer, b.byteOffset, b.byteLength / 8));
    }
    default:
      throw new LobesError(`tensor of type ${dataTypeName(t.dataType)} is not a float tensor`, { where });
  }
}

/** An integer tensor (int64/int32/uint8/int8...) as numbers; float tensors via tensorToFloat32. */
export function tensorToNumbers(t: TensorProto, bytes: Uint8Array): number[] {
  switch (t.dataType) {
    case DataType.INT64: {
      const b = aligned(bytes, 8);
      return Array.from(new BigInt64Array(b.buffer, b.byteOffset, b.byteLength / 8), Number);
    }
    case DataType.INT32: {
      const b = aligned(bytes, 4);
      return Array.from(new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4));
    }
    case DataType.UINT8:
    case DataType.BOOL:
      return Array.from(bytes);
    case DataType.INT8:
      return Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    default:
      return Array.from(tensorToFloat32(t, bytes));
  }
}

function initializer(m: LoadedModel, name: string): TensorProto {
  const t = m.initializers.get(name);
  if (!t) throw new LobesError(`no initializer named ${JSON.stringify(name)}`, { file: m.file });
  return t;
}

/**
 * The bytes of an initializer (little-endian, ONNX layout): a view of inline raw data, a
 * range read of external data, or the typed fields converted to bytes.
 */
export function readInitializerBytes(m: LoadedModel, name: string): Uint8Array {
  return tensorBytes(initializer(m, name), m.dir, m.file);
}

/** An initializer as float32 (fp32/fp16/bf16/fp64). */
export function readInitializerFloat32(m: LoadedModel, name: string): Float32Array {
  const t = initializer(m, name);
  return tensorToFloat32(t, tensorBytes(t, m.dir, m.file), `${basename(m.file)}: ${name}`);
}
