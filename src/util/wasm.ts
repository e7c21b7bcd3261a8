/**
 * A minimal WebAssembly module assembler for lobes' hand-written SIMD kernels
 * (src/wanda/simd.ts, src/util/dot-simd.ts): binary encoding helpers, the common opcodes,
 * one-type modules that import their memory as env.mem, and instantiation that returns null
 * when WebAssembly SIMD is unavailable or LOBES_NO_SIMD is set (callers then run their
 * JavaScript loops).
 */

/** Unsigned LEB128. */
export function leb(n: number): number[] {
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
export function sleb(n: number): number[] {
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

/** A length-prefixed vector of encoded items. */
export function vec(items: number[][]): number[] {
  return [...leb(items.length), ...items.flat()];
}

/** A UTF-8 name. */
export function name(s: string): number[] {
  const b = [...Buffer.from(s, 'utf8')];
  return [...leb(b.length), ...b];
}

function section(id: number, content: number[]): number[] {
  return [id, ...leb(content.length), ...content];
}

// ---------------------------------------------------------------------------------------
// The opcode table: every instruction the kernels use, named as in the WebAssembly text format
// (i32.load → I32_LOAD, f64x2.add → F64X2_ADD). Kernel files import these and define none.

/** Value and block types. */
export const I32 = 0x7f, F64 = 0x7c, V128 = 0x7b, VOID = 0x40;
/** Control. */
export const BLOCK = 0x02, LOOP = 0x03, IF = 0x04, END = 0x0b, BR = 0x0c, BR_IF = 0x0d;
/** Locals and scalar constants. */
export const LOCAL_GET = 0x20, LOCAL_SET = 0x21, LOCAL_TEE = 0x22, I32_CONST = 0x41;
/** i32 comparisons and arithmetic. */
export const I32_NE = 0x47, I32_LT_S = 0x48, I32_LT_U = 0x49, I32_GE_S = 0x4e;
export const I32_ADD = 0x6a, I32_SUB = 0x6b, I32_MUL = 0x6c, I32_SHL = 0x74;
/** f64 and f32 scalar arithmetic. */
export const F64_ADD = 0xa0, F64_DIV = 0xa3, F32_DEMOTE_F64 = 0xb6;
/** A SIMD (0xfd-prefixed) opcode. */
export const simd = (op: number): number[] => [0xfd, ...leb(op)];

/**
 * A memory instruction: opcode, alignment hint (log2 of `alignBytes`, the access's natural
 * alignment unless the kernel's addresses guarantee less) and offset.
 */
function memory(code: number[], natural: number): (offset?: number, alignBytes?: number) => number[] {
  return (offset = 0, alignBytes = natural) => {
    if (!(alignBytes >= 1 && alignBytes <= natural && (alignBytes & (alignBytes - 1)) === 0))
      throw new Error(`alignment ${alignBytes} of a ${natural}-byte access`);
    return [...code, Math.log2(alignBytes), ...leb(offset)];
  };
}
export const I32_LOAD = memory([0x28], 4), F64_LOAD = memory([0x2b], 8);
export const F32_STORE = memory([0x38], 4), F64_STORE = memory([0x39], 8);
export const V128_LOAD = memory(simd(0x00), 16), V128_STORE = memory(simd(0x0b), 16);
export const V128_LOAD64_SPLAT = memory(simd(0x0a), 8);
export const V128_LOAD32_ZERO = memory(simd(0x5c), 4), V128_LOAD64_ZERO = memory(simd(0x5d), 8);
/** v128.load32_lane / load64_lane: one lane from memory, the others kept. */
export const V128_LOAD32_LANE = (lane: number, offset = 0): number[] => [...memory(simd(0x56), 4)(offset), lane];
export const V128_LOAD64_LANE = (lane: number, offset = 0): number[] => [...memory(simd(0x57), 8)(offset), lane];

/** The little-endian bytes of a float64. */
export const f64Bytes = (x: number): number[] => [...new Uint8Array(Float64Array.of(x).buffer)];
/** f64.const x. */
export const F64_CONST = (x: number): number[] => [0x44, ...f64Bytes(x)];
/** v128.const of 16 bytes; V128_F64X2(a, b): the lanes a and b as f64. */
export const V128_CONST = (bytes: number[]): number[] => [...simd(0x0c), ...bytes];
export const V128_F64X2 = (a: number, b = a): number[] => V128_CONST([...f64Bytes(a), ...f64Bytes(b)]);
export const V128_ZERO = V128_CONST(new Array<number>(16).fill(0));

/** SIMD lane operations. */
export const F64X2_SPLAT = simd(0x14);
export const F64X2_EXTRACT_LANE = (lane: number): number[] => [...simd(0x21), lane];
export const F64X2_GT = simd(0x4a), V128_AND = simd(0x4e);
export const F64X2_PROMOTE_LOW_F32X4 = simd(0x5f);
export const I32X4_EXTEND_LOW_I16X8_U = simd(0xa9), I32X4_EXTEND_HIGH_I16X8_U = simd(0xaa), I32X4_SHL = simd(0xab);
export const F32X4_ABS = simd(0xe0), F32X4_ADD = simd(0xe4);
export const F64X2_SQRT = simd(0xef), F64X2_ADD = simd(0xf0), F64X2_SUB = simd(0xf1), F64X2_MUL = simd(0xf2),
  F64X2_DIV = simd(0xf3), F64X2_MAX = simd(0xf5);
export const get = (i: number): number[] => [LOCAL_GET, i];
export const set = (i: number): number[] => [LOCAL_SET, i];

/** A function body: its locals as [count, type] groups, then its code (which ends with END). */
export function funcBody(locals: [number, number][], code: number[]): number[] {
  const b = [...vec(locals), ...code];
  return [...leb(b.length), ...b];
}

/**
 * A module whose functions all have the type (i32 × nParams) -> (), importing its memory as
 * env.mem and exporting each function under its name. With `shared`, the import is a shared
 * memory of at most 4 GiB (one made by sharedMemory, which threads can hand to one another).
 */
export function assembleModule(nParams: number, funcs: [string, number[]][], shared = false): Uint8Array<ArrayBuffer> {
  const type = section(1, vec([[0x60, ...vec(new Array(nParams).fill([I32])), ...vec([])]]));
  const limits = shared ? [0x03, 0x01, ...leb(65536)] : [0x00, 0x01];
  const imp = section(2, vec([[...name('env'), ...name('mem'), 0x02, ...limits]]));
  const func = section(3, vec(funcs.map(() => [0x00])));
  const exp = section(7, vec(funcs.map(([n], i) => [...name(n), 0x00, ...leb(i)])));
  const code = section(10, vec(funcs.map(([, body]) => body)));
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...type, ...imp, ...func, ...exp, ...code]);
}

