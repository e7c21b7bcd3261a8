/**
 * GGML tensor types as GGUF files store them: the id table (every id GGML has assigned, with
 * its block size and bytes per block, so that errors can name types lobes does not decode)
 * and dequantization of the block formats to float32.
 *
 * A quantized tensor is a sequence of blocks along its rows: each block encodes `blockSize`
 * consecutive values of one row in `typeSize` bytes (half-precision scales first or last, then
 * packed integer codes). The decoders below follow the block layouts of llama.cpp's
 * ggml-quants and produce the same float32 values, bit for bit, as the `gguf` Python
 * package's `gguf.quants.dequantize`: every product of a half scale and a small integer code
 * is exact in float32, so the only rounding is where the reference rounds too.
 *
 * Everything works on whole blocks of a byte range, so a tensor can be decoded a few rows at
 * a time (see `GgufFile.dequantize`). Memory is the output plus nothing per element.
 */
import { LobesError, type ErrorPlace } from '../util/errors.js';
import { halfArrayToFloat } from '../util/half.js';

/** One GGML tensor type. */
export interface GgmlTypeInfo {
  /** The id stored in a GGUF tensor info. */
  id: number;
  /** GGML's name for it (Q4_K, F16, ...). */
  name: string;
  /** Values per block (1 for plain types; 0 for ids GGML has removed). */
  blockSize: number;
  /** Bytes per block (0 for removed ids). */
  typeSize: number;
  /** Whether `dequantizeBlocks` decodes it. */
  dequantizable: boolean;
}

/** Decodes nb whole blocks of one type from src into out (n = nb × blockSize values). */
type Decoder = (src: Uint8Array, out: Float32Array, nb: number, n: number) => void;

/** One registration: a type's id, name, block geometry and, when lobes decodes it, its decoder. */
interface Registered<N extends string = string, I extends number = number> extends GgmlTypeInfo {
  id: I;
  name: N;
  decode: Decoder | null;
}

function ggml<const I extends number, const N extends string>(id: I, name: N, blockSize: number, typeSize: number,
  decode?: Decoder): Registered<N, I>
{
  return { id, name, blockSize, typeSize, dequantizable: decode !== undefined, decode: decode ?? null };
}

const QK_K = 256;

/**
 * The registry: every id GGML has assigned, each registered once (removed ids keep their old
 * name with block size 0). GgmlType, GGML_TYPES, DEQUANTIZABLE and dequantizeBlocks' dispatch
 * are all read from it, so a type lobes learns to decode is one line here plus its decoder.
 */
