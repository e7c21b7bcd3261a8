/**
 * The stages of src/tsne/fft.ts's Stockham transform as WebAssembly SIMD kernels, on one
 * block of BLOCK_COLUMNS = 8 columns (src/tsne/fft-block.ts): the block is [rows][16] float64
 * values, a row's 8 real parts and then its 8 imaginary parts (128 bytes). Each f64x2 lane is one
 * column, and a column gets the operations of fft.ts's radix loops in their order, with the same
 * twiddles, so the results are bit-identical to the JavaScript stages run on the same block
 * (fft.ts `fftStage` with B = 16 on the real and imaginary views).
 *
 * All functions take six i32 byte addresses or counts:
 *   r4 / r3 / r2 (x, y, m, s, tw, c): one stage of radix 4 / 3 / 2 from block x into block y,
 *     for p in [0, m), q in [0, s): input rows q + s(p + j m), output rows q + s(r p + k);
 *     tw holds, for each p, the r − 1 twiddles (cos, sg·sin) as float64 pairs; c holds the
 *     direction's constants (−sg, sg, sg·√3/2, 0.5).
 *   mul (x, k, rows, -, -, -): x's real and imaginary parts times k, [rows][8] real values.
 * m, s and rows are at least 1.
 */

import { BR_IF, END, F64X2_ADD, F64X2_MUL, F64X2_SPLAT, F64X2_SUB, F64_LOAD, I32, I32_ADD, I32_CONST, I32_MUL, I32_NE,
  LOCAL_TEE, LOOP, V128, V128_LOAD, V128_STORE, VOID, assembleModule, funcBody, get, instantiate, set, sleb,
  type WasmMemory } from '../util/wasm.js';

/** Columns per block, and float64 values per block row (real parts, then imaginary parts). */
export const BLOCK_COLUMNS = 8;
export const BLOCK_ROW = 2 * BLOCK_COLUMNS;
const ROW_BYTES = 8 * BLOCK_ROW;
const IM = 8 * BLOCK_COLUMNS;

type Code = number[];
const v = (i: number): Code => get(i);
const op = (o: Code, a: Code, b: Code): Code => [...a, ...b, ...o];
const add = (a: Code, b: Code) => op(F64X2_ADD, a, b);
const sub = (a: Code, b: Code) => op(F64X2_SUB, a, b);
const mul = (a: Code, b: Code) => op(F64X2_MUL, a, b);
const splat = (ptr: number, offset: number): Code => [...get(ptr), ...F64_LOAD(offset), ...F64X2_SPLAT];

// Parameters, then i32 locals, then v128 locals.
const X = 0, Y = 1, MM = 2, S = 3, TW = 4, C = 5;
const P = 6, Q = 7, IS = 8, OS = 9, IN = 10, OUT = 11, T = 12; // IN/OUT: row pointers of (p, q)
const IP = [13, 14, 15, 16]; // input rows j = 0..3 of (p, q)
const OP = [17, 18, 19, 20]; // output rows k = 0..3
const I32_LOCALS = 15;
let vi = 6 + I32_LOCALS;
const vl = () => vi++;
const W = [[vl(), vl()], [vl(), vl()], [vl(), vl()]]; // twiddles k = 1..3: [re, im]
const NSG = vl(), SG = vl(), H = vl(), HALF = vl();
const XR = [vl(), vl(), vl(), vl()], XI = [vl(), vl(), vl(), vl()];
const T0R = vl(), T0I = vl(), T1R = vl(), T1I = vl(), T2R = vl(), T2I = vl(), T3R = vl(), T3I = vl();
const DR = vl(), DI = vl(), UR = vl(), UI = vl();
const V128_LOCALS = vi - (6 + I32_LOCALS);

/** out row k, column pair at byte offset o: u · w_k (complex), from locals ur, ui. */
function twiddled(k: number, o: number, ur: Code, ui: Code): Code {
  const [wr, wi] = W[k - 1];
  // dprint-ignore: one instruction and its immediates per line
  return [
    ...ur, ...set(UR), ...ui, ...set(UI),
    ...get(OP[k]), ...sub(mul(v(UR), v(wr)), mul(v(UI), v(wi))), ...V128_STORE(o),
    ...get(OP[k]), ...add(mul(v(UR), v(wi)), mul(v(UI), v(wr))), ...V128_STORE(IM + o),
  ];
}

