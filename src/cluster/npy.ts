/**
 * NumPy .npy files: the 6-byte magic "\x93NUMPY", a major and minor version byte, the
 * header length (uint16 LE in version 1, uint32 LE in versions 2 and 3), then an ASCII
 * (v1, v2) or UTF-8 (v3) Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2000, 4096), }
 * padded with spaces and a newline, then the raw array in C order.
 *
 * lobes reads little-endian float arrays ('<f2', '<f4', '<f8') of rank 1 or 2 and
 * returns float32. Fortran order, big-endian and non-float dtypes are errors.
 */
import { LobesError } from '../util/errors.js';
import { halfArrayToFloat } from '../util/half.js';
import { RangeFile } from '../util/io.js';

export interface NpyHeader {
  version: [number, number];
  descr: string;
  fortranOrder: boolean;
  shape: number[];
  /** Byte offset of the array data. */
  dataOffset: number;
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
const ITEM_BYTES: Record<string, number> = { '<f2': 2, '<f4': 4, '<f8': 8 };
/** The longest header read: magic, version, a 4-byte length and 64 KiB of dict (numpy writes far less). */
const MAX_HEADER_BYTES = 65536 + 12;

/** Parse the header of an .npy file held in `bytes` (at least the header must be present). */
export function parseNpyHeader(bytes: Uint8Array, file = '.npy'): NpyHeader {
  if (bytes.length < 10 || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw new LobesError('not a .npy file: the magic string \\x93NUMPY is missing', { file, where: 'byte 0' });
  }
  const major = bytes[6];
  const minor = bytes[7];
  let hlen: number;
  let start: number;
  if (major === 1) {
    hlen = bytes[8] | (bytes[9] << 8);
    start = 10;
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) throw new LobesError('truncated .npy header', { file, where: 'byte 8' });
    hlen = (bytes[8] | (bytes[9] << 8) | (bytes[10] << 16)) + bytes[11] * 16777216;
    start = 12;
  } else {
    throw new LobesError(`unsupported .npy format version ${major}.${minor} (1.0, 2.0 and 3.0 are read)`, { file,
      where: 'byte 6' });
  }
  if (start + hlen > bytes.length)
    throw new LobesError(`.npy header declares ${hlen} bytes but the file is shorter`, { file,
      where: `byte ${start - 2}` });
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + hlen));
  const where = 'header';
  const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(text)?.[1];
  const fo = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(text)?.[1];
  const shapeText = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(text)?.[1];
  if (descr === undefined || fo === undefined || shapeText === undefined) {
    throw new LobesError(`.npy header lacks descr, fortran_order or shape: ${JSON.stringify(text.trim())}`, { file,
      where });
  }
  const shape = shapeText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => {
      const v = Number(s.replace(/L$/, ''));
      if (!Number.isInteger(v) || v < 0)
        throw new LobesError(`.npy shape has a bad dimension ${JSON.stringify(s)}`, { file, where });
      return v;
    });
  return { version: [major, minor], descr, fortranOrder: fo === 'True', shape, dataOffset: start + hlen };
}

/** Decode the data of an .npy file to float32 given its header. */
function decodeNpyData(h: NpyHeader, data: Uint8Array, file: string): Float32Array {
  const aligned = data.byteOffset % 8 === 0 ? data : data.slice();
  const n = h.shape.reduce((a, b) => a * b, 1);
  switch (h.descr) {
    case '<f4':
      return new Float32Array(aligned.buffer, aligned.byteOffset, n);
    case '<f8':
      return Float32Array.from(new Float64Array(aligned.buffer, aligned.byteOffset, n));
    case '<f2':
      return halfArrayToFloat(new Uint16Array(aligned.buffer, aligned.byteOffset, n));
    default:
      throw new LobesError(`unsupported dtype ${h.descr}`, { file });
  }
}

function checkHeader(h: NpyHeader, file: string, available: number): void {
  if (h.fortranOrder) {
    throw new LobesError('array is stored in Fortran order; lobes reads C-order arrays', { file, where: 'header',
      hint: 'save np.ascontiguousarray(x) instead' });
  }
  if (!(h.descr in ITEM_BYTES)) {
    throw new LobesError(
      `unsupported dtype ${JSON.stringify(h.descr)} (little-endian float '<f2', '<f4' or '<f8' is needed)`,
      { file, where: 'header', hint: "save x.astype('<f4')" },
    );
  }
  if (h.shape.length !== 1 && h.shape.length !== 2) {
    throw new LobesError(`array has shape (${h.shape.join(', ')}); a matrix [N, d] is needed`, { file,
      where: 'header' });
  }
  const need = h.shape.reduce((a, b) => a * b, 1) * ITEM_BYTES[h.descr];
  if (available < need) {
    throw new LobesError(
      `shape (${h.shape.join(', ')}) of ${h.descr} needs ${need} data bytes, the file has ${available}`,
      { file, where: `byte ${h.dataOffset}` },
    );
  }
}

/** Parse a whole .npy file held in memory. */
export function parseNpy(bytes: Uint8Array, file = '.npy'): { shape: number[]; data: Float32Array; header: NpyHeader } {
  const header = parseNpyHeader(bytes, file);
  checkHeader(header, file, bytes.length - header.dataOffset);
  const need = header.shape.reduce((a, b) => a * b, 1) * ITEM_BYTES[header.descr];
  const data = decodeNpyData(header, bytes.subarray(header.dataOffset, header.dataOffset + need), file);
  return { shape: header.shape, data, header };
}

/** Read an .npy file from disk as float32 (a rank-1 array is read as [N, 1]). */
export function readNpy(file: string): { rows: number; cols: number; data: Float32Array } {
  const f = RangeFile.open(file, '.npy file');
  let header: NpyHeader;
  let data: Float32Array;
  try {
    const size = f.size;
    header = parseNpyHeader(f.read(0, Math.min(size, MAX_HEADER_BYTES)), file);
    checkHeader(header, file, size - header.dataOffset);
    const need = header.shape.reduce((a, b) => a * b, 1) * ITEM_BYTES[header.descr];
    data = decodeNpyData(header, f.read(header.dataOffset, need), file);
  } finally {
    f.close();
  }
  const rows = header.shape[0];
  const cols = header.shape.length === 2 ? header.shape[1] : 1;
  return { rows, cols, data };
}

/** Encode a float32 or float64 C-order matrix as .npy (version 1.0) bytes. */
export function encodeNpy(data: Float32Array | Float64Array, shape: number[]): Uint8Array {
  const descr = data instanceof Float64Array ? '<f8' : '<f4';
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${
    shape.length === 1 ? ',' : ''
  }), }`;
  const total = 10 + dict.length + 1;
  dict += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const out = new Uint8Array(10 + dict.length + data.byteLength);
  out.set(MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  out[8] = dict.length & 0xff;
  out[9] = dict.length >> 8;
  for (let i = 0; i < dict.length; i++) out[10 + i] = dict.charCodeAt(i);
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 10 + dict.length);
  return out;
}