const REGISTRY = [
  ggml(0, 'F32', 1, 4, f32),
  ggml(1, 'F16', 1, 2, f16),
  ggml(2, 'Q4_0', 32, 2 + 16, q4_0),
  ggml(3, 'Q4_1', 32, 2 + 2 + 16, q4_1),
  ggml(4, 'Q4_2', 0, 0),
  ggml(5, 'Q4_3', 0, 0),
  ggml(6, 'Q5_0', 32, 2 + 4 + 16, q5_0),
  ggml(7, 'Q5_1', 32, 2 + 2 + 4 + 16, q5_1),
  ggml(8, 'Q8_0', 32, 2 + 32, q8_0),
  ggml(9, 'Q8_1', 32, 4 + 4 + 32),
  ggml(10, 'Q2_K', QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, q2_k),
  ggml(11, 'Q3_K', QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, q3_k),
  ggml(12, 'Q4_K', QK_K, 2 + 2 + 12 + QK_K / 2, q4_k),
  ggml(13, 'Q5_K', QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2, q5_k),
  ggml(14, 'Q6_K', QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, q6_k),
  ggml(15, 'Q8_K', QK_K, 4 + QK_K + QK_K / 8),
  ggml(16, 'IQ2_XXS', QK_K, 2 + QK_K / 4),
  ggml(17, 'IQ2_XS', QK_K, 2 + QK_K / 4 + QK_K / 32),
  ggml(18, 'IQ3_XXS', QK_K, 2 + QK_K / 4 + QK_K / 8),
  ggml(19, 'IQ1_S', QK_K, 2 + QK_K / 8 + QK_K / 16),
  ggml(20, 'IQ4_NL', 32, 2 + 16),
  ggml(21, 'IQ3_S', QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
  ggml(22, 'IQ2_S', QK_K, 2 + QK_K / 4 + QK_K / 16),
  ggml(23, 'IQ4_XS', QK_K, 2 + 2 + QK_K / 2 + QK_K / 64),
  ggml(24, 'I8', 1, 1),
  ggml(25, 'I16', 1, 2),
  ggml(26, 'I32', 1, 4),
  ggml(27, 'I64', 1, 8),
  ggml(28, 'F64', 1, 8),
  ggml(29, 'IQ1_M', QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
  ggml(30, 'BF16', 1, 2, bf16),
  ggml(31, 'Q4_0_4_4', 0, 0),
  ggml(32, 'Q4_0_4_8', 0, 0),
  ggml(33, 'Q4_0_8_8', 0, 0),
  ggml(34, 'TQ1_0', QK_K, 2 + 4 * 13),
  ggml(35, 'TQ2_0', QK_K, 2 + QK_K / 4),
  ggml(36, 'IQ4_NL_4_4', 0, 0),
  ggml(37, 'IQ4_NL_4_8', 0, 0),
  ggml(38, 'IQ4_NL_8_8', 0, 0),
  ggml(39, 'MXFP4', 32, 1 + 16),
  ggml(40, 'NVFP4', 64, 4 + 32),
  ggml(41, 'Q1_0', 128, 2 + 16),
] as const;

/** GGML type ids by name (Q4_K → 12), for every registered type. */
export const GgmlType = Object.freeze(Object.fromEntries(REGISTRY.map((t) => [t.name, t.id]))) as {
  readonly [T in (typeof REGISTRY)[number] as T['name']]: T['id'];
};

/** Every GGML type id, in id order (gaps are ids GGML never assigned). */
export const GGML_TYPES: readonly GgmlTypeInfo[] = REGISTRY.map(({ id, name, blockSize, typeSize, dequantizable }) => ({
  id,
  name,
  blockSize,
  typeSize,
  dequantizable,
}));

const BY_ID = new Map(GGML_TYPES.map((t) => [t.id, t]));
const DECODERS = new Map<number, Decoder>(
  REGISTRY.flatMap((t: Registered) => (t.decode ? [[t.id, t.decode] as const] : [])),
);
const BY_NAME = new Map(GGML_TYPES.map((t) => [t.name, t]));

/** The type with this id, or undefined for an id GGML never assigned. */
export function ggmlType(id: number): GgmlTypeInfo | undefined {
  return BY_ID.get(id);
}

/** The type with this name (Q4_K, F16, ...), or undefined. */
export function ggmlTypeByName(name: string): GgmlTypeInfo | undefined {
  return BY_NAME.get(name);
}

/** A type's name for messages: its GGML name, or `type <id>` for an unknown id. */
export function ggmlTypeName(id: number): string {
  return BY_ID.get(id)?.name ?? `type ${id}`;
}

/** Names of the types `dequantizeBlocks` decodes, for messages. */
export const DEQUANTIZABLE = GGML_TYPES.filter((t) => t.dequantizable).map((t) => t.name);

/** fp16 bit pattern → float32 value, for every pattern (a 256 KiB table). */
const HALF = (() => {
  const all = new Uint16Array(65536);
  for (let i = 0; i < 65536; i++) all[i] = i;
  return halfArrayToFloat(all);
})();

/**
 * Bytes of `count` values of a type (count must be a multiple of the block size).
 * Throws for removed or unknown types.
 */
export function ggmlByteSize(type: number, count: number, place: ErrorPlace = {}): number {
  const t = BY_ID.get(type);
  if (!t || t.blockSize === 0)
    throw new LobesError(`GGML ${ggmlTypeName(type)} is ${t ? 'a type GGML has removed' : 'not a known GGML type'}`,
      place);
  if (count % t.blockSize !== 0)
    throw new LobesError(`${count} values of ${t.name} are not whole blocks of ${t.blockSize}`, place);
  return (count / t.blockSize) * t.typeSize;
}

/**
 * Dequantize whole blocks of a GGML type to float32.
 *
 * @param type GGML type id (see `GGML_TYPES`; `DEQUANTIZABLE` lists the decoded ones).
 * @param src  n blocks: n * typeSize bytes, at any byte offset.
 * @param out  receives n * blockSize values (allocated when omitted).
 * @param place file and tensor for error messages.
 * @returns out
 */
export function dequantizeBlocks(type: number, src: Uint8Array, out?: Float32Array,
  place: ErrorPlace = {}): Float32Array
{
  const t = BY_ID.get(type);
  if (!t || !t.dequantizable) {
    const what = t ? (t.blockSize === 0 ? `${t.name}, a type GGML has removed,` : t.name) : `GGML type id ${type}`;
    throw new LobesError(`cannot dequantize ${what}: lobes decodes ${DEQUANTIZABLE.join(', ')}`, {
      ...place,
      hint: place.hint ??
        're-quantize the model with llama-quantize to one of these (Q4_K_M, Q8_0 or F16), or convert it from the original checkpoint',
    });
  }
  if (src.byteLength % t.typeSize !== 0) {
    throw new LobesError(`${src.byteLength} bytes are not whole ${t.name} blocks of ${t.typeSize} bytes`, place);
  }
  const nb = src.byteLength / t.typeSize;
  const n = nb * t.blockSize;
  if (!out) out = new Float32Array(n);
  else if (out.length < n)
    throw new LobesError(`output holds ${out.length} values but ${nb} ${t.name} blocks decode to ${n}`, place);
  DECODERS.get(t.id)!(src, out, nb, n);
  return out;
}

function f32(src: Uint8Array, out: Float32Array, _nb: number, n: number): void {
  new Uint8Array(out.buffer, out.byteOffset, n * 4).set(src);
}

function f16(src: Uint8Array, out: Float32Array, _nb: number, n: number): void {
  for (let i = 0, o = 0; i < n; i++, o += 2) out[i] = HALF[src[o] | (src[o + 1] << 8)];
}

function bf16(src: Uint8Array, out: Float32Array, _nb: number, n: number): void {
  const o32 = new Uint32Array(out.buffer, out.byteOffset, n);
  for (let i = 0, o = 0; i < n; i++, o += 2) o32[i] = ((src[o] | (src[o + 1] << 8)) << 16) >>> 0;
}

function half(src: Uint8Array, o: number): number {
  return HALF[src[o] | (src[o + 1] << 8)];
}

// Q4_0 (18 bytes): d:f16, 16 bytes of codes. Byte j holds value j (low nibble) and value
// j + 16 (high nibble); x = d * (q - 8).
function q4_0(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 18;
    const d = half(src, o);
    const y = b * 32;
    for (let j = 0; j < 16; j++) {
      const x = src[o + 2 + j];
      out[y + j] = d * ((x & 15) - 8);
      out[y + j + 16] = d * ((x >> 4) - 8);
    }
  }
}

// Q4_1 (20 bytes): d:f16, m:f16, 16 bytes of codes as Q4_0; x = d * q + m.
function q4_1(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 20;
    const d = half(src, o);
    const m = half(src, o + 2);
    const y = b * 32;
    for (let j = 0; j < 16; j++) {
      const x = src[o + 4 + j];
      out[y + j] = d * (x & 15) + m;
      out[y + j + 16] = d * (x >> 4) + m;
    }
  }
}

