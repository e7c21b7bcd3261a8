/**
 * A WebAssembly SIMD kernel for the weight pass's hot loop on dense rows in the HF layout:
 *
 *   acc[j] = fl32(acc[j] + |W[r, j]|)   for r in rows, in order; acc in float32
 *
 * bf16 -> f32 is a 16-bit shift and |.| clears the sign bit, so each row's values are exact
 * float32 numbers; each accumulator adds the rows one after the other with float32 rounding,
 * which is exactly what the JavaScript loops do (Float32Array accumulators): results are
 * bit-identical. The module (about 600 bytes) is assembled here by hand; when WebAssembly
 * SIMD is not available, simdKernel() returns null and the JavaScript loops run.
 *
 * Exports, all (src, nrows, rowBytes, nvec, acc) -> (), addresses in the imported memory:
 *   bf16, bf16x4: 8 values per vector    f32, f32x4: 4 values per vector
 * and addf64(dst, src, nvec): dst[i] += src[i] over 2 * nvec float64 values (the group sums of
 * x^2 in src/wanda/stats.ts).
 * The x4 variants take four rows per step (nrows a multiple of 4), adding rows r, r+1, r+2,
 * r+3 in that order to each accumulator before storing it: the same additions, in the same
 * order, with a quarter of the accumulator traffic.
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
const V128_AND = simd(0x4e);
const I32X4_EXTEND_LOW_I16X8_U = simd(0xa9);
const I32X4_EXTEND_HIGH_I16X8_U = simd(0xaa);
const I32X4_SHL = simd(0xab);
const F32X4_ABS = simd(0xe0);
const F64X2_ADD = simd(0xf0);
const F32X4_ADD = simd(0xe4);

// Parameters and locals: row pointers P[0..3], source vectors V[0..3], values X[0..3].
const SRC = 0, NROWS = 1, ROWBYTES = 2, NVEC = 3, ACC = 4;
const R = 5, J = 6, A = 7;
const P = [8, 9, 10, 11];
const V = [12, 13, 14, 15];
const X = [16, 17, 18, 19];
const get = (i: number) => [LOCAL_GET, i];
const set = (i: number) => [LOCAL_SET, i];
const MASK = V128_CONST(Array.from({ length: 16 }, (_, i) => (i % 4 === 3 ? 0x7f : 0xff)));

/** acc[a + off] (4 floats) += X[0], then X[1], ... (k rows, in row order). */
function addRows(off: number, k: number): number[] {
  const adds: number[] = [];
  for (let t = 0; t < k; t++) adds.push(...get(X[t]), ...F32X4_ADD);
  return [...get(A), ...get(A), ...V128_LOAD(off), ...adds, ...V128_STORE(off)];
}

/** Loops over rows (k at a time) and vectors; `inner` handles one vector position of k rows. */
function body(inner: number[], srcStep: number, accStep: number, k: number): number[] {
  const locals = vec([[7, 0x7f], [8, 0x7b]]);
  const setPtrs: number[] = [];
  for (let t = 0; t < k; t++) {
    setPtrs.push(...get(SRC), ...get(R), ...(t ? [I32_CONST, ...sleb(t), I32_ADD] : []), ...get(ROWBYTES), I32_MUL, I32_ADD, ...set(P[t]));
  }
  const stepPtrs: number[] = [];
  for (let t = 0; t < k; t++) stepPtrs.push(...get(P[t]), I32_CONST, ...sleb(srcStep), I32_ADD, ...set(P[t]));
  const code = [
    LOOP, VOID,
    ...setPtrs,
    ...get(ACC), ...set(A),
    ...get(NVEC), ...set(J),
    LOOP, VOID,
    ...inner,
    ...stepPtrs,
    ...get(A), I32_CONST, ...sleb(accStep), I32_ADD, ...set(A),
    ...get(J), I32_CONST, 1, I32_SUB, LOCAL_TEE, J, BR_IF, 0,
    END,
    ...get(R), I32_CONST, ...sleb(k), I32_ADD, LOCAL_TEE, R, ...get(NROWS), I32_LT_U, BR_IF, 0,
    END,
    END,
  ];
  const b = [...locals, ...code];
  return [...leb(b.length), ...b];
}

