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
 * addf64(dst, src, nvec): dst[i] += src[i] over 2 * nvec float64 values (the group sums of
 * x^2 in src/wanda/stats.ts), addgroups (many addf64 into one destination at a time), and poolrow(c, s, nblocks, n4, out): for each of nblocks blocks
 * of 4·n4 values, the four partial sums a_t = Σ s[j]·C[j] over j ≡ t (mod 4) of poolBlocks
 * (src/wanda/stats.ts), C float32 promoted exactly, products and sums in float64: the same
 * operations in the same order as its JavaScript loop.
 * The x4 variants take four rows per step (nrows a multiple of 4), adding rows r, r+1, r+2,
 * r+3 in that order to each accumulator before storing it: the same additions, in the same
 * order, with a quarter of the accumulator traffic.
 */

import { BR_IF, END, F32X4_ABS, F32X4_ADD, F32_DEMOTE_F64, F32_STORE, F64, F64X2_ADD, F64X2_DIV, F64X2_EXTRACT_LANE,
  F64X2_GT, F64X2_MUL, F64X2_PROMOTE_LOW_F32X4, F64X2_SQRT, F64X2_SUB, F64_ADD, F64_DIV, F64_LOAD, I32,
  I32X4_EXTEND_HIGH_I16X8_U, I32X4_EXTEND_LOW_I16X8_U, I32X4_SHL, I32_ADD, I32_CONST, I32_LOAD, I32_LT_U, I32_MUL,
  I32_SUB, LOCAL_TEE, LOOP, V128, V128_AND, V128_CONST, V128_LOAD, V128_LOAD64_SPLAT, V128_LOAD64_ZERO, V128_STORE,
  VOID, assembleModule, funcBody, get, instantiate, set, sleb, type WasmMemory } from '../util/wasm.js';
// The vector accesses promise 1-byte alignment: rows are read where a weight file puts them (any
// offset), and the accumulators keep the same hint.
const V128_LOAD_U = (offset: number): number[] => V128_LOAD(offset, 1);
const V128_STORE_U = (offset: number): number[] => V128_STORE(offset, 1);
const V128_LOAD64_ZERO_U = (offset: number): number[] => V128_LOAD64_ZERO(offset, 1);

// Parameters and locals: row pointers P[0..3], source vectors V[0..3], values X[0..3].
const SRC = 0, NROWS = 1, ROWBYTES = 2, NVEC = 3, ACC = 4;
const R = 5, J = 6, A = 7;
const P = [8, 9, 10, 11];
const V = [12, 13, 14, 15];
const X = [16, 17, 18, 19];
const MASK = V128_CONST(Array.from({ length: 16 }, (_, i) => (i % 4 === 3 ? 0x7f : 0xff)));

/** acc[a + off] (4 floats) += X[0], then X[1], ... (k rows, in row order). */
function addRows(off: number, k: number): number[] {
  const adds: number[] = [];
  for (let t = 0; t < k; t++) adds.push(...get(X[t]), ...F32X4_ADD);
  return [...get(A), ...get(A), ...V128_LOAD_U(off), ...adds, ...V128_STORE_U(off)];
}

/** Loops over rows (k at a time) and vectors; `inner` handles one vector position of k rows. */
function body(inner: number[], srcStep: number, accStep: number, k: number): number[] {
  const setPtrs: number[] = [];
  for (let t = 0; t < k; t++) {
    setPtrs.push(...get(SRC), ...get(R), ...(t ? [I32_CONST, ...sleb(t), I32_ADD] : []), ...get(ROWBYTES), I32_MUL,
      I32_ADD, ...set(P[t]));
  }
  const stepPtrs: number[] = [];
  for (let t = 0; t < k; t++) stepPtrs.push(...get(P[t]), I32_CONST, ...sleb(srcStep), I32_ADD, ...set(P[t]));
  // dprint-ignore: one instruction and its immediates per line
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
  return funcBody([[7, I32], [8, V128]], code);
}

/** bf16 -> |f32| for the low or high 4 lanes of V[t] into X[t]. */
const bf16Half = (ext: number[],
  t: number) => [...get(V[t]), ...ext, I32_CONST, 16, ...I32X4_SHL, ...MASK, ...V128_AND, ...set(X[t])];
