/**
 * The inner sum of the Barnes–Hut repulsion (src/tsne/quadtree.ts), two points against two
 * interaction-list entries per step, as a WebAssembly SIMD kernel with a JavaScript twin that
 * gives bit-identical results.
 *
 * Memory layout (float64 values):
 *   list  at lp: entry pairs [x_e, x_e+1, y_e, y_e+1, c_e, c_e+1], `npairs` of them (an odd
 *         list is padded with x = y = c = 0, which adds exactly zero to every sum);
 *   points at gp: point pairs [x_a, y_a, x_b, y_b], `ngp` of them (an odd group repeats its last point);
 *   out   at op: per point pair [z_a, fx_a, fy_a, z_b, fx_b, fy_b].
 * For a point p and entry e, with d = p − (x_e, y_e):
 *   w = 1 / ((1 + d_x·d_x) + d_y·d_y),  cw = c_e·w,  z += cw,  s = cw·w,  f += s·d.
 * Even entries accumulate in lane 0 and odd entries in lane 1, each in list order; the two
 * lanes are added at the end (z = z₀ + z₁). The JavaScript twin runs the same operations in
 * the same order, so the choice of path never changes a result.
 */

import { BR_IF, END, F64X2_ADD, F64X2_DIV, F64X2_EXTRACT_LANE, F64X2_MUL, F64X2_SUB, F64_ADD, F64_STORE, I32, I32_ADD,
  I32_CONST, I32_SUB, LOCAL_TEE, LOOP, V128, V128_F64X2, V128_LOAD, V128_LOAD64_SPLAT, V128_ZERO, VOID, assembleModule,
  funcBody, get, instantiate, set, type WasmMemory } from '../util/wasm.js';
// Point pairs are f64 arrays: 8-byte aligned, not 16.
const V128_LOAD_8 = (offset: number): number[] => V128_LOAD(offset, 8);

// Parameters, then locals.
const LP = 0, NPAIRS = 1, GP = 2, NGP = 3, OP = 4;
const L = 5, K = 6;
const PX = [7, 9], PY = [8, 10];
const ACC = [[11, 12, 13], [14, 15, 16]]; // [point][z, fx, fy]
const EX = 17, EY = 18, EC = 19, DX = 20, DY = 21, W = 22, CW = 23;

function sumBody(): number[] {
  const inner: number[] = [...get(L), ...V128_LOAD_8(0), ...set(EX), ...get(L), ...V128_LOAD_8(16), ...set(EY),
    ...get(L), ...V128_LOAD_8(32), ...set(EC)];
  for (let p = 0; p < 2; p++) {
    const [Z, FX, FY] = ACC[p];
    // dprint-ignore: one instruction and its immediates per line
    inner.push(
      ...get(PX[p]), ...get(EX), ...F64X2_SUB, ...set(DX),
      ...get(PY[p]), ...get(EY), ...F64X2_SUB, ...set(DY),
      ...V128_F64X2(1),
      ...V128_F64X2(1), ...get(DX), ...get(DX), ...F64X2_MUL, ...F64X2_ADD,
      ...get(DY), ...get(DY), ...F64X2_MUL, ...F64X2_ADD,
      ...F64X2_DIV, ...set(W),
      ...get(EC), ...get(W), ...F64X2_MUL, ...set(CW),
      ...get(Z), ...get(CW), ...F64X2_ADD, ...set(Z),
      ...get(CW), ...get(W), ...F64X2_MUL, ...set(CW),
      ...get(FX), ...get(CW), ...get(DX), ...F64X2_MUL, ...F64X2_ADD, ...set(FX),
      ...get(FY), ...get(CW), ...get(DY), ...F64X2_MUL, ...F64X2_ADD, ...set(FY),
    );
  }
  inner.push(...get(L), I32_CONST, 48, I32_ADD, ...set(L));
  const start: number[] = [];
  for (let p = 0; p < 2; p++) {
    start.push(...get(GP), ...V128_LOAD64_SPLAT(16 * p), ...set(PX[p]), ...get(GP), ...V128_LOAD64_SPLAT(16 * p + 8),
      ...set(PY[p]));
    for (const a of ACC[p]) start.push(...V128_ZERO, ...set(a));
  }
  const store: number[] = [];
  ACC.flat().forEach((a, s) =>
    store.push(...get(OP), ...get(a), ...F64X2_EXTRACT_LANE(0), ...get(a), ...F64X2_EXTRACT_LANE(1), F64_ADD,
      ...F64_STORE(8 * s))
  );
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    LOOP, VOID,
    ...start,
    ...get(LP), ...set(L),
    ...get(NPAIRS), ...set(K),
    LOOP, VOID,
    ...inner,
    ...get(K), I32_CONST, 1, I32_SUB, LOCAL_TEE, K, BR_IF, 0,
    END,
    ...store,
    ...get(GP), I32_CONST, 32, I32_ADD, ...set(GP),
    ...get(OP), I32_CONST, 48, I32_ADD, ...set(OP),
    ...get(NGP), I32_CONST, 1, I32_SUB, LOCAL_TEE, NGP, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[2, I32], [17, V128]], code);
}

