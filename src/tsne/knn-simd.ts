/**
 * The float64 sums of the exact kNN's re-check (src/tsne/knn.ts finishRow, src/tsne/knn-screen.ts)
 * as a WebAssembly SIMD kernel: one query row q against a list of rows y_j of X,
 *
 *   diff: out[t] = Σ_c (q[c] − y_{j_t}[c])²      dot: out[t] = Σ_c q[c] · y_{j_t}[c]
 *
 * (float64; each sum over c = 0, 1, …, d − 1 in order, starting from 0). Two listed rows share a
 * vector, one in each float64 lane, so every lane is one row's sum with the operations of the
 * scalar JavaScript loop (a subtract, a multiply, an add per column, or a multiply then an add),
 * in its order: the values are bit-identical to pairSumsJs, the JavaScript twin, which runs when
 * WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set). Eight rows (four vectors) go
 * through each pass over the columns, then two at a time for the rest.
 *
 * X lives once in a shared WebAssembly memory (pairSpace, made by the thread that starts the
 * search and handed to the worker threads), float32 or float64 as the data is; float32 entries
 * are widened to float64 exactly on load. Each thread works in one of the memory's slots
 * (claimed with Atomics): the query row widened to float64, the row list, the sums.
 */

import { BR_IF, END, F64X2_ADD, F64X2_MUL, F64X2_PROMOTE_LOW_F32X4, F64X2_SUB, I32, I32_ADD, I32_CONST, I32_LOAD,
  I32_MUL, I32_SHL, I32_SUB, LOCAL_TEE, LOOP, V128, V128_LOAD32_LANE, V128_LOAD32_ZERO, V128_LOAD64_LANE,
  V128_LOAD64_SPLAT, V128_LOAD64_ZERO, V128_STORE, V128_ZERO, VOID, assembleModule, funcBody, get, instantiateShared,
  set, sharedMemory, sleb, type WasmMemory } from '../util/wasm.js';

// Parameters: the query (float64) at QP, the row list (int32) at IX, groups of W rows, d, the
// sums (float64) at OUT, X at XB. Then locals.
const QP = 0, IX = 1, NG = 2, D = 3, OUT = 4, XB = 5;
const C = 6, QC = 7, CNT = 8, ROWB = 9, P0 = 10;

/** Groups of `w` rows (w even, ≤ 8); `f32`: X holds float32; `diff` or dot. */
function pairsBody(w: number, f32: boolean, diff: boolean): number[] {
  const es = f32 ? 4 : 8;
  const ACC = P0 + w;
  const QV = ACC + w / 2;
  const Y = QV + 1;
  const code: number[] = [...get(D), I32_CONST, f32 ? 2 : 3, I32_SHL, ...set(ROWB), LOOP, VOID];
  for (let r = 0; r < w; r++)
    code.push(...get(XB), ...get(IX), ...I32_LOAD(4 * r), ...get(ROWB), I32_MUL, I32_ADD, ...set(P0 + r));
  for (let h = 0; h < w / 2; h++) code.push(...V128_ZERO, ...set(ACC + h));
  code.push(...get(QP), ...set(QC), I32_CONST, 0, ...set(C), ...get(D), ...set(CNT), LOOP, VOID);
  code.push(...get(QC), ...V128_LOAD64_SPLAT(), ...set(QV));
  for (let h = 0; h < w / 2; h++) {
    // [the second row's address, the first row's value in lane 0] → both values
    code.push(...get(P0 + 2 * h + 1), ...get(C), I32_ADD, ...get(P0 + 2 * h), ...get(C), I32_ADD);
    code.push(...(f32 ? V128_LOAD32_ZERO() : V128_LOAD64_ZERO()), ...(f32 ? V128_LOAD32_LANE(1) : V128_LOAD64_LANE(1)));
    if (f32) code.push(...F64X2_PROMOTE_LOW_F32X4);
    if (diff) code.push(...set(Y), ...get(QV), ...get(Y), ...F64X2_SUB, LOCAL_TEE, Y, ...get(Y), ...F64X2_MUL);
    else code.push(...get(QV), ...F64X2_MUL);
    code.push(...get(ACC + h), ...F64X2_ADD, ...set(ACC + h));
  }
  code.push(...get(QC), I32_CONST, 8, I32_ADD, ...set(QC), ...get(C), I32_CONST, ...sleb(es), I32_ADD, ...set(C));
  code.push(...get(CNT), I32_CONST, 1, I32_SUB, LOCAL_TEE, CNT, BR_IF, 0, END);
  for (let h = 0; h < w / 2; h++) code.push(...get(OUT), ...get(ACC + h), ...V128_STORE(16 * h));
  code.push(...get(OUT), I32_CONST, ...sleb(8 * w), I32_ADD, ...set(OUT), ...get(IX), I32_CONST, ...sleb(4 * w),
    I32_ADD, ...set(IX));
  code.push(...get(NG), I32_CONST, 1, I32_SUB, LOCAL_TEE, NG, BR_IF, 0, END, END);
  return funcBody([[4 + w, I32], [w / 2 + 2, V128]], code);
}

