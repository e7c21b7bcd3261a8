/**
 * --resolution weight: regions of individual weights. For each matrix (one at a time, |W|
 * decoded once), each labelling and each group, the score |W_ij| * s_g[j] is formed in one
 * scratch matrix, its k-th largest value found by selection, and the k weights above it
 * (ties at the threshold taken in flat-index order) form the group's region in that matrix;
 * k is the --top fraction or count of d_out * d_in. Only one matrix's |W| and score matrix
 * exist at a time (plus one membership mask per group); the regions are kept as counts:
 *
 *   - weight level: |A|, |B|, |A ∩ B| per pair (Jaccard, isolation) for every labelling;
 *   - block level: the share of each block's weights that are in the region ("pooled" map),
 *     from which the usual block regions, differences and metrics follow (top blocks by share).
 */
import { LobesError } from '../util/errors.js';
import { groupSquareSums, rmsScaler, type ActivationSource } from './stats.js';
import { selectTop, keepCount, kthLargest, type TopSpec, type Masks } from './regions.js';
import { checkedGroups, checkDims, labelingGenerator, pairList, emptyNulls, recordNull, summarize, nullTest,
  type AnalyzeResult } from './analyze.js';
import type { MatrixRef } from './kernel.js';
import { MatrixRowReader } from './rows.js';
import type { WandaMatrix, WandaWeightPairMetrics } from './types.js';

export { kthLargest };

export interface WeightInput {
  matrices: MatrixRef[];
  infos: WandaMatrix[];
  source: ActivationSource;
  labels: string[];
  groups?: string[];
  /** Each sample's item group, or null (src/wanda/analyze.ts labellingDesign). */
  itemGroups?: Int32Array | null;
}

export interface WeightOptions {
  block: [number, number];
  top: TopSpec;
  permutations: number;
  seed: number;
  onLabeling?: (done: number, total: number) => void;
  /** Called after each matrix has been scored for every labelling. */
  onMatrix?: (done: number, total: number) => void;
}

/**
 * Weight-resolution regions for every group and labelling (observed + permutations), matrix by
 * matrix; returns the block-level result (from the share maps) and the weight-level metrics.
 */
export async function analyzeWeights(input: WeightInput,
  opts: WeightOptions): Promise<{ result: AnalyzeResult; weightLevel: WandaWeightPairMetrics[] }>
{
  const { matrices, infos, source } = input;
  const enc = checkedGroups(input.labels, input.groups);
  const G = enc.groups.length;
  checkDims(infos, source);
  const [rb, cb] = opts.block;
  const R = opts.permutations;
  const total = R + 1;
  const gen = labelingGenerator(enc.index, source.n, opts.seed, input.itemGroups);
  const labelings: Int32Array[] = [];
  for (let l = 0; l < total; l++) labelings.push(gen());
  const pairs = pairList(G);
  // Weight-level counts per labelling: sizes [l][g], intersections [l][pair].
  const sizes = Array.from({ length: total }, () => new Float64Array(G));
  const inter = Array.from({ length: total }, () => new Float64Array(pairs.length));
  // Share maps per labelling, group, matrix.
  const shares: Float32Array[][][] = Array.from({ length: total },
    () => Array.from({ length: G }, () => new Array<Float32Array>(matrices.length)));

  let cachedHook = '';
  let cachedSums: Float64Array[] = [];
  for (let k = 0; k < matrices.length; k++) {
    const m = matrices[k];
    const info = infos[k];
    const n = m.dOut * m.dIn;
    const absW = readAbsWeights(m);
    if (m.input !== cachedHook) {
      cachedSums = await groupSquareSums(source, m.input, labelings, G);
      cachedHook = m.input;
    }
    const kKeep = keepCount(opts.top, n);
    const score = new Float32Array(n);
    const work = new Float32Array(n);
    const member = Array.from({ length: G }, () => new Uint8Array(n));
    const s = new Float64Array(m.dIn);
    for (let l = 0; l < total; l++) {
      for (let g = 0; g < G; g++) {
        rmsScaler(cachedSums[l], g, m.dIn, enc.counts[g], s);
        for (let i = 0; i < m.dOut; i++) {
          const o = i * m.dIn;
          for (let j = 0; j < m.dIn; j++) score[o + j] = absW[o + j] * s[j];
        }
        sizes[l][g] += selectTopWeights(score, work, kKeep, member[g]);
        shares[l][g][k] = blockShares(member[g], m, info, rb, cb);
      }
      pairs.forEach(([a, b], p) => {
        const A = member[a];
        const B = member[b];
        let c = 0;
        for (let t = 0; t < n; t++) c += A[t] & B[t];
        inter[l][p] += c;
      });
    }
    opts.onMatrix?.(k + 1, matrices.length);
  }

  const nullVals = emptyNulls(pairs.length, G, R);
  let obsMasks: Masks[] = [];
  for (let l = 0; l < total; l++) {
    const masks = shares[l].map((sc) => selectTop(sc, infos, opts.top));
    if (l === 0) obsMasks = masks;
    else recordNull(nullVals, pairs, masks, infos, l - 1);
    opts.onLabeling?.(l + 1, total);
  }
  const result = summarize(enc, infos, shares[0], obsMasks, R > 0 ? nullVals : null);
  return { result, weightLevel: weightLevelMetrics(enc.groups, pairs, sizes, inter, R) };
}