// Q5_0 (22 bytes): d:f16, qh:u32 (bit i is the fifth bit of value i), 16 bytes of low
// nibbles as Q4_0; x = d * (q - 16).
function q5_0(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 22;
    const d = half(src, o);
    const qh = (src[o + 2] | (src[o + 3] << 8) | (src[o + 4] << 16) | (src[o + 5] << 24)) >>> 0;
    const y = b * 32;
    for (let j = 0; j < 16; j++) {
      const x = src[o + 6 + j];
      out[y + j] = d * (((x & 15) | (((qh >>> j) & 1) << 4)) - 16);
      out[y + j + 16] = d * (((x >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16);
    }
  }
}

// Q5_1 (24 bytes): d:f16, m:f16, qh:u32, 16 bytes of low nibbles; x = d * q + m.
function q5_1(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 24;
    const d = half(src, o);
    const m = half(src, o + 2);
    const qh = (src[o + 4] | (src[o + 5] << 8) | (src[o + 6] << 16) | (src[o + 7] << 24)) >>> 0;
    const y = b * 32;
    for (let j = 0; j < 16; j++) {
      const x = src[o + 8 + j];
      out[y + j] = d * ((x & 15) | (((qh >>> j) & 1) << 4)) + m;
      out[y + j + 16] = d * ((x >> 4) | (((qh >>> (j + 16)) & 1) << 4)) + m;
    }
  }
}