function bf16Inner(k: number): number[] {
  const code: number[] = [];
  for (let t = 0; t < k; t++) code.push(...get(P[t]), ...V128_LOAD_U(0), ...set(V[t]));
  for (let t = 0; t < k; t++) code.push(...bf16Half(I32X4_EXTEND_LOW_I16X8_U, t));
  code.push(...addRows(0, k));
  for (let t = 0; t < k; t++) code.push(...bf16Half(I32X4_EXTEND_HIGH_I16X8_U, t));
  code.push(...addRows(16, k));
  return code;
}
function f32Inner(k: number): number[] {
  const code: number[] = [];
  for (let t = 0; t < k; t++) code.push(...get(P[t]), ...V128_LOAD_U(0), ...F32X4_ABS, ...set(X[t]));
  code.push(...addRows(0, k));
  return code;
}

/** addf64(dst, src, nvec, _, _): dst[i] += src[i] for 2 * nvec float64 values (nvec >= 1). */
function addf64Body(): number[] {
  const DST = 0, SRC2 = 1, N = 2;
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...get(DST), ...get(DST), ...V128_LOAD_U(0), ...get(SRC2), ...V128_LOAD_U(0), ...F64X2_ADD, ...V128_STORE_U(0),
    ...get(DST), I32_CONST, 16, I32_ADD, ...set(DST),
    ...get(SRC2), I32_CONST, 16, I32_ADD, ...set(SRC2),
    ...get(N), I32_CONST, 1, I32_SUB, LOCAL_TEE, N, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([], code);
}

/**
 * addgroups(list, nentries, nvec, off): for each entry [dst, ns, src_1 .. src_ns] (i32 byte
 * addresses) at list, in order, dst[i] = (((dst[i] + src_1[i]) + src_2[i]) + …) + src_ns[i] over
 * 2 * nvec float64 values starting `off` bytes in: the additions of ns addf64 calls in their
 * order, with dst loaded and stored once (the cache-blocked group sums of x²,
 * src/wanda/hooknull.ts; ns >= 1). addgroups4 takes four vectors per step (nvec a multiple
 * of 4): four independent chains of additions instead of one, the same additions per value.
 */
function addgroupsBody(w: number): number[] {
  const LIST = 0, NE = 1, N = 2, OFF = 3;
  const DST = 5, NS = 6, J = 7, P = 8, K = 9, JOFF = 10, ADDR = 11, ACC = 12;
  const acc = (t: number) => ACC + t;
  const load: number[] = [];
  const add: number[] = [];
  const store: number[] = [];
  for (let t = 0; t < w; t++) {
    load.push(...get(DST), ...V128_LOAD_U(16 * t), ...set(acc(t)));
    add.push(...get(acc(t)), ...get(ADDR), ...V128_LOAD_U(16 * t), ...F64X2_ADD, ...set(acc(t)));
    store.push(...get(DST), ...get(acc(t)), ...V128_STORE_U(16 * t));
  }
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...get(LIST), ...I32_LOAD(0), ...get(OFF), I32_ADD, ...set(DST),
    ...get(LIST), ...I32_LOAD(4), ...set(NS),
    ...get(N), ...set(J),
    ...get(OFF), ...set(JOFF),
    LOOP, VOID,
    ...load,
    ...get(LIST), I32_CONST, 8, I32_ADD, ...set(P),
    ...get(NS), ...set(K),
    LOOP, VOID,
    ...get(P), ...I32_LOAD(0), ...get(JOFF), I32_ADD, ...set(ADDR),
    ...add,
    ...get(P), I32_CONST, 4, I32_ADD, ...set(P),
    ...get(K), I32_CONST, 1, I32_SUB, LOCAL_TEE, K, BR_IF, 0,
    END,
    ...store,
    ...get(DST), I32_CONST, ...sleb(16 * w), I32_ADD, ...set(DST),
    ...get(JOFF), I32_CONST, ...sleb(16 * w), I32_ADD, ...set(JOFF),
    ...get(J), I32_CONST, ...sleb(w), I32_SUB, LOCAL_TEE, J, BR_IF, 0,
    END,
    ...get(LIST), I32_CONST, 8, I32_ADD, ...get(NS), I32_CONST, 4, I32_MUL, I32_ADD, ...set(LIST),
    ...get(NE), I32_CONST, 1, I32_SUB, LOCAL_TEE, NE, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[7, I32], [w, V128]], code);
}

/**
 * poolrow(c, s, nblocks, n4, out): per block, lanes (a0, a1) and (a2, a3) of
 *   a_t += s[j + t] · C[j + t]   for j = 0, 4, 8, ... (n4 steps)
 * stored as 4 float64 at out (32 bytes per block); c advances 16 bytes and s 32 per step.
 */
