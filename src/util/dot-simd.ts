/**
 * A WebAssembly SIMD kernel for dot products of row blocks, used by the exact kNN
 * (src/tsne/knn.ts), the Gram rows (src/cluster/metrics.ts) and the PCA products
 * (src/cluster/pca.ts):
 *
 *   dist(qp, yp, nblk, d, out, sqq, sqy): for b in [0, nblk), r in [0, 4), s in [0, 4):
 *     out[r · stride + 4 b + s] = max(sqq[r] + sqy[4b+s] − 2 · Σ_c q_r[c] · y_{4b+s}[c], 0)
 *
 * (float64; the sum over c = 0, 1, …, d − 1 in order; stride = OUT_STRIDE values)
 * with the four query rows packed column-interleaved at qp (qp[4 c + r] = q_r[c]) and the data
 * packed the same way in blocks of four rows (yp[b][4 c + s] = y_{4b+s}[c]). Each sum is a
 * multiply then an add per column in column order, and the distance is formed with the same
 * operations in the same order as the scalar JavaScript loop does it, so every value is
 * bit-identical to it. The module is assembled here by hand;
 * dotKernel() returns null when WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set).
 *
 *   dots(...): the same sums stored as they are, out[r · stride + 4 b + s] = Σ_c q_r[c] · y_{4b+s}[c]
 * (the Gram rows of src/cluster/metrics.ts; bit-identical to its JavaScript loop, which also
 * sums one product per column in column order).
 */

import { BR_IF, END, F64X2_ADD, F64X2_MAX, F64X2_MUL, F64X2_SUB, I32, I32_ADD, I32_CONST, I32_SUB, LOCAL_TEE, LOOP,
  V128, V128_F64X2, V128_LOAD, V128_LOAD64_SPLAT, V128_STORE, V128_ZERO, VOID, assembleModule, funcBody, get,
  instantiate, set, type WasmMemory } from './wasm.js';
// Rows are f64 arrays at any 8-byte boundary: 8-byte aligned, not 16.
const V128_LOAD_8 = (offset: number): number[] => V128_LOAD(offset, 8);
const V128_STORE_8 = (offset: number): number[] => V128_STORE(offset, 8);

/** Values between the rows of `out` (the data rows of one call are at most this many). */
export const OUT_STRIDE = 256;

// Parameters, then locals: c counter, query/data pointers, accumulators ACC[r][h], Y vectors.
const QP = 0, YP = 1, NBLK = 2, D = 3, OUT = 4, SQQ = 5, SQY = 6;
const C = 7, QC = 8;
const ACC = [[9, 10], [11, 12], [13, 14], [15, 16]];
const Y = [17, 18];

/** The loop body; `raw` stores the dot products themselves instead of the distances. */
function dotsBody(raw: boolean): number[] {
  const zero: number[] = [];
  for (const a of ACC) for (const v of a) zero.push(...V128_ZERO, ...set(v));
  const inner: number[] = [...get(YP), ...V128_LOAD_8(0), ...set(Y[0]), ...get(YP), ...V128_LOAD_8(16), ...set(Y[1])];
  for (let r = 0; r < 4; r++) {
    for (let h = 0; h < 2; h++) {
      inner.push(...get(ACC[r][h]), ...get(QC), ...V128_LOAD64_SPLAT(8 * r), ...get(Y[h]), ...F64X2_MUL, ...F64X2_ADD,
        ...set(ACC[r][h]));
    }
  }
  inner.push(...get(QC), I32_CONST, 32, I32_ADD, ...set(QC));
  inner.push(...get(YP), I32_CONST, 32, I32_ADD, ...set(YP));
  const store: number[] = [];
  for (let r = 0; r < 4; r++)
    for (let h = 0; h < 2; h++) {
      if (raw) {
        store.push(...get(OUT), ...get(ACC[r][h]), ...V128_STORE_8(8 * OUT_STRIDE * r + 16 * h));
        continue;
      }
      store.push(...get(OUT), ...get(SQQ), ...V128_LOAD64_SPLAT(8 * r), ...get(SQY), ...V128_LOAD_8(16 * h),
        ...F64X2_ADD);
      store.push(...get(ACC[r][h]), ...V128_F64X2(2), ...F64X2_MUL, ...F64X2_SUB, ...V128_ZERO, ...F64X2_MAX,
        ...V128_STORE_8(8 * OUT_STRIDE * r + 16 * h));
    }
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...zero,
    ...get(QP), ...set(QC),
    ...get(D), ...set(C),
    LOOP, VOID,
    ...inner,
    ...get(C), I32_CONST, 1, I32_SUB, LOCAL_TEE, C, BR_IF, 0,
    END,
    ...store,
    ...get(OUT), I32_CONST, 32, I32_ADD, ...set(OUT),
    ...get(SQY), I32_CONST, 32, I32_ADD, ...set(SQY),
    ...get(NBLK), I32_CONST, 1, I32_SUB, LOCAL_TEE, NBLK, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[2, I32], [10, V128]], code);
}

/** One instance of the kernel with its own memory. */
export interface DotSimd {
  memory: WasmMemory;
  /** See the module comment; nblk >= 1, d >= 1, byte addresses 16-aligned. */
  dist: (qp: number, yp: number, nblk: number, d: number, out: number, sqq: number, sqy: number) => void;
  /** The same loop storing the dot products Σ_c q_r[c] · y_{4b+s}[c] themselves (sqq, sqy unused). */
  dots: (qp: number, yp: number, nblk: number, d: number, out: number, sqq: number, sqy: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after); false when it cannot grow that far. */
  ensure(bytes: number): boolean;
}

let kernel: DotSimd | null | undefined;

/**
 * This thread's instance (made on first use), or null when WebAssembly SIMD is unavailable. The
 * kNN search, the Gram rows and the PCA products share it and its memory: none of them calls
 * another while it holds views of that memory.
 */
export function dotKernel(): DotSimd | null {
  if (kernel === undefined) kernel = dotSimd();
  return kernel;
}

/** The module's bytes (its text form is test/goldens/wasm/dot.wat). */
export function dotModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(7, [['dist', dotsBody(false)], ['dots', dotsBody(true)]]);
}

/** A new instance with its own memory, or null when WebAssembly SIMD is unavailable. */
function dotSimd(): DotSimd | null {
  const inst = instantiate(dotModule());
  if (!inst) return null;
  return { memory: inst.memory, dist: inst.exports.dist as DotSimd['dist'], dots: inst.exports.dots as DotSimd['dots'],
    ensure: inst.ensure };
}
