/**
 * The activation statistic. For a labelling L (a group index per sample, -1 = left out) and
 * a capture point with d features, the Wanda scaler of group g is
 *
 *   s_g[j] = sqrt( mean_{r : L[r] = g} x[r, j]^2 )
 *
 * (locuslab/wanda's scaler_row, one token per sample). Several labellings (the observed one
 * and a batch of permutations) are accumulated in one streaming read of the activations.
 */
import { LobesError, opt } from '../util/errors.js';
import type { RowChunk, RunReader } from '../store/types.js';
import { createSimd, align16 } from './simd.js';

/** What the analysis needs from a run: per-sample activations of its capture points. */
export interface ActivationSource {
  /** Number of samples (rows). */
  readonly n: number;
  /** Feature dimension of a capture point, or null when it was not captured. */
  dim(hook: string): number | null;
  /** Rows of a capture point in order, in chunks. */
  iterate(hook: string, chunkRows?: number): AsyncIterable<RowChunk>;
  /** Sample ids for messages (optional). */
  ids?: string[];
  /** Where the activations live (for messages). */
  where?: string;
  /** The run directory the activations are read from, when they are (worker threads open it themselves). */
  runDir?: string;
}

/** Activations held in memory: hook -> [n, dim] row-major float32. */
export function memorySource(n: number, hooks: Record<string, { dim: number; data: Float32Array }>,
  ids?: string[]): ActivationSource
{
  for (const [h, v] of Object.entries(hooks)) {
    if (v.data.length !== n * v.dim)
      throw new LobesError(`activations of ${h} have ${v.data.length} values, expected ${n} x ${v.dim}`);
  }
  return {
    n,
    ids,
    where: 'activations in memory',
    dim: (h) => hooks[h]?.dim ?? null,
    async *iterate(h, chunkRows = 1024) {
      const v = hooks[h];
      if (!v) throw new LobesError(`capture point ${h} not found`);
      for (let s = 0; s < n; s += chunkRows) {
        const rows = Math.min(chunkRows, n - s);
        yield { start: s, rows, data: v.data.subarray(s * v.dim, (s + rows) * v.dim) };
      }
    },
  };
}

/** Adapter from a run directory reader. */
export function runSource(run: RunReader): ActivationSource {
  const dims = new Map(run.hooks().map((h) => [h.name, h.dim]));
  return {
    n: run.samples.length,
    ids: run.samples.map((s) => s.id),
    where: run.dir,
    runDir: run.dir,
    dim: (h) => dims.get(h) ?? null,
    iterate: (h, chunkRows) => run.iterate(h, chunkRows),
  };
}

/**
 * Sums of x^2 per group for each labelling: returns, per labelling, Float64Array [G * d].
 * Throws naming the capture point and sample when an activation is NaN or Inf.
 */
export async function groupSquareSums(src: ActivationSource, hook: string, labelings: Int32Array[],
  G: number): Promise<Float64Array[]>
{
  const d = src.dim(hook);
  if (d === null) throw new LobesError(`capture point ${hook} is not in the run`, { file: src.where });
  // The sums live in WebAssembly memory when SIMD is available: one f64x2 add per pair of
  // features (the same additions in the same order as the plain loop below).
  const k = d >= 2 ? createSimd() : null;
  const dPad = d + (d & 1);
  const x2Off = 0;
  const sumsOff = dPad * 8;
  let sums: Float64Array[];
  let x2: Float64Array;
  if (k) {
    k.ensure(sumsOff + labelings.length * G * dPad * 8);
    x2 = new Float64Array(k.memory.buffer, x2Off, dPad);
    sums = labelings.map((_, l) => new Float64Array(k.memory.buffer, sumsOff + l * G * dPad * 8, G * dPad));
  } else {
    x2 = new Float64Array(dPad);
    sums = labelings.map(() => new Float64Array(G * dPad));
  }
  const nvec = dPad >> 1;
  let seen = 0;
  for await (const chunk of src.iterate(hook, Math.max(1, Math.floor((4 << 20) / (4 * d))))) {
    const data = chunk.data;
    if (data.length !== chunk.rows * d)
      throw new LobesError(`chunk at row ${chunk.start} has ${data.length} values, expected ${chunk.rows} x ${d}`, {
        file: src.where,
        where: hook,
      });
    for (let r = 0; r < chunk.rows; r++) {
      const row = chunk.start + r;
      squareRow(src, hook, data, r * d, d, row, x2, 0);
      for (let l = 0; l < labelings.length; l++) {
        const g = labelings[l][row];
        if (g < 0) continue;
        if (k) k.addf64(sumsOff + (l * G + g) * dPad * 8, x2Off, nvec);
        else {
          const S = sums[l];
          const o = g * dPad;
          for (let j = 0; j < d; j++) S[o + j] += x2[j];
        }
      }
    }
    seen += chunk.rows;
  }
  if (seen !== src.n)
    throw new LobesError(`capture point ${hook} has ${seen} rows but the run has ${src.n} samples`, {
      file: src.where,
    });
  // Compact copies [G * d] (the WebAssembly memory is released with the instance).
  return sums.map((S) => {
    const out = new Float64Array(G * d);
    for (let g = 0; g < G; g++) out.set(S.subarray(g * dPad, g * dPad + d), g * d);
    return out;
  });
}