function poolrowBody(): number[] {
  const C = 0, S = 1, NB = 2, N4 = 3, OUT = 4;
  const J = 5, A01 = 6, A23 = 7;
  const ZERO = V128_CONST(new Array(16).fill(0));
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...ZERO, ...set(A01),
    ...ZERO, ...set(A23),
    ...get(N4), ...set(J),
    LOOP, VOID,
    ...get(A01), ...get(S), ...V128_LOAD_U(0), ...get(C), ...V128_LOAD64_ZERO_U(0), ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_MUL, ...F64X2_ADD, ...set(A01),
    ...get(A23), ...get(S), ...V128_LOAD_U(16), ...get(C), ...V128_LOAD64_ZERO_U(8), ...F64X2_PROMOTE_LOW_F32X4, ...F64X2_MUL, ...F64X2_ADD, ...set(A23),
    ...get(C), I32_CONST, 16, I32_ADD, ...set(C),
    ...get(S), I32_CONST, 32, I32_ADD, ...set(S),
    ...get(J), I32_CONST, 1, I32_SUB, LOCAL_TEE, J, BR_IF, 0,
    END,
    ...get(OUT), ...get(A01), ...V128_STORE_U(0),
    ...get(OUT), ...get(A23), ...V128_STORE_U(16),
    ...get(OUT), I32_CONST, 32, I32_ADD, ...set(OUT),
    ...get(NB), I32_CONST, 1, I32_SUB, LOCAL_TEE, NB, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[1, I32], [2, V128]], code);
}

/**
 * poolrow4(c, s, nblocks, n4, out): poolrow for four scalers at once, C read once, finished
 * in the kernel. The scalers are four planes of float64 `stride` bytes apart from s; for each
 * block, scaler g's four partial sums (poolrow's, the same operations in the same order, eight
 * independent chains of additions) are combined as poolBlocks does, ((a0 + a1) + (a2 + a3)) /
 * div, rounded to float32 and stored at out + g · plane (out advancing 4 bytes a block). The
 * header at address 0 holds f64 div, i32 stride and i32 plane.
 */
function poolrow4Body(): number[] {
  const C = 0, S = 1, NB = 2, N4 = 3, OUT = 4;
  const J = 5, ST = 6, PL = 7, P = [8, 9, 10, 11];
  const CL = 12, CH = 13, A = 14, DIV = 22;
  const ZERO = V128_CONST(new Array(16).fill(0));
  const zero: number[] = [];
  const step: number[] = [];
  const finish: number[] = [];
  for (let t = 0; t < 8; t++) zero.push(...ZERO, ...set(A + t));
  for (let g = 0; g < 4; g++) {
    step.push(...get(A + 2 * g), ...get(P[g]!), ...V128_LOAD_U(0), ...get(CL), ...F64X2_MUL, ...F64X2_ADD,
      ...set(A + 2 * g));
    step.push(...get(A + 2 * g + 1), ...get(P[g]!), ...V128_LOAD_U(16), ...get(CH), ...F64X2_MUL, ...F64X2_ADD,
      ...set(A + 2 * g + 1));
  }
  for (let g = 0; g < 4; g++) step.push(...get(P[g]!), I32_CONST, 32, I32_ADD, ...set(P[g]!));
  for (let g = 0; g < 4; g++) {
    const lanes = (v: number) => [...get(v), ...F64X2_EXTRACT_LANE(0), ...get(v), ...F64X2_EXTRACT_LANE(1), F64_ADD];
    // dprint-ignore: one instruction and its immediates per line
    finish.push(
      ...get(OUT), ...(g ? [...get(PL), I32_CONST, g, I32_MUL, I32_ADD] : []),
      ...lanes(A + 2 * g), ...lanes(A + 2 * g + 1), F64_ADD, ...get(DIV), F64_DIV, F32_DEMOTE_F64, ...F32_STORE(0),
    );
  }
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    I32_CONST, 0, ...F64_LOAD(0), ...set(DIV),
    I32_CONST, 0, ...I32_LOAD(8), ...set(ST),
    I32_CONST, 0, ...I32_LOAD(12), ...set(PL),
    ...get(S), ...set(P[0]!),
    ...get(P[0]!), ...get(ST), I32_ADD, ...set(P[1]!),
    ...get(P[1]!), ...get(ST), I32_ADD, ...set(P[2]!),
    ...get(P[2]!), ...get(ST), I32_ADD, ...set(P[3]!),
    LOOP, VOID,
    ...zero,
    ...get(N4), ...set(J),
    LOOP, VOID,
    ...get(C), ...V128_LOAD64_ZERO_U(0), ...F64X2_PROMOTE_LOW_F32X4, ...set(CL),
    ...get(C), ...V128_LOAD64_ZERO_U(8), ...F64X2_PROMOTE_LOW_F32X4, ...set(CH),
    ...step,
    ...get(C), I32_CONST, 16, I32_ADD, ...set(C),
    ...get(J), I32_CONST, 1, I32_SUB, LOCAL_TEE, J, BR_IF, 0,
    END,
    ...finish,
    ...get(OUT), I32_CONST, 4, I32_ADD, ...set(OUT),
    ...get(NB), I32_CONST, 1, I32_SUB, LOCAL_TEE, NB, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[7, I32], [10, V128], [1, F64]], code);
}