// Q8_0 (34 bytes): d:f16, 32 int8 codes; x = d * q.
function q8_0(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 34;
    const d = half(src, o);
    const y = b * 32;
    for (let j = 0; j < 32; j++) out[y + j] = d * ((src[o + 2 + j] << 24) >> 24);
  }
}

// Q2_K (84 bytes): 16 scale bytes (low nibble: scale, high nibble: min, one per 16 values),
// 64 bytes of 2-bit codes, d:f16, dmin:f16. Value e = 128h + 32s + l (h < 2, s < 4, l < 32)
// is bits 2s..2s+1 of code byte 32h + l; x = d * sc * q - dmin * mn.
function q2_k(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 84;
    const d = half(src, o + 80);
    const dmin = half(src, o + 82);
    const y = b * 256;
    for (let sub = 0; sub < 16; sub++) {
      const sc = src[o + sub];
      const dl = d * (sc & 15);
      const ml = dmin * (sc >> 4);
      const q0 = o + 16 + (sub >> 3) * 32 + (sub & 1) * 16;
      const shift = ((sub >> 1) & 3) * 2;
      const y0 = y + sub * 16;
      for (let l = 0; l < 16; l++) out[y0 + l] = dl * ((src[q0 + l] >> shift) & 3) - ml;
    }
  }
}

// Q3_K (110 bytes): hmask[32] (bit v of byte l is the high bit of value 32v + l), 64 bytes of
// 2-bit low codes laid out as Q2_K, 12 bytes of sixteen 6-bit scales (low nibbles in bytes
// 0..7, the two high bits in bytes 8..11), d:f16. q = low - 4 when the high bit is clear,
// x = d * (scale - 32) * q.
function q3_k(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 110;
    const d = half(src, o + 108);
    const sb = o + 96;
    const y = b * 256;
    for (let sub = 0; sub < 16; sub++) {
      const lo = sub < 8 ? src[sb + sub] & 15 : src[sb + sub - 8] >> 4;
      const hi = (src[sb + 8 + (sub & 3)] >> (2 * (sub >> 2))) & 3;
      const dl = d * ((lo | (hi << 4)) - 32);
      const lq = (sub & 1) * 16;
      const q0 = o + 32 + (sub >> 3) * 32 + lq;
      const shift = ((sub >> 1) & 3) * 2;
      const hbit = sub >> 1;
      const h0 = o + lq;
      const y0 = y + sub * 16;
      for (let l = 0; l < 16; l++) {
        const q = ((src[q0 + l] >> shift) & 3) - (((src[h0 + l] >> hbit) & 1) ? 0 : 4);
        out[y0 + l] = dl * q;
      }
    }
  }
}