export interface RepulsionSimd {
  memory: WasmMemory;
  /** See the module comment; npairs >= 1, ngp >= 1, byte addresses 16-aligned. */
  sum: (lp: number, npairs: number, gp: number, ngp: number, op: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after); false when it cannot grow that far. */
  ensure(bytes: number): boolean;
}

/** The module's bytes (its text form is test/goldens/wasm/repulsion.wat). */
export function repulsionModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(5, [['sum', sumBody()]]);
}

/** A new instance with its own memory, or null when WebAssembly SIMD is unavailable. */
export function repulsionSimd(): RepulsionSimd | null {
  const inst = instantiate(repulsionModule());
  if (!inst) return null;
  return { memory: inst.memory, sum: inst.exports.sum as RepulsionSimd['sum'], ensure: inst.ensure };
}

/** The JavaScript twin of the kernel: same layout (offsets in float64 values), same results. */
export function sumPairsJs(M: Float64Array, lp: number, npairs: number, gp: number, ngp: number, op: number): void {
  for (let g = 0; g < ngp; g++, gp += 4, op += 6) {
    const xa = M[gp];
    const ya = M[gp + 1];
    const xb = M[gp + 2];
    const yb = M[gp + 3];
    let za0 = 0, za1 = 0, fxa0 = 0, fxa1 = 0, fya0 = 0, fya1 = 0;
    let zb0 = 0, zb1 = 0, fxb0 = 0, fxb1 = 0, fyb0 = 0, fyb1 = 0;
    const end = lp + 6 * npairs;
    for (let q = lp; q < end; q += 6) {
      const x0 = M[q];
      const x1 = M[q + 1];
      const y0 = M[q + 2];
      const y1 = M[q + 3];
      const c0 = M[q + 4];
      const c1 = M[q + 5];
      // point a
      let dx0 = xa - x0;
      let dx1 = xa - x1;
      let dy0 = ya - y0;
      let dy1 = ya - y1;
      let w0 = 1 / (1 + dx0 * dx0 + dy0 * dy0);
      let w1 = 1 / (1 + dx1 * dx1 + dy1 * dy1);
      let s0 = c0 * w0;
      let s1 = c1 * w1;
      za0 += s0;
      za1 += s1;
      s0 *= w0;
      s1 *= w1;
      fxa0 += s0 * dx0;
      fxa1 += s1 * dx1;
      fya0 += s0 * dy0;
      fya1 += s1 * dy1;
      // point b
      dx0 = xb - x0;
      dx1 = xb - x1;
      dy0 = yb - y0;
      dy1 = yb - y1;
      w0 = 1 / (1 + dx0 * dx0 + dy0 * dy0);
      w1 = 1 / (1 + dx1 * dx1 + dy1 * dy1);
      s0 = c0 * w0;
      s1 = c1 * w1;
      zb0 += s0;
      zb1 += s1;
      s0 *= w0;
      s1 *= w1;
      fxb0 += s0 * dx0;
      fxb1 += s1 * dx1;
      fyb0 += s0 * dy0;
      fyb1 += s1 * dy1;
    }
    M[op] = za0 + za1;
    M[op + 1] = fxa0 + fxa1;
    M[op + 2] = fya0 + fya1;
    M[op + 3] = zb0 + zb1;
    M[op + 4] = fxb0 + fxb1;
    M[op + 5] = fyb0 + fyb1;
  }
}
