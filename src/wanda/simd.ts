/**
 * A WebAssembly SIMD kernel for the weight pass's hot loop on dense rows in the HF layout:
 *
 *   acc[j] += |W[r, j]|   for r in rows, j < 8 * nvec (bf16) or 4 * nvec (f32), acc in float64
 *
 * bf16 -> f32 is a 16-bit shift, |.| clears the sign bit, f32 -> f64 is exact, and every row
 * is added in order in float64: the result is bit-identical to the plain JavaScript loop.
 * The module (about 300 bytes) is assembled here by hand; when WebAssembly SIMD is not
 * available, simdKernel() returns null and the JavaScript loop runs.
 *
 * Exports, all (src, nrows, rowBytes, nvec, acc) -> (), addresses in the imported memory:
 *   bf16, bf16x2: 8 values per vector    f32, f32x2: 4 values per vector
 * The x2 variants take two rows per step (nrows even), adding row r then row r+1 to each
 * accumulator before storing it: the same additions in the same order.
 */

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 (the immediate of i32.const). */
function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

function name(s: string): number[] {
  const b = [...Buffer.from(s, 'utf8')];
  return [...leb(b.length), ...b];
}

function section(id: number, content: number[]): number[] {
  return [id, ...leb(content.length), ...content];
}

function vec(items: number[][]): number[] {
  return [...leb(items.length), ...items.flat()];
}

// Opcodes.
const LOCAL_GET = 0x20, LOCAL_SET = 0x21, LOCAL_TEE = 0x22, I32_CONST = 0x41;
const I32_ADD = 0x6a, I32_SUB = 0x6b, I32_MUL = 0x6c, I32_LT_U = 0x49;
const LOOP = 0x03, VOID = 0x40, END = 0x0b, BR_IF = 0x0d;
const simd = (op: number) => [0xfd, ...leb(op)];
const V128_LOAD = (offset: number) => [...simd(0x00), 0x00, ...leb(offset)];
const V128_STORE = (offset: number) => [...simd(0x0b), 0x00, ...leb(offset)];
const V128_CONST = (bytes: number[]) => [...simd(0x0c), ...bytes];
const I8X16_SHUFFLE_HIGH_TO_LOW = [...simd(0x0d), 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
const V128_AND = simd(0x4e);
const F64X2_PROMOTE_LOW_F32X4 = simd(0x5f);
const I32X4_EXTEND_LOW_I16X8_U = simd(0xa9);
const I32X4_EXTEND_HIGH_I16X8_U = simd(0xaa);
const I32X4_SHL = simd(0xab);
const F32X4_ABS = simd(0xe0);
const F64X2_ADD = simd(0xf0);

// Parameters and locals.
const SRC = 0, NROWS = 1, ROWBYTES = 2, NVEC = 3, ACC = 4;
const R = 5, J = 6, P = 7, A = 8, Q = 9, V = 10, V2 = 11, LO = 12, LO2 = 13;
const get = (i: number) => [LOCAL_GET, i];
const set = (i: number) => [LOCAL_SET, i];
const MASK = V128_CONST(Array.from({ length: 16 }, (_, i) => (i % 4 === 3 ? 0x7f : 0xff)));

/**
 * acc[a+off] (2 doubles) += lanes 0,1 of each row's f32x4, acc[a+off+16] += lanes 2,3;
 * rows' values are in LO (and LO2 when two rows are done at once), added in row order.
 */
function addFour(off: number, two: boolean): number[] {
  const lo = [...get(LO), ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_ADD];
  const lo2 = two ? [...get(LO2), ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_ADD] : [];
  const hi = [...get(LO), ...get(LO), ...I8X16_SHUFFLE_HIGH_TO_LOW, ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_ADD];
  const hi2 = two ? [...get(LO2), ...get(LO2), ...I8X16_SHUFFLE_HIGH_TO_LOW, ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_ADD] : [];
  return [
    ...get(A), ...get(A), ...V128_LOAD(off), ...lo, ...lo2, ...V128_STORE(off),
    ...get(A), ...get(A), ...V128_LOAD(off + 16), ...hi, ...hi2, ...V128_STORE(off + 16),
  ];
}

/** Loops over rows (one or two at a time) and vectors; `inner` handles one vector position. */
function body(inner: number[], srcStep: number, accStep: number, two: boolean): number[] {
  const locals = vec([[5, 0x7f], [4, 0x7b]]);
  const code = [
    LOOP, VOID,
    ...get(SRC), ...get(R), ...get(ROWBYTES), I32_MUL, I32_ADD, ...set(P),
    ...get(P), ...get(ROWBYTES), I32_ADD, ...set(Q),
    ...get(ACC), ...set(A),
    ...get(NVEC), ...set(J),
    LOOP, VOID,
    ...inner,
    ...get(P), I32_CONST, ...sleb(srcStep), I32_ADD, ...set(P),
    ...get(Q), I32_CONST, ...sleb(srcStep), I32_ADD, ...set(Q),
    ...get(A), I32_CONST, ...sleb(accStep), I32_ADD, ...set(A),
    ...get(J), I32_CONST, 1, I32_SUB, LOCAL_TEE, J, BR_IF, 0,
    END,
    ...get(R), I32_CONST, two ? 2 : 1, I32_ADD, LOCAL_TEE, R, ...get(NROWS), I32_LT_U, BR_IF, 0,
    END,
    END,
  ];
  const b = [...locals, ...code];
  return [...leb(b.length), ...b];
}

const bf16Half = (ext: number[], dst: number, src: number) => [...get(src), ...ext, I32_CONST, 16, ...I32X4_SHL, ...MASK, ...V128_AND, ...set(dst)];
function bf16Inner(two: boolean): number[] {
  return [
    ...get(P), ...V128_LOAD(0), ...set(V),
    ...(two ? [...get(Q), ...V128_LOAD(0), ...set(V2)] : []),
    ...bf16Half(I32X4_EXTEND_LOW_I16X8_U, LO, V),
    ...(two ? bf16Half(I32X4_EXTEND_LOW_I16X8_U, LO2, V2) : []),
    ...addFour(0, two),
    ...bf16Half(I32X4_EXTEND_HIGH_I16X8_U, LO, V),
    ...(two ? bf16Half(I32X4_EXTEND_HIGH_I16X8_U, LO2, V2) : []),
    ...addFour(32, two),
  ];
}
function f32Inner(two: boolean): number[] {
  return [...get(P), ...V128_LOAD(0), ...F32X4_ABS, ...set(LO), ...(two ? [...get(Q), ...V128_LOAD(0), ...F32X4_ABS, ...set(LO2)] : []), ...addFour(0, two)];
}

function moduleBytes(): Uint8Array<ArrayBuffer> {
  const type = section(1, vec([[0x60, ...vec([[0x7f], [0x7f], [0x7f], [0x7f], [0x7f]]), ...vec([])]]));
  const imp = section(2, vec([[...name('env'), ...name('mem'), 0x02, 0x00, 0x01]]));
  const func = section(3, vec([[0x00], [0x00], [0x00], [0x00]]));
  const exp = section(7, vec([[...name('bf16'), 0x00, 0x00], [...name('bf16x2'), 0x00, 0x01], [...name('f32'), 0x00, 0x02], [...name('f32x2'), 0x00, 0x03]]));
  const code = section(10, vec([body(bf16Inner(false), 16, 64, false), body(bf16Inner(true), 16, 64, true), body(f32Inner(false), 16, 32, false), body(f32Inner(true), 16, 32, true)]));
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...type, ...imp, ...func, ...exp, ...code]);
}