function butterfly(r: number, o: number): Code {
  const code: Code = [];
  for (let j = 0; j < r; j++)
    code.push(...get(IP[j]), ...V128_LOAD(o), ...set(XR[j]), ...get(IP[j]), ...V128_LOAD(IM + o), ...set(XI[j]));
  if (r === 4) {
    // dprint-ignore: one instruction and its immediates per line
    code.push(
      ...add(v(XR[0]), v(XR[2])), ...set(T0R), ...add(v(XI[0]), v(XI[2])), ...set(T0I),
      ...sub(v(XR[0]), v(XR[2])), ...set(T1R), ...sub(v(XI[0]), v(XI[2])), ...set(T1I),
      ...add(v(XR[1]), v(XR[3])), ...set(T2R), ...add(v(XI[1]), v(XI[3])), ...set(T2I),
      ...sub(v(XR[1]), v(XR[3])), ...set(DR), ...sub(v(XI[1]), v(XI[3])), ...set(DI),
      ...mul(v(NSG), v(DI)), ...set(T3R), ...mul(v(SG), v(DR)), ...set(T3I),
      ...get(OP[0]), ...add(v(T0R), v(T2R)), ...V128_STORE(o),
      ...get(OP[0]), ...add(v(T0I), v(T2I)), ...V128_STORE(IM + o),
      ...twiddled(1, o, add(v(T1R), v(T3R)), add(v(T1I), v(T3I))),
      ...twiddled(2, o, sub(v(T0R), v(T2R)), sub(v(T0I), v(T2I))),
      ...twiddled(3, o, sub(v(T1R), v(T3R)), sub(v(T1I), v(T3I))),
    );
  } else if (r === 3) {
    // s = x1 + x2 (T0), d = x1 − x2, m = x0 − ½ s (T1)
    // dprint-ignore: one instruction and its immediates per line
    code.push(
      ...add(v(XR[1]), v(XR[2])), ...set(T0R), ...add(v(XI[1]), v(XI[2])), ...set(T0I),
      ...sub(v(XR[1]), v(XR[2])), ...set(DR), ...sub(v(XI[1]), v(XI[2])), ...set(DI),
      ...sub(v(XR[0]), mul(v(HALF), v(T0R))), ...set(T1R), ...sub(v(XI[0]), mul(v(HALF), v(T0I))), ...set(T1I),
      ...get(OP[0]), ...add(v(XR[0]), v(T0R)), ...V128_STORE(o),
      ...get(OP[0]), ...add(v(XI[0]), v(T0I)), ...V128_STORE(IM + o),
      ...twiddled(1, o, sub(v(T1R), mul(v(H), v(DI))), add(v(T1I), mul(v(H), v(DR)))),
      ...twiddled(2, o, add(v(T1R), mul(v(H), v(DI))), sub(v(T1I), mul(v(H), v(DR)))),
    );
  } else {
    // dprint-ignore: one instruction and its immediates per line
    code.push(
      ...get(OP[0]), ...add(v(XR[0]), v(XR[1])), ...V128_STORE(o),
      ...get(OP[0]), ...add(v(XI[0]), v(XI[1])), ...V128_STORE(IM + o),
      ...twiddled(1, o, sub(v(XR[0]), v(XR[1])), sub(v(XI[0]), v(XI[1]))),
    );
  }
  return code;
}

const i32 = (n: number): Code => [I32_CONST, ...sleb(n)];
/** Loop until local `i` (incremented by one) equals local `end`. */
const countTo = (i: number,
  end: number): Code => [...get(i), ...i32(1), I32_ADD, LOCAL_TEE, i, ...get(end), I32_NE, BR_IF, 0];