// The eight 6-bit (scale, min) pairs of Q4_K / Q5_K packed in 12 bytes at s: pairs 0..3 are
// the low 6 bits of bytes 0..3 (scale) and 4..7 (min); pairs 4..7 take their low 4 bits from
// bytes 8..11 (scale: low nibble, min: high nibble) and their top 2 bits from the top 2 bits
// of bytes 0..3 (scale) and 4..7 (min).
function scaleMinK4(src: Uint8Array, s: number, j: number, sc: Int32Array): void {
  if (j < 4) {
    sc[0] = src[s + j] & 63;
    sc[1] = src[s + j + 4] & 63;
  } else {
    sc[0] = (src[s + j + 4] & 15) | ((src[s + j - 4] >> 6) << 4);
    sc[1] = (src[s + j + 4] >> 4) | ((src[s + j] >> 6) << 4);
  }
}

// Q4_K (144 bytes): d:f16, dmin:f16, 12 bytes of scales/mins, 128 bytes of codes. Sub-block
// j (32 values) is the low (j even) or high (j odd) nibbles of code bytes 32*(j>>1) ...+31;
// x = d * sc_j * q - dmin * m_j.
function q4_k(src: Uint8Array, out: Float32Array, nb: number): void {
  const sm = new Int32Array(2);
  for (let b = 0; b < nb; b++) {
    const o = b * 144;
    const d = half(src, o);
    const dmin = half(src, o + 2);
    const y = b * 256;
    for (let j = 0; j < 8; j++) {
      scaleMinK4(src, o + 4, j, sm);
      const ds = d * sm[0];
      const dm = dmin * sm[1];
      const q0 = o + 16 + (j >> 1) * 32;
      const shift = (j & 1) * 4;
      const y0 = y + j * 32;
      for (let l = 0; l < 32; l++) out[y0 + l] = ds * ((src[q0 + l] >> shift) & 15) - dm;
    }
  }
}

// Q5_K (176 bytes): d, dmin, 12 bytes of scales/mins as Q4_K, qh[32] (bit j of byte l is the
// fifth bit of value 32j + l), 128 bytes of low nibbles as Q4_K.
function q5_k(src: Uint8Array, out: Float32Array, nb: number): void {
  const sm = new Int32Array(2);
  for (let b = 0; b < nb; b++) {
    const o = b * 176;
    const d = half(src, o);
    const dmin = half(src, o + 2);
    const y = b * 256;
    for (let j = 0; j < 8; j++) {
      scaleMinK4(src, o + 4, j, sm);
      const ds = d * sm[0];
      const dm = dmin * sm[1];
      const q0 = o + 48 + (j >> 1) * 32;
      const shift = (j & 1) * 4;
      const h0 = o + 16;
      const y0 = y + j * 32;
      for (let l = 0; l < 32; l++)
        out[y0 + l] = ds * (((src[q0 + l] >> shift) & 15) | (((src[h0 + l] >> j) & 1) << 4)) - dm;
    }
  }
}

// Q6_K (210 bytes): 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales
// (one per 16 values), d:f16. Value e = 128h + r: low nibble of ql[64h + r % 64] (r < 64)
// or its high nibble (r >= 64); high bits 2*(r>>5) of qh[32h + r % 32];
// x = d * scale * (q - 32).
function q6_k(src: Uint8Array, out: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 210;
    const d = half(src, o + 208);
    const y = b * 256;
    for (let sub = 0; sub < 16; sub++) {
      const dl = d * ((src[o + 192 + sub] << 24) >> 24);
      const e0 = sub * 16;
      const h = e0 >> 7;
      const r0 = e0 & 127;
      const ql0 = o + h * 64 + (r0 & 63);
      const lshift = (r0 >> 6) * 4;
      const qh0 = o + 128 + h * 32 + (r0 & 31);
      const hshift = (r0 >> 5) * 2;
      const y0 = y + e0;
      for (let l = 0; l < 16; l++) {
        const q = (((src[ql0 + l] >> lshift) & 15) | (((src[qh0 + l] >> hshift) & 3) << 4)) - 32;
        out[y0 + l] = dl * q;
      }
    }
  }
}