const NAMES: [string, number, boolean, boolean][] = [];
for (const f32 of [true, false])
  for (const diff of [true, false])
    for (const w of [8, 2]) NAMES.push([`${diff ? 'diff' : 'dot'}${w}_${f32 ? 'f32' : 'f64'}`, w, f32, diff]);
let moduleBytes: Uint8Array | null = null;

type Fn = (qp: number, ix: number, ng: number, d: number, out: number, xb: number) => void;

/** Where X and the slots are in a shared memory (all byte offsets; plain data, so it crosses threads). */
export interface PairSpace {
  memory: WasmMemory;
  n: number;
  d: number;
  f32: boolean;
  /** X [n, d] at 0; the slots after it, slotBytes each; one int32 claim flag per slot at flagsAt. */
  slots: number;
  slotsAt: number;
  slotBytes: number;
  flagsAt: number;
}

/**
 * A shared memory holding X (float32 when every value is a float32 value or X is a Float32Array,
 * else float64) and `slots` work slots, and X's view on it; null where WebAssembly SIMD or a shared
 * memory of that size is unavailable.
 */
export function pairSpace(X: Float64Array | Float32Array, n: number, d: number, slots: number, f32: boolean): {
  space: PairSpace;
  X: Float64Array | Float32Array;
} | null {
  const es = f32 ? 4 : 8;
  const slotsAt = align(n * d * es);
  // the query row, the row list (+ padding to whole pairs), the sums
  const slotBytes = align(d * 8) + align((n + 8) * 4) + align((n + 8) * 8);
  const flagsAt = slotsAt + slots * slotBytes;
  const memory = sharedMemory(flagsAt + 4 * slots);
  if (!memory || !kernelOf(memory)) return null;
  const view = f32 ? new Float32Array(memory.buffer, 0, n * d) : new Float64Array(memory.buffer, 0, n * d);
  view.set(X.subarray(0, n * d));
  return { space: { memory, n, d, f32, slots, slotsAt, slotBytes, flagsAt }, X: view };
}

function align(b: number): number {
  return Math.ceil(b / 16) * 16;
}

/** The module's bytes, on a shared memory (its text form is test/goldens/wasm/knn.wat). */
export function knnModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(6, NAMES.map(([nm, w, f32, diff]) => [nm, pairsBody(w, f32, diff)]), true);
}

/** This memory's instance's functions (one instance per memory object seen by this thread). */
const instances = new WeakMap<WasmMemory, Record<string, Fn> | null>();
function kernelOf(memory: WasmMemory): Record<string, Fn> | null {
  let k = instances.get(memory);
  if (k === undefined) {
    moduleBytes ??= knnModule();
    k = instantiateShared(moduleBytes, memory) as Record<string, Fn> | null;
    instances.set(memory, k);
  }
  return k;
}

/** A claimed slot of a PairSpace: sums of one query row against listed rows. */
export interface PairSlot {
  /** The sums of row i against rows idx[0..m) into out[0..m) ('diff': Σ(q − y)², 'dot': Σ q·y). */
  sums(i: number, idx: Int32Array, m: number, op: 'diff' | 'dot', out: Float64Array): void;
  release(): void;
}