function stageBody(r: number): number[] {
  // dprint-ignore: one instruction and its immediates per line
  const code: Code = [
    ...get(C), ...F64_LOAD(0), ...F64X2_SPLAT, ...set(NSG),
    ...splat(C, 8), ...set(SG), ...splat(C, 16), ...set(H), ...splat(C, 24), ...set(HALF),
    // inStep = s·m rows, outStep = s rows (bytes)
    ...get(S), ...get(MM), I32_MUL, ...i32(ROW_BYTES), I32_MUL, ...set(IS),
    ...get(S), ...i32(ROW_BYTES), I32_MUL, ...set(OS),
    ...i32(0), ...set(P),
    LOOP, VOID,
  ];
  for (let k = 1; k < r; k++)
    code.push(...splat(TW, 16 * (k - 1)), ...set(W[k - 1][0]), ...splat(TW, 16 * (k - 1) + 8), ...set(W[k - 1][1]));
  // dprint-ignore: one instruction and its immediates per line
  code.push(
    // IN = x + s·p rows, OUT = y + r·s·p rows
    ...get(S), ...get(P), I32_MUL, ...i32(ROW_BYTES), I32_MUL, ...set(T),
    ...get(X), ...get(T), I32_ADD, ...set(IN),
    ...get(Y), ...get(T), ...i32(r), I32_MUL, I32_ADD, ...set(OUT),
    ...i32(0), ...set(Q),
    LOOP, VOID,
    ...get(IN), ...set(IP[0]),
    ...get(OUT), ...set(OP[0]),
  );
  for (let j = 1; j < r; j++)
    code.push(...get(IP[j - 1]), ...get(IS), I32_ADD, ...set(IP[j]), ...get(OP[j - 1]), ...get(OS), I32_ADD,
      ...set(OP[j]));
  for (let o = 0; o < IM; o += 16) code.push(...butterfly(r, o));
  // dprint-ignore: one instruction and its immediates per line
  code.push(
    ...get(IN), ...i32(ROW_BYTES), I32_ADD, ...set(IN),
    ...get(OUT), ...i32(ROW_BYTES), I32_ADD, ...set(OUT),
    ...countTo(Q, S),
    END,
    ...get(TW), ...i32(16 * (r - 1)), I32_ADD, ...set(TW),
    ...countTo(P, MM),
    END,
    END,
  );
  return funcBody([[I32_LOCALS, I32], [V128_LOCALS, V128]], code);
}

/** mul(x, k, rows): x's rows times k's, [rows][8] real factors. */
function mulBody(): number[] {
  // reuses the stage's local numbering: P counts rows, IN walks x, OUT walks k
  const code: Code = [...i32(0), ...set(P), ...get(X), ...set(IN), ...get(Y), ...set(OUT), LOOP, VOID];
  for (let o = 0; o < IM; o += 16) {
    // dprint-ignore: one instruction and its immediates per line
    code.push(
      ...get(OUT), ...V128_LOAD(o), ...set(T0R),
      ...get(IN), ...get(IN), ...V128_LOAD(o), ...get(T0R), ...F64X2_MUL, ...V128_STORE(o),
      ...get(IN), ...get(IN), ...V128_LOAD(IM + o), ...get(T0R), ...F64X2_MUL, ...V128_STORE(IM + o),
    );
  }
  code.push(...get(IN), ...i32(ROW_BYTES), I32_ADD, ...set(IN), ...get(OUT), ...i32(IM), I32_ADD, ...set(OUT),
    ...countTo(P, MM), END, END);
  return funcBody([[I32_LOCALS, I32], [V128_LOCALS, V128]], code);
}

export interface FftSimd {
  memory: WasmMemory;
  r4: (x: number, y: number, m: number, s: number, tw: number, c: number) => void;
  r3: (x: number, y: number, m: number, s: number, tw: number, c: number) => void;
  r2: (x: number, y: number, m: number, s: number, tw: number, c: number) => void;
  /** mul(x, k, rows): see the module comment (the last three arguments are unused). */
  mul: (x: number, k: number, rows: number, a: number, b: number, c: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after); false when it cannot grow that far. */
  ensure(bytes: number): boolean;
}

let moduleBytes: Uint8Array<ArrayBuffer> | undefined;

/** The module's bytes (its text form is test/goldens/wasm/fft.wat). */
export function fftModule(): Uint8Array<ArrayBuffer> {
  return assembleModule(6, [['r4', stageBody(4)], ['r3', stageBody(3)], ['r2', stageBody(2)], ['mul', mulBody()]]);
}

/** A new instance with its own memory, or null when WebAssembly SIMD is unavailable. */
export function fftSimd(): FftSimd | null {
  moduleBytes ??= fftModule();
  const inst = instantiate(moduleBytes);
  if (!inst) return null;
  const e = inst.exports as Record<string, FftSimd['r4']>;
  return { memory: inst.memory, r4: e.r4, r3: e.r3, r2: e.r2, mul: e.mul, ensure: inst.ensure };
}
