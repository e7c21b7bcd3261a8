/**
 * Rows of a stored weight matrix as float32, whatever its storage (dense in either layout,
 * MatMulNBits blocks, GGML blocks): what weight resolution compares against the capture
 * points' inputs.
 */
import { LobesError } from '../util/errors.js';
import { bf16ArrayToFloat, halfArrayToFloat } from '../util/half.js';
import { dequantizeBlocks } from '../formats/ggml.js';
import { DTYPE_SIZE, RangeReader, dequantRows, expectedBytes, ggmlRowBytes, nbitsParams, type DenseDtype,
  type MatrixRef } from './kernel.js';

/**
 * Read a dense or NBits matrix's rows [r0, r0+rows) of W[d_out, d_in] as float32 (weight resolution).
 * For the 'in_out' layout the rows are gathered column-wise from the stored [d_in, d_out] rows.
 */
export class MatrixRowReader {
  private readonly reader: RangeReader;
  private nb: ReturnType<typeof nbitsParams> | null = null;
  private inOut: Float32Array | null = null;
  constructor(private readonly m: MatrixRef) {
    this.reader = new RangeReader(m.source.data, m.source.tensor);
    const want = expectedBytes(m);
    if (this.reader.byteLength !== want) {
      this.reader.close();
      throw new LobesError(`holds ${this.reader.byteLength} bytes but [d_out=${m.dOut}, d_in=${m.dIn}] needs ${want}`, {
        where: `tensor ${JSON.stringify(m.source.tensor)}`,
      });
    }
    if (m.source.kind === 'nbits') this.nb = nbitsParams(m, m.source);
  }
  rows(r0: number, nr: number, out: Float32Array): Float32Array {
    const m = this.m;
    const s = m.source;
    const o = out.subarray(0, nr * m.dIn);
    if (s.kind === 'ggml') {
      const rowBytes = ggmlRowBytes(m, s);
      dequantizeBlocks(s.type, this.reader.read(r0 * rowBytes, nr * rowBytes, new Uint8Array(nr * rowBytes)), o, {
        where: `tensor ${JSON.stringify(s.tensor)}`,
      });
      return o;
    }
    if (s.kind === 'nbits') {
      const p = this.nb!;
      const rowBytes = p.nBlocks * p.blobSize;
      const bytes = this.reader.read(r0 * rowBytes, nr * rowBytes, new Uint8Array(nr * rowBytes));
      dequantRows(bytes, r0, nr, m.dIn, s.bits, s.blockSize, p.nBlocks, p.blobSize, p.scales, p.zeros, o);
      return o;
    }
    const es = DTYPE_SIZE[s.dtype];
    if (s.layout === 'out_in') {
      const bytes = this.reader.read(r0 * m.dIn * es, nr * m.dIn * es, new Uint8Array(nr * m.dIn * es));
      decodeInto(bytes, s.dtype, o);
      return o;
    }
    // in_out: decode the whole matrix once (used for small/inline ONNX weights), then gather.
    if (!this.inOut) {
      this.inOut = new Float32Array(m.dIn * m.dOut);
      decodeInto(this.reader.readAll(), s.dtype, this.inOut);
    }
    const T = this.inOut;
    for (let r = 0; r < nr; r++) for (let j = 0; j < m.dIn; j++) o[r * m.dIn + j] = T[j * m.dOut + r0 + r];
    return o;
  }
  close(): void {
    this.reader.close();
  }
}

function decodeInto(bytes: Uint8Array, dtype: DenseDtype, out: Float32Array): void {
  const a = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  if (dtype === 'F32') {
    out.set(new Float32Array(a.buffer, a.byteOffset, a.byteLength >> 2));
    return;
  }
  const u16 = new Uint16Array(a.buffer, a.byteOffset, a.byteLength >> 1);
  if (dtype === 'BF16') bf16ArrayToFloat(u16, out as Float32Array<ArrayBuffer>);
  else halfArrayToFloat(u16, out as Float32Array<ArrayBuffer>);
}