/** |W| of a matrix, read in row slabs of about 4 Mi values; NaN or Inf is an error. */
function readAbsWeights(m: MatrixRef): Float32Array {
  const n = m.dOut * m.dIn;
  const absW = new Float32Array(n);
  const rr = new MatrixRowReader(m);
  try {
    const step = Math.max(1, Math.floor((4 << 20) / m.dIn));
    const tmp = new Float32Array(step * m.dIn);
    for (let r0 = 0; r0 < m.dOut; r0 += step) {
      const nr = Math.min(step, m.dOut - r0);
      const rows = rr.rows(r0, nr, tmp);
      for (let t = 0; t < nr * m.dIn; t++) absW[r0 * m.dIn + t] = Math.abs(rows[t]);
    }
  } finally {
    rr.close();
  }
  for (let t = 0; t < n; t++)
    if (!Number.isFinite(absW[t]))
      throw new LobesError(`weights contain NaN or Inf at row ${Math.floor(t / m.dIn)}, column ${t % m.dIn}`, {
        where: `tensor ${JSON.stringify(m.source.tensor)} (${m.name})`,
      });
  return absW;
}

/**
 * Mark exactly `kKeep` weights in `mem`: every score above the k-th largest, then ties at it
 * in index order. `work` is scratch of the same length. Returns the count marked.
 */
function selectTopWeights(score: Float32Array, work: Float32Array, kKeep: number, mem: Uint8Array): number {
  const n = score.length;
  work.set(score);
  const thr = kKeep > 0 ? kthLargest(work, kKeep) : Infinity;
  let cnt = 0;
  for (let t = 0; t < n; t++) {
    const v = score[t] > thr ? 1 : 0;
    mem[t] = v;
    cnt += v;
  }
  for (let t = 0; t < n && cnt < kKeep; t++) {
    if (score[t] === thr) {
      mem[t] = 1;
      cnt++;
    }
  }
  return cnt;
}

/** The share of each block's weights marked in `mem` (the block-level "pooled" map). */
function blockShares(mem: Uint8Array, m: MatrixRef, info: WandaMatrix, rb: number, cb: number): Float32Array {
  const share = new Float32Array(info.rowBlocks * info.colBlocks);
  for (let i = 0; i < m.dOut; i++) {
    const bi = Math.floor(i / rb);
    const o = i * m.dIn;
    for (let j = 0; j < m.dIn; j++) share[bi * info.colBlocks + Math.floor(j / cb)] += mem[o + j];
  }
  for (let bi = 0; bi < info.rowBlocks; bi++) {
    const h = Math.min(rb, m.dOut - bi * rb);
    for (let bj = 0; bj < info.colBlocks; bj++)
      share[bi * info.colBlocks + bj] /= h * (Math.min(m.dIn, (bj + 1) * cb) - bj * cb);
  }
  return share;
}

/** Jaccard and isolation of each pair's weight regions, tested against the permuted labellings (1..R). */
function weightLevelMetrics(groups: string[], pairs: [number, number][], sizes: Float64Array[], inter: Float64Array[],
  R: number): WandaWeightPairMetrics[]
{
  const total = R + 1;
  const wl = (l: number, p: number) => {
    const [a, b] = pairs[p];
    const sa = sizes[l][a];
    const sb = sizes[l][b];
    const i = inter[l][p];
    return { jaccard: sa + sb - i === 0 ? 0 : i / (sa + sb - i), isolationAB: sa === 0 ? 0 : (sa - i) / sa,
      isolationBA: sb === 0 ? 0 : (sb - i) / sb };
  };
  return pairs.map(([a, b], p) => {
    const obs = wl(0, p);
    const nul = { jaccard: new Float64Array(R), isolationAB: new Float64Array(R), isolationBA: new Float64Array(R) };
    for (let l = 1; l < total; l++) {
      const v = wl(l, p);
      nul.jaccard[l - 1] = v.jaccard;
      nul.isolationAB[l - 1] = v.isolationAB;
      nul.isolationBA[l - 1] = v.isolationBA;
    }
    return {
      a: groups[a],
      b: groups[b],
      sizeA: sizes[0][a],
      sizeB: sizes[0][b],
      jaccard: nullTest(obs.jaccard, R > 0 ? nul.jaccard : null),
      isolationAB: nullTest(obs.isolationAB, R > 0 ? nul.isolationAB : null),
      isolationBA: nullTest(obs.isolationBA, R > 0 ? nul.isolationBA : null),
    };
  });
}