export type RowKernel = (src: number, nrows: number, rowBytes: number, nvec: number, acc: number) => void;

export interface SimdKernel {
  memory: WebAssembly.Memory;
  bf16: RowKernel;
  f32: RowKernel;
  /** Two rows per step (nrows must be even): half the accumulator traffic, same order of additions. */
  bf16x2: RowKernel;
  f32x2: RowKernel;
  /** Make the memory at least `bytes` long (views must be re-made after). */
  ensure(bytes: number): void;
}

let cached: SimdKernel | null | undefined;

/** The SIMD kernel of this thread, or null when WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set). */
export function simdKernel(): SimdKernel | null {
  if (cached !== undefined) return cached;
  cached = null;
  if (process.env.LOBES_NO_SIMD) return cached;
  try {
    const bytes = moduleBytes();
    if (typeof WebAssembly === 'undefined' || !WebAssembly.validate(bytes)) return cached;
    const memory = new WebAssembly.Memory({ initial: 1 });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { mem: memory } });
    const ex = inst.exports as unknown as { bf16: RowKernel; f32: RowKernel; bf16x2: RowKernel; f32x2: RowKernel };
    cached = {
      memory,
      bf16: ex.bf16,
      f32: ex.f32,
      bf16x2: ex.bf16x2,
      f32x2: ex.f32x2,
      ensure(n: number) {
        const have = memory.buffer.byteLength;
        if (n > have) memory.grow(Math.ceil((n - have) / 65536));
      },
    };
  } catch {
    cached = null;
  }
  return cached;
}