/**
 * rms(src, dst, nvec, p, _): dst[i] = √(src[i] · inv) over 2 · nvec float64 values, inv the
 * float64 at p: rmsScaler's operations (src/wanda/stats.ts), two values a step.
 */
function rmsBody(): number[] {
  const SRC = 0, DST = 1, N = 2, PAR = 3;
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...get(DST), ...get(SRC), ...V128_LOAD_U(0), ...get(PAR), ...V128_LOAD64_SPLAT(0), ...F64X2_MUL, ...F64X2_SQRT, ...V128_STORE_U(0),
    ...get(SRC), I32_CONST, 16, I32_ADD, ...set(SRC),
    ...get(DST), I32_CONST, 16, I32_ADD, ...set(DST),
    ...get(N), I32_CONST, 1, I32_SUB, LOCAL_TEE, N, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([], code);
}

/**
 * spread(s, out, nvec, p, _): channelSpread (src/wanda/channels.ts) of channels 0 .. 2·nvec − 1,
 * two at a time. s: G rows of group RMS, `stride` bytes apart; p: i32 G, i32 stride, f64 N,
 * then per group f64 n_g and f64 n_g / N. Per channel, as the JavaScript: a = √((Σ_g n_g · s_g²)
 * / N) adding groups in order from 0, then T = Σ_g (n_g/N) · (s_g / a − 1)² in group order from
 * 0 where a > 0 (a masked term adds +0, which leaves T's bits as they are), else 0.
 */
function spreadBody(): number[] {
  const S = 0, OUT = 1, N = 2, PAR = 3;
  const G = 5, STRIDE = 6, Q = 7, PP = 8, GC = 9, ALL = 10, T = 11, MSK = 12, E = 13;
  const ZERO = V128_CONST(new Array(16).fill(0));
  const ONE = V128_CONST([0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
  const restart = [...get(S), ...set(Q), ...get(PAR), I32_CONST, 16, I32_ADD, ...set(PP), ...get(G), ...set(GC)];
  // dprint-ignore: one instruction and its immediates per line
  const next = [
    ...get(Q), ...get(STRIDE), I32_ADD, ...set(Q),
    ...get(PP), I32_CONST, 16, I32_ADD, ...set(PP),
    ...get(GC), I32_CONST, 1, I32_SUB, LOCAL_TEE, GC, BR_IF, 0,
  ];
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    ...get(PAR), ...I32_LOAD(0), ...set(G),
    ...get(PAR), ...I32_LOAD(4), ...set(STRIDE),
    LOOP, VOID,
    ...ZERO, ...set(ALL),
    ...restart,
    LOOP, VOID,
    ...get(Q), ...V128_LOAD_U(0), LOCAL_TEE, E, ...get(E), ...F64X2_MUL, ...get(PP), ...V128_LOAD64_SPLAT(0), ...F64X2_MUL,
    ...get(ALL), ...F64X2_ADD, ...set(ALL),
    ...next,
    END,
    ...get(ALL), ...get(PAR), ...V128_LOAD64_SPLAT(8), ...F64X2_DIV, ...F64X2_SQRT, ...set(ALL),
    ...get(ALL), ...ZERO, ...F64X2_GT, ...set(MSK),
    ...ZERO, ...set(T),
    ...restart,
    LOOP, VOID,
    ...get(Q), ...V128_LOAD_U(0), ...get(ALL), ...F64X2_DIV, ...ONE, ...F64X2_SUB, LOCAL_TEE, E, ...get(E), ...F64X2_MUL,
    ...get(PP), ...V128_LOAD64_SPLAT(8), ...F64X2_MUL, ...get(MSK), ...V128_AND,
    ...get(T), ...F64X2_ADD, ...set(T),
    ...next,
    END,
    ...get(OUT), ...get(T), ...V128_STORE_U(0),
    ...get(S), I32_CONST, 16, I32_ADD, ...set(S),
    ...get(OUT), I32_CONST, 16, I32_ADD, ...set(OUT),
    ...get(N), I32_CONST, 1, I32_SUB, LOCAL_TEE, N, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[5, I32], [4, V128]], code);
}

