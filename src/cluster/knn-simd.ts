/**
 * A WebAssembly SIMD kernel for the dot products of the exact kNN (src/cluster/knn.ts):
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
 * knnSimd() returns null when WebAssembly SIMD is unavailable (or LOBES_NO_SIMD is set).
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

function str(s: string): number[] {
  const b = [...Buffer.from(s, 'utf8')];
  return [...leb(b.length), ...b];
}

function section(id: number, content: number[]): number[] {
  return [id, ...leb(content.length), ...content];
}

function vec(items: number[][]): number[] {
  return [...leb(items.length), ...items.flat()];
}

const LOCAL_GET = 0x20, LOCAL_SET = 0x21, LOCAL_TEE = 0x22, I32_CONST = 0x41;
const I32_ADD = 0x6a, I32_SUB = 0x6b;
const LOOP = 0x03, VOID = 0x40, END = 0x0b, BR_IF = 0x0d;
const simd = (op: number) => [0xfd, ...leb(op)];
const V128_LOAD = (offset: number) => [...simd(0x00), 0x03, ...leb(offset)];
const V128_LOAD64_SPLAT = (offset: number) => [...simd(0x0a), 0x03, ...leb(offset)];
const V128_STORE = (offset: number) => [...simd(0x0b), 0x03, ...leb(offset)];
const V128_ZERO = [...simd(0x0c), ...new Array<number>(16).fill(0)];
const F64X2_ADD = simd(0xf0);
const F64X2_MUL = simd(0xf2);
const F64X2_SUB = simd(0xf1);
const F64X2_MAX = simd(0xf5);
const V128_TWO = [...simd(0x0c), 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x40];

/** Values between the rows of `out` (the data rows of one call are at most this many). */
export const OUT_STRIDE = 256;

// Parameters, then locals: c counter, query/data pointers, accumulators ACC[r][h], Y vectors.
const QP = 0, YP = 1, NBLK = 2, D = 3, OUT = 4, SQQ = 5, SQY = 6;
const C = 7, QC = 8;
const ACC = [[9, 10], [11, 12], [13, 14], [15, 16]];
const Y = [17, 18];
const get = (i: number) => [LOCAL_GET, i];
const set = (i: number) => [LOCAL_SET, i];

function dotsBody(): number[] {
  const locals = vec([[2, 0x7f], [10, 0x7b]]);
  const zero: number[] = [];
  for (const a of ACC) for (const v of a) zero.push(...V128_ZERO, ...set(v));
  const inner: number[] = [...get(YP), ...V128_LOAD(0), ...set(Y[0]), ...get(YP), ...V128_LOAD(16), ...set(Y[1])];
  for (let r = 0; r < 4; r++) {
    for (let h = 0; h < 2; h++) {
      inner.push(...get(ACC[r][h]), ...get(QC), ...V128_LOAD64_SPLAT(8 * r), ...get(Y[h]), ...F64X2_MUL, ...F64X2_ADD, ...set(ACC[r][h]));
    }
  }
  inner.push(...get(QC), I32_CONST, 32, I32_ADD, ...set(QC));
  inner.push(...get(YP), I32_CONST, 32, I32_ADD, ...set(YP));
  const store: number[] = [];
  for (let r = 0; r < 4; r++)
    for (let h = 0; h < 2; h++) {
      store.push(...get(OUT), ...get(SQQ), ...V128_LOAD64_SPLAT(8 * r), ...get(SQY), ...V128_LOAD(16 * h), ...F64X2_ADD);
      store.push(...get(ACC[r][h]), ...V128_TWO, ...F64X2_MUL, ...F64X2_SUB, ...V128_ZERO, ...F64X2_MAX, ...V128_STORE(8 * OUT_STRIDE * r + 16 * h));
    }
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
  const b = [...locals, ...code];
  return [...leb(b.length), ...b];
}

function moduleBytes(): Uint8Array<ArrayBuffer> {
  const type = section(1, vec([[0x60, ...vec([[0x7f], [0x7f], [0x7f], [0x7f], [0x7f], [0x7f], [0x7f]]), ...vec([])]]));
  const imp = section(2, vec([[...str('env'), ...str('mem'), 0x02, 0x00, 0x01]]));
  const func = section(3, vec([[0x00]]));
  const exp = section(7, vec([[...str('dist'), 0x00, 0x00]]));
  const code = section(10, vec([dotsBody()]));
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...type, ...imp, ...func, ...exp, ...code]);
}

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

export interface KnnSimd {
  memory: WasmMemory;
  /** See the module comment; nblk >= 1, d >= 1, byte addresses 16-aligned. */
  dist: (qp: number, yp: number, nblk: number, d: number, out: number, sqq: number, sqy: number) => void;
  /** Make the memory at least `bytes` long (views must be re-made after). */
  ensure(bytes: number): void;
}

/** A new instance with its own memory, or null when WebAssembly SIMD is unavailable. */
export function knnSimd(): KnnSimd | null {
  if (process.env.LOBES_NO_SIMD) return null;
  try {
    const bytes = moduleBytes();
    const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
    if (!wasm || !wasm.validate(bytes)) return null;
    const memory = new wasm.Memory({ initial: 1 });
    const inst = new wasm.Instance(new wasm.Module(bytes), { env: { mem: memory } });
    const dist = inst.exports.dist as KnnSimd['dist'];
    return {
      memory,
      dist,
      ensure(n: number) {
        const have = memory.buffer.byteLength;
        if (n > have) memory.grow(Math.ceil((n - have) / 65536));
      },
    };
  } catch {
    return null;
  }
}