/** Claims a free slot of `space` for this thread; null when none is free or the kernel is unavailable here. */
export function claimSlot(space: PairSpace): PairSlot | null {
  const fns = kernelOf(space.memory);
  if (!fns) return null;
  const flags = new Int32Array(space.memory.buffer, space.flagsAt, space.slots);
  let s = 0;
  while (s < space.slots && Atomics.compareExchange(flags, s, 0, 1) !== 0) s++;
  if (s === space.slots) return null;
  const { n, d, f32 } = space;
  const base = space.slotsAt + s * space.slotBytes;
  const qAt = base;
  const ixAt = qAt + align(d * 8);
  const outAt = ixAt + align((n + 8) * 4);
  const buf = space.memory.buffer;
  const X = f32 ? new Float32Array(buf, 0, n * d) : new Float64Array(buf, 0, n * d);
  const q = new Float64Array(buf, qAt, d);
  const ix = new Int32Array(buf, ixAt, n + 8);
  const res = new Float64Array(buf, outAt, n + 8);
  const sfx = f32 ? 'f32' : 'f64';
  const fn = { diff8: fns[`diff8_${sfx}`], diff2: fns[`diff2_${sfx}`], dot8: fns[`dot8_${sfx}`],
    dot2: fns[`dot2_${sfx}`] };
  let row = -1;
  return {
    sums(i, idx, m, op, out) {
      if (m === 0) return;
      if (row !== i) {
        for (let c = 0; c < d; c++) q[c] = X[i * d + c];
        row = i;
      }
      ix.set(idx.subarray(0, m));
      const g8 = m >> 3;
      let rest = m - 8 * g8;
      if (rest & 1) ix[m] = ix[m - 1]; // a whole last pair: its second sum is computed and dropped
      rest = (rest + 1) >> 1;
      if (g8 > 0) fn[op === 'diff' ? 'diff8' : 'dot8'](qAt, ixAt, g8, d, outAt, 0);
      if (rest > 0) fn[op === 'diff' ? 'diff2' : 'dot2'](qAt, ixAt + 32 * g8, rest, d, outAt + 64 * g8, 0);
      out.set(res.subarray(0, m));
    },
    release() {
      Atomics.store(flags, s, 0);
    },
  };
}

/** slot.sums(…), or its JavaScript twin on X where there is no slot (the same values). */
export function pairSums(slot: PairSlot | null, X: Float64Array | Float32Array, d: number, i: number, idx: Int32Array,
  m: number, op: 'diff' | 'dot', out: Float64Array): void
{
  if (slot) slot.sums(i, idx, m, op, out);
  else pairSumsJs(X, d, i, idx, m, op, out);
}

/** The JavaScript twin of PairSlot.sums (the same values to the bit): each sum in column order. */
export function pairSumsJs(X: Float64Array | Float32Array, d: number, i: number, idx: Int32Array, m: number,
  op: 'diff' | 'dot', out: Float64Array): void
{
  const qo = i * d;
  let t = 0;
  // four rows at a time: four independent sums, each in column order
  for (; t + 4 <= m; t += 4) {
    const o0 = idx[t] * d;
    const o1 = idx[t + 1] * d;
    const o2 = idx[t + 2] * d;
    const o3 = idx[t + 3] * d;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    if (op === 'diff') {
      for (let c = 0; c < d; c++) {
        const x = X[qo + c];
        const a0 = x - X[o0 + c];
        const a1 = x - X[o1 + c];
        const a2 = x - X[o2 + c];
        const a3 = x - X[o3 + c];
        s0 += a0 * a0;
        s1 += a1 * a1;
        s2 += a2 * a2;
        s3 += a3 * a3;
      }
    } else {
      for (let c = 0; c < d; c++) {
        const x = X[qo + c];
        s0 += x * X[o0 + c];
        s1 += x * X[o1 + c];
        s2 += x * X[o2 + c];
        s3 += x * X[o3 + c];
      }
    }
    out[t] = s0;
    out[t + 1] = s1;
    out[t + 2] = s2;
    out[t + 3] = s3;
  }
  for (; t < m; t++) {
    const o = idx[t] * d;
    let s = 0;
    if (op === 'diff') {
      for (let c = 0; c < d; c++) {
        const a = X[qo + c] - X[o + c];
        s += a * a;
      }
    } else for (let c = 0; c < d; c++) s += X[qo + c] * X[o + c];
    out[t] = s;
  }
}