/** x rounded up to a multiple of 16 bytes (vector alignment of offsets in a kernel's memory). */
export const align16 = (x: number): number => Math.ceil(x / 16) * 16;

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
  /** poolBlocks' four partial sums of `nblocks` blocks of 4·n4 values (C float32 at c, s float64 at s), 4 float64 per block at out (nblocks, n4 >= 1). */
  poolrow: (c: number, s: number, nblocks: number, n4: number, out: number) => void;
  /** poolrow for four scalers (planes `stride` bytes apart), finished: float32 block means at out + g · plane (header at address 0: f64 div, i32 stride, i32 plane). */
  poolrow4: (c: number, s: number, nblocks: number, n4: number, out: number) => void;
  /** For each entry [dst, ns, src_1 .. src_ns] at list: addf64(dst + off, src_k + off, nvec) for k = 1 .. ns in order, dst loaded and stored once (nentries, ns, nvec >= 1); four vectors at a time where it can. */
  addgroups: (list: number, nentries: number, nvec: number, off: number) => void;
  /** rmsScaler of 2 · nvec values (src, dst byte addresses; inv the float64 at p). */
  rms: (src: number, dst: number, nvec: number, p: number) => void;
  /** channelSpread of 2 · nvec channels (see spreadBody for s, out and the parameters at p). */
  spread: (s: number, out: number, nvec: number, p: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after); false when it cannot grow that far. */
  ensure(bytes: number): boolean;
}

let cached: SimdKernel | null | undefined;

/** The SIMD kernel of this thread, or null when WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set). */
export function simdKernel(): SimdKernel | null {
  if (cached === undefined) cached = createSimd();
  return cached;
}

/** The module's bytes (its text form is test/goldens/wasm/wanda.wat). */
export function wandaModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(5, [
    ['bf16', body(bf16Inner(1), 16, 32, 1)],
    ['bf16x4', body(bf16Inner(4), 16, 32, 4)],
    ['f32', body(f32Inner(1), 16, 16, 1)],
    ['f32x4', body(f32Inner(4), 16, 16, 4)],
    ['addf64', addf64Body()],
    ['poolrow', poolrowBody()],
    ['addgroups', addgroupsBody(1)],
    ['addgroups4', addgroupsBody(4)],
    ['addgroups8', addgroupsBody(8)],
    ['poolrow4', poolrow4Body()],
    ['rms', rmsBody()],
    ['spread', spreadBody()],
  ]);
}

/** A new instance with its own memory (for callers that keep data in it across calls). */
export function createSimd(): SimdKernel | null {
  const inst = instantiate(wandaModule());
  if (!inst) return null;
  const ex = inst.exports as unknown as { bf16: RowKernel; f32: RowKernel; bf16x4: RowKernel; f32x4: RowKernel;
    addf64: RowKernel; poolrow: RowKernel; addgroups: RowKernel; addgroups4: RowKernel; addgroups8: RowKernel;
    poolrow4: RowKernel; rms: RowKernel; spread: RowKernel };
  return {
    memory: inst.memory,
    bf16: ex.bf16,
    f32: ex.f32,
    bf16x4: ex.bf16x4,
    f32x4: ex.f32x4,
    addf64: (dst: number, src: number, nvec: number) => ex.addf64(dst, src, nvec, 0, 0),
    poolrow: ex.poolrow,
    poolrow4: ex.poolrow4,
    rms: (src: number, dst: number, nvec: number, p: number) => ex.rms(src, dst, nvec, p, 0),
    spread: (s: number, out: number, nvec: number, p: number) => ex.spread(s, out, nvec, p, 0),
    addgroups: (list: number, nentries: number, nvec: number, off: number) => {
      const eight = nvec & ~7;
      const four = nvec & ~3;
      if (eight > 0) ex.addgroups8(list, nentries, eight, off, 0);
      if (four > eight) ex.addgroups4(list, nentries, four - eight, off + eight * 16, 0);
      if (nvec > four) ex.addgroups(list, nentries, nvec - four, off + four * 16, 0);
    },
    ensure: inst.ensure,
  };
}
