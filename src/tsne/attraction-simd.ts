/**
 * The attractive part of the t-SNE gradient (src/tsne/attraction.ts attraction()) as a WebAssembly
 * SIMD kernel, each point's (x, y) in the two float64 lanes of one vector:
 *
 *   for rows r in [0, nrows), i = row0 + r, nonzeros t in [rp[r], rp[r+1]) of the row:
 *     d = y_i − y_{cols[t]}                      (both lanes)
 *     w = vals[t] / ((1 + d_x·d_x) + d_y·d_y)
 *     even t (counted from the row start) add w·d to F, odd t to G
 *   out[r] = ex · (F + G)
 *
 * These are the operations of the JavaScript loop, in its order, so the results are
 * bit-identical to it. Memory (byte addresses): Y interleaved at yp, the row slice's rowPtr
 * (rebased to 0) at rp, cols at cp, vals at vp, ex (one float64) at exp, out [nrows][2] at op.
 */

import { BLOCK, BR, BR_IF, END, F64, F64X2_ADD, F64X2_EXTRACT_LANE, F64X2_MUL, F64X2_SPLAT, F64X2_SUB, F64_ADD,
  F64_CONST, F64_DIV, F64_LOAD, I32, I32_ADD, I32_CONST, I32_GE_S, I32_LOAD, I32_LT_S, I32_SHL, IF, LOCAL_TEE, LOOP,
  V128, V128_LOAD, V128_LOAD64_SPLAT, V128_STORE, V128_ZERO, VOID, assembleModule, funcBody, get, instantiate, set,
  type WasmMemory } from '../util/wasm.js';

// Parameters, then locals.
const YP = 0, RP = 1, CP = 2, VP = 3, NROWS = 4, OP = 5, EXP = 6, ROW0 = 7;
const R = 8, T = 9, E = 10, J = 11;
const PI = 12, ACCF = 13, ACCG = 14, D = 15, DD = 16;
const PW = 17;

/** One nonzero at T + `k` (k = 0 or 1) into accumulator `acc`. */
function entry(k: number, acc: number): number[] {
  // dprint-ignore: one instruction and its immediates per line
  return [
    ...get(CP), ...get(T), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(4 * k), ...set(J),
    ...get(PI), ...get(YP), ...get(J), I32_CONST, 4, I32_SHL, I32_ADD, ...V128_LOAD(0), ...F64X2_SUB, LOCAL_TEE, D,
    ...get(D), ...F64X2_MUL, ...set(DD),
    ...get(VP), ...get(T), I32_CONST, 3, I32_SHL, I32_ADD, ...F64_LOAD(8 * k),
    ...F64_CONST(1), ...get(DD), ...F64X2_EXTRACT_LANE(0), F64_ADD, ...get(DD), ...F64X2_EXTRACT_LANE(1), F64_ADD,
    F64_DIV, ...set(PW),
    ...get(acc), ...get(PW), ...F64X2_SPLAT, ...get(D), ...F64X2_MUL, ...F64X2_ADD, ...set(acc),
  ];
}

function attractBody(): number[] {
  // dprint-ignore: one instruction and its immediates per line
  const code = [
    I32_CONST, 0, ...set(R),
    LOOP, VOID,
    // PI = y_i; T, E = the row's range; accumulators zero
    ...get(YP), ...get(ROW0), ...get(R), I32_ADD, I32_CONST, 4, I32_SHL, I32_ADD, ...V128_LOAD(0), ...set(PI),
    ...get(RP), ...get(R), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(0), ...set(T),
    ...get(RP), ...get(R), I32_CONST, 2, I32_SHL, I32_ADD, ...I32_LOAD(4), ...set(E),
    ...V128_ZERO, ...set(ACCF),
    ...V128_ZERO, ...set(ACCG),
    BLOCK, VOID,
    LOOP, VOID,
    ...get(T), I32_CONST, 1, I32_ADD, ...get(E), I32_GE_S, BR_IF, 1,
    ...entry(0, ACCF),
    ...entry(1, ACCG),
    ...get(T), I32_CONST, 2, I32_ADD, ...set(T),
    BR, 0,
    END,
    END,
    ...get(T), ...get(E), I32_LT_S, IF, VOID,
    ...entry(0, ACCF),
    END,
    ...get(OP), ...get(R), I32_CONST, 4, I32_SHL, I32_ADD,
    ...get(EXP), ...V128_LOAD64_SPLAT(0), ...get(ACCF), ...get(ACCG), ...F64X2_ADD, ...F64X2_MUL,
    ...V128_STORE(0),
    ...get(R), I32_CONST, 1, I32_ADD, LOCAL_TEE, R, ...get(NROWS), I32_LT_S, BR_IF, 0,
    END,
    END,
  ];
  return funcBody([[4, I32], [5, V128], [1, F64]], code);
}

export interface AttractionSimd {
  memory: WasmMemory;
  /** See the module comment; nrows >= 1; byte addresses aligned to their element size (yp, op to 16). */
  attract: (yp: number, rp: number, cp: number, vp: number, nrows: number, op: number, exp: number,
    row0: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after); false when it cannot grow that far. */
  ensure(bytes: number): boolean;
}

/** The module's bytes (its text form is test/goldens/wasm/attraction.wat). */
export function attractionModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(8, [['attract', attractBody()]]);
}

/** A new instance with its own memory, or null when WebAssembly SIMD is unavailable. */
export function attractionSimd(): AttractionSimd | null {
  const inst = instantiate(attractionModule());
  if (!inst) return null;
  return { memory: inst.memory, attract: inst.exports.attract as AttractionSimd['attract'], ensure: inst.ensure };
}