/**
 * x2[o + j] = x[j]² for the row of `d` values at data[base..]; throws naming the capture point,
 * row and sample when a value is NaN or Inf (or overflows when squared).
 */
export function squareRow(src: ActivationSource, hook: string, data: Float32Array, base: number, d: number, row: number,
  x2: Float64Array, o: number): void
{
  for (let j = 0; j < d; j++) {
    const v = data[base + j];
    x2[o + j] = v * v;
  }
  for (let j = 0; j < d; j++) {
    if (!Number.isFinite(x2[o + j])) {
      const id = src.ids?.[row];
      throw new LobesError(
        `activation is ${Number.isNaN(data[base + j]) ? 'NaN' : 'Inf (or overflows when squared)'} at feature ${j}`,
        {
          file: src.where,
          where: `${hook}, row ${row}${id !== undefined ? ` (sample ${JSON.stringify(id)})` : ''}`,
          hint: `the capture produced non-finite values; re-run extract with ${
            opt('dtype', 'fp32')
          } or check the model`,
        },
      );
    }
  }
}

/** s_g = sqrt(sum / count) for group g of one labelling's sums. */
export function rmsScaler(sums: Float64Array, g: number, d: number, count: number,
  out: Float64Array = new Float64Array(d)): Float64Array
{
  const o = g * d;
  const inv = count > 0 ? 1 / count : 0;
  for (let j = 0; j < d; j++) out[j] = Math.sqrt(sums[o + j] * inv);
  return out;
}

/** A matrix fed by a capture point, with its column sums C [rowBlocks, dIn]. */
export interface PoolMatrix {
  C: Float32Array;
  dOut: number;
  dIn: number;
}

/** What poolHook gives for one capture point: pooled[labelling][group][matrix], and each labelling's group RMS s [G * d] (group-major). */
export interface HookPooled {
  pooled: Float32Array[][][];
  scalers: Float64Array[];
}

/**
 * Pooled maps of the matrices fed by one capture point of dimension d, from the group sums of
 * each labelling (groupSquareSums), with s_g = rmsScaler; the scalers come along for the
 * channel test (src/wanda/channels.ts).
 */
export function poolHook(sums: Float64Array[], d: number, counts: readonly number[], mats: readonly PoolMatrix[],
  rb: number, cb: number): HookPooled
{
  const scalers: Float64Array[] = [];
  const pool = matrixPooler(d, mats, rb, cb);
  const pooled = sums.map((S) => {
    const all = new Float64Array(counts.length * d);
    scalers.push(all);
    return pool(counts.map((count, g) => rmsScaler(S, g, d, count, all.subarray(g * d, (g + 1) * d))));
  });
  return { pooled, scalers };
}

/** poolBlocks of every matrix fed by one capture point for each scaler s_g [d]: [g][matrix]; the SIMD kernels where they apply, else poolBlocks (the same bytes). */
export function matrixPooler(d: number, mats: readonly PoolMatrix[], rb: number,
  cb: number): (s: Float64Array[]) => Float32Array[][]
{
  const simd = simdPooler(d, mats, rb, cb);
  return simd ?? ((s) => s.map((sg) => mats.map((m) => poolBlocks(m.C, sg, m.dOut, m.dIn, rb, cb))));
}

/**
 * poolBlocks of every matrix fed by one capture point through the SIMD kernel (C copied into
 * its memory once; the scalers per call), or null when SIMD is unavailable or the column blocks
 * are not a multiple of 4 wide. Four groups' scalers at a time share each read of C and are
 * finished in the kernel (poolrow4: the block means as float32), the rest one at a time
 * (poolrow, finished here). Bit-identical to poolBlocks: the kernels compute the same four
 * partial sums per block in the same order and combine them the same way, and a last narrower
 * column block goes through the same JavaScript.
 */
