/**
 * The silhouette's permutation null (src/cluster/metrics.ts) in a small WebAssembly kernel: for
 * each labelling, each row's sums of distances per class, gathered with four running sums in
 * the order of silhouetteSamples' JavaScript loop, so every sum, and so every mean silhouette, is
 * bit-identical to it. The distance matrix is copied into the kernel's memory once per null
 * (not once per labelling); the gather needs no SIMD, only the absence of JavaScript's bounds
 * checks, and runs about twice as fast as the loop.
 *
 *   sums(dp, op, sp, nc, outp): for c in [0, nc):
 *     out[c] = Σ over t in [start[c], start[c+1]) of D_row[order[t]]   (four running sums s0..s3:
 *              t ≡ 0, 1, 2, 3 of each group of four in s0..s3, the rest in s0; out = s0 + s1 + (s2 + s3))
 *   with D_row (float64) at byte dp, order (int32) at op, start (int32, nc + 1) at sp, out (float64) at outp.
 */
import { BLOCK, BR, BR_IF, END, F64, F64_ADD, F64_CONST, F64_LOAD, F64_STORE, I32, I32_ADD, I32_CONST, I32_GE_S,
  I32_LOAD, I32_LT_S, I32_SHL, LOCAL_TEE, LOOP, VOID, assembleModule, funcBody, get, instantiate,
  set } from '../util/wasm.js';

// parameters, then locals
const DP = 0, OP = 1, SP = 2, NC = 3, OUTP = 4;
const C = 5, T = 6, E = 7;
const S = [8, 9, 10, 11];

/** acc += D_row[order[T + k]]. */
function gather(k: number, acc: number): number[] {
  return [...get(acc), ...get(DP), ...get(OP), ...get(T), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(4 * k), I32_CONST,
    3, I32_SHL, I32_ADD, ...F64_LOAD(0), F64_ADD, ...set(acc)];
}

function sumsBody(): number[] {
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    I32_CONST, 0, ...set(C),
    LOOP, VOID,
    ...get(SP), ...get(C), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(0), ...set(T),
    ...get(SP), ...get(C), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(4), ...set(E),
    ...S.flatMap((s) => [...F64_CONST(0), ...set(s)]),
    // groups of four while T + 3 < E
    BLOCK, VOID,
    LOOP, VOID,
    ...get(T), I32_CONST, 3, I32_ADD, ...get(E), I32_GE_S, BR_IF, 1,
    ...gather(0, S[0]), ...gather(1, S[1]), ...gather(2, S[2]), ...gather(3, S[3]),
    ...get(T), I32_CONST, 4, I32_ADD, ...set(T),
    BR, 0,
    END,
    END,
    // the rest into s0
    BLOCK, VOID,
    LOOP, VOID,
    ...get(T), ...get(E), I32_GE_S, BR_IF, 1,
    ...gather(0, S[0]),
    ...get(T), I32_CONST, 1, I32_ADD, ...set(T),
    BR, 0,
    END,
    END,
    // out[C] = s0 + s1 + (s2 + s3)
    ...get(OUTP), ...get(C), I32_CONST, 3, I32_SHL, I32_ADD,
    ...get(S[0]), ...get(S[1]), F64_ADD, ...get(S[2]), ...get(S[3]), F64_ADD, F64_ADD,
    ...F64_STORE(0),
    ...get(C), I32_CONST, 1, I32_ADD, LOCAL_TEE, C, ...get(NC), I32_LT_S, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[3, I32], [4, F64]], code);
}

type SumsFn = (dp: number, op: number, sp: number, nc: number, outp: number) => void;
let kernel: { memory: { buffer: ArrayBuffer }; sums: SumsFn; ensure(bytes: number): boolean } | null | undefined;

/** The module's bytes (its text form is test/goldens/wasm/silhouette.wat). */
export function silhouetteModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(5, [['sums', sumsBody()]]);
}

/** This thread's kernel (made on first use), or null without WebAssembly (or with LOBES_NO_SIMD set). */
function silKernel() {
  if (kernel === undefined) {
    const inst = instantiate(silhouetteModule());
    kernel = inst ? { memory: inst.memory, sums: inst.exports.sums as SumsFn, ensure: inst.ensure } : null;
  }
  return kernel;
}

/**
 * Mean silhouette for each labelling of `perms` through the kernel; null (nothing computed)
 * when the kernel is unavailable or its memory cannot hold the distance matrix. The result equals
 * meanSilhouette's for each labelling, bit for bit.
 */
export function silhouetteMeansWasm(D: Float64Array, n: number, perms: Int32Array[], nClasses: number): Float64Array
  | null
{
  const k = silKernel();
  if (!k || n === 0 || nClasses === 0) return null;
  // float64 offsets: D, then order (int32, n, padded to 8 bytes), start (int32, C + 1), out (float64, C)
  const dAt = 0;
  const orderAt = n * n;
  const startAt = orderAt + Math.ceil(n / 2);
  const outAt = startAt + Math.ceil((nClasses + 1) / 2);
  if (!k.ensure((outAt + nClasses) * 8)) return null;
  const F = new Float64Array(k.memory.buffer);
  F.set(D.subarray(0, n * n), dAt);
  const I = new Int32Array(k.memory.buffer);
  const order = I.subarray(2 * orderAt, 2 * orderAt + n);
  const start = I.subarray(2 * startAt, 2 * startAt + nClasses + 1);
  const sums = F.subarray(outAt, outAt + nClasses);
  const counts = new Int32Array(nClasses);
  const out = new Float64Array(perms.length);
  perms.forEach((labels, r) => {
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[labels[i]]++;
    start[0] = 0;
    for (let c = 0; c < nClasses; c++) start[c + 1] = start[c] + counts[c];
    const fill = start.slice(0, nClasses);
    for (let j = 0; j < n; j++) order[fill[labels[j]]++] = j;
    let total = 0;
    for (let i = 0; i < n; i++) {
      k.sums((dAt + i * n) * 8, orderAt * 8, startAt * 8, nClasses, outAt * 8);
      const li = labels[i];
      if (counts[li] <= 1) continue;
      const a = sums[li] / (counts[li] - 1);
      let b = Infinity;
      for (let c = 0; c < nClasses; c++) if (c !== li && counts[c] > 0) b = Math.min(b, sums[c] / counts[c]);
      const m = Math.max(a, b);
      total += m > 0 && b < Infinity ? (b - a) / m : 0;
    }
    out[r] = total / n;
  });
  return out;
}