/** bf16 -> |f32| for the low or high 4 lanes of V[t] into X[t]. */
const bf16Half = (ext: number[], t: number) => [...get(V[t]), ...ext, I32_CONST, 16, ...I32X4_SHL, ...MASK, ...V128_AND, ...set(X[t])];
function bf16Inner(k: number): number[] {
  const code: number[] = [];
  for (let t = 0; t < k; t++) code.push(...get(P[t]), ...V128_LOAD(0), ...set(V[t]));
  for (let t = 0; t < k; t++) code.push(...bf16Half(I32X4_EXTEND_LOW_I16X8_U, t));
  code.push(...addRows(0, k));
  for (let t = 0; t < k; t++) code.push(...bf16Half(I32X4_EXTEND_HIGH_I16X8_U, t));
  code.push(...addRows(16, k));
  return code;
}
function f32Inner(k: number): number[] {
  const code: number[] = [];
  for (let t = 0; t < k; t++) code.push(...get(P[t]), ...V128_LOAD(0), ...F32X4_ABS, ...set(X[t]));
  code.push(...addRows(0, k));
  return code;
}

/** addf64(dst, src, nvec, _, _): dst[i] += src[i] for 2 * nvec float64 values (nvec >= 1). */
function addf64Body(): number[] {
  const DST = 0, SRC2 = 1, N = 2;
  const code = [
    LOOP, VOID,
    ...get(DST), ...get(DST), ...V128_LOAD(0), ...get(SRC2), ...V128_LOAD(0), ...F64X2_ADD, ...V128_STORE(0),
    ...get(DST), I32_CONST, 16, I32_ADD, ...set(DST),
    ...get(SRC2), I32_CONST, 16, I32_ADD, ...set(SRC2),
    ...get(N), I32_CONST, 1, I32_SUB, LOCAL_TEE, N, BR_IF, 0,
    END,
    END,
  ];
  const b = [...vec([]), ...code];
  return [...leb(b.length), ...b];
}

function moduleBytes(): Uint8Array<ArrayBuffer> {
  const type = section(1, vec([[0x60, ...vec([[0x7f], [0x7f], [0x7f], [0x7f], [0x7f]]), ...vec([])]]));
  const imp = section(2, vec([[...name('env'), ...name('mem'), 0x02, 0x00, 0x01]]));
  const func = section(3, vec([[0x00], [0x00], [0x00], [0x00], [0x00]]));
  const exp = section(7, vec([[...name('bf16'), 0x00, 0x00], [...name('bf16x4'), 0x00, 0x01], [...name('f32'), 0x00, 0x02], [...name('f32x4'), 0x00, 0x03], [...name('addf64'), 0x00, 0x04]]));
  const code = section(10, vec([body(bf16Inner(1), 16, 32, 1), body(bf16Inner(4), 16, 32, 4), body(f32Inner(1), 16, 16, 1), body(f32Inner(4), 16, 16, 4), addf64Body()]));
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...type, ...imp, ...func, ...exp, ...code]);
}

/** The parts of the WebAssembly API used here (the build's lib has no WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Memory: new (d: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (m: object, imports: object) => { exports: Record<string, unknown> };
}

export type RowKernel = (src: number, nrows: number, rowBytes: number, nvec: number, acc: number) => void;

export interface SimdKernel {
  memory: WasmMemory;
  bf16: RowKernel;
  f32: RowKernel;
  /** Four rows per step (nrows a multiple of 4): the same additions in the same order. */
  bf16x4: RowKernel;
  f32x4: RowKernel;
  /** dst[i] += src[i] for 2 * nvec float64 values at byte addresses dst, src (nvec >= 1). */
  addf64: (dst: number, src: number, nvec: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after). */
  ensure(bytes: number): void;
}

let cached: SimdKernel | null | undefined;

/** The SIMD kernel of this thread, or null when WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set). */
export function simdKernel(): SimdKernel | null {
  if (cached === undefined) cached = createSimd();
  return cached;
}

/** A new instance with its own memory (for callers that keep data in it across calls). */
export function createSimd(): SimdKernel | null {
  if (process.env.LOBES_NO_SIMD) return null;
  try {
    const bytes = moduleBytes();
    const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
    if (!wasm || !wasm.validate(bytes)) return null;
    const memory = new wasm.Memory({ initial: 1 });
    const inst = new wasm.Instance(new wasm.Module(bytes), { env: { mem: memory } });
    const ex = inst.exports as unknown as { bf16: RowKernel; f32: RowKernel; bf16x4: RowKernel; f32x4: RowKernel; addf64: RowKernel };
    return {
      memory,
      bf16: ex.bf16,
      f32: ex.f32,
      bf16x4: ex.bf16x4,
      f32x4: ex.f32x4,
      addf64: (dst: number, src: number, nvec: number) => ex.addf64(dst, src, nvec, 0, 0),
      ensure(n: number) {
        const have = memory.buffer.byteLength;
        if (n > have) memory.grow(Math.ceil((n - have) / 65536));
      },
    };
  } catch {
    return null;
  }
}