function simdPooler(d: number, mats: readonly PoolMatrix[], rb: number, cb: number):
  | ((s: Float64Array[]) => Float32Array[][])
  | null
{
  if (cb % 4 !== 0 || mats.length === 0) return null;
  // An instance of its own: its memory holds this capture point's C for the whole call.
  const k = createSimd();
  if (!k) return null;
  const d4 = d - (d % 4);
  // Header (poolrow4's divisor, scaler stride and output plane), four scaler planes, the
  // output planes (or poolrow's partial sums), then each matrix's C.
  const sOff = 16;
  const stride = align16(d4 * 8);
  const outOff = sOff + 4 * stride;
  const plane = align16(Math.max(...mats.map((m) => Math.ceil(m.dOut / rb) * Math.ceil(m.dIn / cb))) * 4);
  const maxK = Math.max(...mats.map((m) => Math.ceil(m.dIn / cb)));
  const cOffs: number[] = [];
  let end = outOff + Math.max(4 * plane, maxK * 32);
  for (const m of mats) {
    cOffs.push(end);
    end += align16(m.C.byteLength);
  }
  if (!k.ensure(end)) return null;
  const mem = k.memory.buffer;
  mats.forEach((m, i) => new Float32Array(mem, cOffs[i], m.C.length).set(m.C));
  const sPlanes = [0, 1, 2, 3].map((t) => new Float64Array(mem, sOff + t * stride, d4));
  const parts = new Float64Array(mem, outOff, maxK * 4);
  const header = new DataView(mem, 0, 16);
  header.setInt32(8, stride, true);
  header.setInt32(12, plane, true);
  // Pooled maps of `w` scalers (1 or 4) whose first `d4` values are in the scaler planes.
  const pool = (ss: Float64Array[], w: number): Float32Array[][] => {
    const all = ss.map(() => mats.map((m) => new Float32Array(Math.ceil(m.dOut / rb) * Math.ceil(m.dIn / cb))));
    mats.forEach((m, i) => {
      const { C, dOut, dIn } = m;
      const R = Math.ceil(dOut / rb);
      const K = Math.ceil(dIn / cb);
      const full = Math.floor(dIn / cb);
      if (full > 0 && w === 4) {
        for (let bi = 0; bi < R; bi++) {
          header.setFloat64(0, Math.min(rb, dOut - bi * rb) * cb, true);
          k.poolrow4(cOffs[i]! + bi * dIn * 4, sOff, full, cb / 4, outOff + bi * K * 4);
        }
        for (let t = 0; t < 4; t++) all[t]![i]!.set(new Float32Array(mem, outOff + t * plane, R * K));
      }
      for (let bi = 0; bi < R; bi++) {
        const h = Math.min(rb, dOut - bi * rb);
        const row = bi * dIn;
        if (full > 0 && w === 1) {
          k.poolrow(cOffs[i]! + row * 4, sOff, full, cb / 4, outOff);
          const res = all[0]![i]!;
          for (let bj = 0; bj < full; bj++) {
            const p = bj * 4;
            res[bi * K + bj] = (parts[p] + parts[p + 1] + (parts[p + 2] + parts[p + 3])) / (h * cb);
          }
        }
        if (full < K) {
          // The last, narrower column block: poolBlocks' loop.
          const j0 = full * cb;
          for (let t = 0; t < w; t++) all[t]![i]![bi * K + full] = poolBlock(C, ss[t]!, row, j0, dIn, h);
        }
      }
    });
    return all;
  };
  return (scalers) => {
    const out: Float32Array[][] = [];
    let g = 0;
    for (; g + 4 <= scalers.length; g += 4) {
      const four = scalers.slice(g, g + 4);
      four.forEach((st, t) => sPlanes[t]!.set(st.subarray(0, d4)));
      out.push(...pool(four, 4));
    }
    for (; g < scalers.length; g++) {
      sPlanes[0]!.set(scalers[g]!.subarray(0, d4));
      out.push(...pool([scalers[g]!], 1));
    }
    return out;
  };
}

/** Pooled block scores from C [rowBlocks, dIn] and s [dIn]: mean of |W_ij| s_j over each block's true area. */
export function poolBlocks(C: Float32Array, s: ArrayLike<number>, dOut: number, dIn: number, rb: number, cb: number,
  out?: Float32Array): Float32Array
{
  const R = Math.ceil(dOut / rb);
  const K = Math.ceil(dIn / cb);
  const res = out ?? new Float32Array(R * K);
  for (let bi = 0; bi < R; bi++) {
    const h = Math.min(rb, dOut - bi * rb);
    const row = bi * dIn;
    for (let bj = 0; bj < K; bj++) {
      const j0 = bj * cb;
      res[bi * K + bj] = poolBlock(C, s, row, j0, Math.min(dIn, j0 + cb), h);
    }
  }
  return res;
}

/** One block of poolBlocks: columns j0 .. j1 − 1 of the row block at C[row ..], h rows high. */
function poolBlock(C: Float32Array, s: ArrayLike<number>, row: number, j0: number, j1: number, h: number): number {
  // Four independent partial sums (instruction-level parallelism), combined at the end.
  let a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  let j = j0;
  for (; j + 3 < j1; j += 4) {
    a0 += s[j] * C[row + j];
    a1 += s[j + 1] * C[row + j + 1];
    a2 += s[j + 2] * C[row + j + 2];
    a3 += s[j + 3] * C[row + j + 3];
  }
  for (; j < j1; j++) a0 += s[j] * C[row + j];
  return (a0 + a1 + (a2 + a3)) / (h * (j1 - j0));
}