/** The parts of the WebAssembly API used here (the build's lib has no WebAssembly types). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Memory: new(d: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
  Module: new(bytes: Uint8Array) => object;
  Instance: new(m: object, imports: object) => { exports: Record<string, unknown> };
}

export interface WasmInstance {
  memory: WasmMemory;
  exports: Record<string, unknown>;
  /**
   * Make the memory at least `bytes` long (views must be re-made after); false when it cannot
   * grow that far (32-bit WebAssembly memory ends at 4 GiB): callers then run their JavaScript loops.
   */
  ensure(bytes: number): boolean;
}

/**
 * A shared memory of `bytes` (rounded up to whole 64 KiB pages, fixed size) whose buffer is a
 * SharedArrayBuffer, for modules assembled with `shared`; null when WebAssembly SIMD is
 * unavailable, LOBES_NO_SIMD is set or the size is over 4 GiB.
 */
export function sharedMemory(bytes: number): WasmMemory | null {
  if (process.env.LOBES_NO_SIMD) return null;
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  if (!(pages <= 65536)) return null;
  try {
    const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
    return wasm ? new wasm.Memory({ initial: pages, maximum: pages, shared: true }) : null;
  } catch {
    return null;
  }
}

/** Modules compiled by instantiateShared, by their bytes (a thread instantiates one per memory it is handed). */
const compiled = new WeakMap<Uint8Array, object>();

/** Exports of a module assembled with `shared` on a memory from sharedMemory; null where that fails. */
export function instantiateShared(bytes: Uint8Array, memory: WasmMemory): Record<string, unknown> | null {
  if (process.env.LOBES_NO_SIMD) return null;
  try {
    const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
    if (!wasm) return null;
    let mod = compiled.get(bytes);
    if (!mod) {
      if (!wasm.validate(bytes)) return null;
      mod = new wasm.Module(bytes);
      compiled.set(bytes, mod);
    }
    return new wasm.Instance(mod, { env: { mem: memory } }).exports;
  } catch {
    return null;
  }
}

/** Instantiate a module with a fresh memory; null when WebAssembly SIMD is unavailable or LOBES_NO_SIMD is set. */
export function instantiate(bytes: Uint8Array): WasmInstance | null {
  if (process.env.LOBES_NO_SIMD) return null;
  try {
    const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
    if (!wasm || !wasm.validate(bytes)) return null;
    const memory = new wasm.Memory({ initial: 1 });
    const inst = new wasm.Instance(new wasm.Module(bytes), { env: { mem: memory } });
    return {
      memory,
      exports: inst.exports,
      ensure(n: number) {
        const have = memory.buffer.byteLength;
        if (n <= have) return true;
        if (!(n <= 65536 * 65536)) return false;
        try {
          memory.grow(Math.ceil((n - have) / 65536));
          return true;
        } catch {
          return false;
        }
      },
    };
  } catch {
    return null;
  }
}
