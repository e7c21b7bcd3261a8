/**
 * The pieces of the separation metrics (src/cluster/space.ts puts them together): distances,
 * silhouette, leave-one-out kNN, Davies–Bouldin, bootstrap CIs and label-permutation p-values.
 *
 * Definitions (as in scikit-learn):
 *  - silhouette s_i = (b_i − a_i) / max(a_i, b_i), a_i the mean distance to the other members
 *    of i's class, b_i the smallest mean distance to another class; s_i = 0 when i's class
 *    has one member. The score is the mean of s_i.
 *  - Davies–Bouldin = mean over classes k of max_{l≠k} (S_k + S_l) / ‖c_k − c_l‖, S_k the
 *    mean euclidean distance of class k's members to its centroid c_k (for the cosine space,
 *    on L2-normalized rows). Lower is better.
 *  - kNN: each point is predicted from its k nearest other points (majority vote; a tie goes
 *    to the tied class with the nearest member among the k).
 *  - bootstrap: the mean of the per-sample values (s_i, kNN hit, out-of-fold probe hit) over
 *    samples drawn with replacement; 95% CI from the 2.5 and 97.5 percentiles.
 *  - permutation p = (1 + #{null ≥ observed}) / (1 + R), labels shuffled R times.
 */
import { Rng } from '../util/rng.js';
import { dotKernel, OUT_STRIDE } from '../util/dot-simd.js';
import { silhouetteMeansWasm } from './silhouette-wasm.js';
import { exchangeability, shuffleWithin, strataMembers } from './conditional.js';
import { resampleRows } from './resample.js';

export type Distance = 'euclidean' | 'cosine';

/** Row-normalized copy (zero rows stay zero). */
export function normalizeRows(X: Float64Array | Float32Array, n: number, d: number): Float64Array {
  const out = new Float64Array(n * d);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < d; j++) s += X[i * d + j] * X[i * d + j];
    const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
    for (let j = 0; j < d; j++) out[i * d + j] = X[i * d + j] * inv;
  }
  return out;
}

/** Full distance matrix [n, n]: euclidean, or cosine distance 1 − cos. */
export function distanceMatrix(X: Float64Array | Float32Array, n: number, d: number, metric: Distance): Float64Array {
  const Z = metric === 'cosine' ? normalizeRows(X, n, d) : X;
  const sq = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < d; j++) s += Z[i * d + j] * Z[i * d + j];
    sq[i] = s;
  }
  const D = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    const io = i * d;
    for (let j = i + 1; j < n; j++) {
      const jo = j * d;
      let v: number;
      if (metric === 'euclidean') {
        let s0 = 0;
        let s1 = 0;
        let c = 0;
        for (; c + 2 <= d; c += 2) {
          const a = Z[io + c] - Z[jo + c];
          const b = Z[io + c + 1] - Z[jo + c + 1];
          s0 += a * a;
          s1 += b * b;
        }
        for (; c < d; c++) {
          const a = Z[io + c] - Z[jo + c];
          s0 += a * a;
        }
        v = Math.sqrt(s0 + s1);
      } else {
        let dot = 0;
        for (let c = 0; c < d; c++) dot += Z[io + c] * Z[jo + c];
        const zero = sq[i] === 0 || sq[j] === 0;
        v = zero ? 1 : Math.max(0, 1 - dot);
      }
      D[i * n + j] = v;
      D[j * n + i] = v;
    }
  }
  return D;
}

/**
 * Euclidean and cosine distance matrices [n, n] from one Gram matrix (for high-dimensional
 * rows: one pass of dot products, four rows at a time, serves both), and the Gram matrix itself
 * (its upper triangle, for the probe's in-fold PCA: Block.gram in src/cluster/probecv.ts).
 */
export function gramDistances(X: Float64Array | Float32Array, n: number,
  d: number): { euclidean: Float64Array; cosine: Float64Array; gram: Float64Array }
{
  const G = new Float64Array(n * n);
  gramRows(X, n, d, G, 0, n);
  return { ...distancesFromGram(G, n), gram: G };
}

/**
 * Upper triangle (j ≥ i) of the Gram matrix for rows [r0, r1), four rows at a time; each entry
 * is the same whatever the range. The dot products run in the kNN module's WebAssembly SIMD
 * kernel when available, bit-identical to gramRowsJs (one product per column, in column order).
 */
export function gramRows(X: Float64Array | Float32Array, n: number, d: number, G: Float64Array, r0: number,
  r1: number): void
{
  const k = dotKernel();
  if (!k || d === 0 || r1 <= r0) {
    gramRowsJs(X, n, d, G, r0, r1);
    return;
  }
  // wasm memory (float64 offsets): the query rows [r0, r1) in quads [nq][d][4]; a block of
  // OUT_STRIDE data rows from [r0, n) packed the same way; the dot products [4][OUT_STRIDE].
  // Memory is O((r1 − r0 + OUT_STRIDE) · d) per thread, whatever n.
  const nq = Math.ceil((r1 - r0) / 4);
  const ypAt = nq * 4 * d;
  const outAt = ypAt + OUT_STRIDE * d;
  if (!k.ensure((outAt + 4 * OUT_STRIDE) * 8)) {
    gramRowsJs(X, n, d, G, r0, r1);
    return;
  }
  const M = new Float64Array(k.memory.buffer);
  const pack = (at: number, first: number, end: number, count: number) => {
    M.fill(0, at, at + count * d);
    for (let j = first; j < end; j++) {
      const b = at + ((j - first) >> 2) * 4 * d + ((j - first) & 3);
      const o = j * d;
      for (let c = 0; c < d; c++) M[b + 4 * c] = X[o + c];
    }
  };
  pack(0, r0, r1, nq * 4);
  // data blocks start at r0 + multiples of OUT_STRIDE, so a quad's first row i0 (i0 − r0 a
  // multiple of 4) starts a group of four inside its block
  for (let js = r0; js < n; js += OUT_STRIDE) {
    const je = Math.min(js + OUT_STRIDE, n);
    pack(ypAt, js, je, OUT_STRIDE);
    for (let i0 = r0; i0 < r1 && i0 < je; i0 += 4) {
      const m = Math.min(4, r1 - i0);
      const from = Math.max(js, i0);
      k.dots((i0 - r0) * d * 8, (ypAt + (from - js) * d) * 8, Math.ceil((je - from) / 4), d, outAt * 8, 0, 0);
      for (let r = 0; r < m; r++)
        G.set(M.subarray(outAt + r * OUT_STRIDE, outAt + r * OUT_STRIDE + je - from), (i0 + r) * n + from);
    }
  }
}

/** The JavaScript loop of gramRows. */
export function gramRowsJs(X: Float64Array | Float32Array, n: number, d: number, G: Float64Array, r0: number,
  r1: number): void
{
  for (let i0 = r0; i0 < r1; i0 += 4) {
    const m = Math.min(4, r1 - i0);
    const q0 = i0 * d;
    const q1 = m > 1 ? q0 + d : q0;
    const q2 = m > 2 ? q0 + 2 * d : q0;
    const q3 = m > 3 ? q0 + 3 * d : q0;
    for (let j = i0; j < n; j++) {
      const jo = j * d;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let c = 0; c < d; c++) {
        const x = X[jo + c];
        s0 += X[q0 + c] * x;
        s1 += X[q1 + c] * x;
        s2 += X[q2 + c] * x;
        s3 += X[q3 + c] * x;
      }
      G[i0 * n + j] = s0;
      if (m > 1) G[(i0 + 1) * n + j] = s1;
      if (m > 2) G[(i0 + 2) * n + j] = s2;
      if (m > 3) G[(i0 + 3) * n + j] = s3;
    }
  }
}

/** Euclidean and cosine distances from the upper triangle of a Gram matrix. */
export function distancesFromGram(G: Float64Array, n: number): { euclidean: Float64Array; cosine: Float64Array } {
  const euclidean = new Float64Array(n * n);
  const cosine = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const g = G[i * n + j];
      const a = G[i * n + i];
      const b = G[j * n + j];
      const e = Math.sqrt(Math.max(a + b - 2 * g, 0));
      const c = a === 0 || b === 0 ? 1 : Math.max(0, 1 - g / Math.sqrt(a * b));
      euclidean[i * n + j] = e;
      euclidean[j * n + i] = e;
      cosine[i * n + j] = c;
      cosine[j * n + i] = c;
    }
  }
  return { euclidean, cosine };
}

/**
 * Per-sample silhouette values from a distance matrix. The items are listed class by class
 * once; each row's sums per class then gather their distances with four running sums (no
 * scatter into a shared accumulator, which serializes on memory).
 */
export function silhouetteSamples(D: Float64Array, n: number, labels: Int32Array, nClasses: number): Float64Array {
  const counts = new Int32Array(nClasses);
  for (let i = 0; i < n; i++) counts[labels[i]]++;
  const start = new Int32Array(nClasses + 1);
  for (let c = 0; c < nClasses; c++) start[c + 1] = start[c] + counts[c];
  const order = new Int32Array(n);
  const fill = start.slice(0, nClasses);
  for (let j = 0; j < n; j++) order[fill[labels[j]]++] = j;
  const s = new Float64Array(n);
  const sums = new Float64Array(nClasses);
  for (let i = 0; i < n; i++) {
    const o = i * n;
    for (let c = 0; c < nClasses; c++) {
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let t = start[c];
      const e = start[c + 1];
      for (; t + 3 < e; t += 4) {
        s0 += D[o + order[t]];
        s1 += D[o + order[t + 1]];
        s2 += D[o + order[t + 2]];
        s3 += D[o + order[t + 3]];
      }
      for (; t < e; t++) s0 += D[o + order[t]];
      sums[c] = s0 + s1 + (s2 + s3);
    }
    const li = labels[i];
    if (counts[li] <= 1) {
      s[i] = 0;
      continue;
    }
    const a = sums[li] / (counts[li] - 1);
    let b = Infinity;
    for (let c = 0; c < nClasses; c++) if (c !== li && counts[c] > 0) b = Math.min(b, sums[c] / counts[c]);
    const m = Math.max(a, b);
    s[i] = m > 0 && b < Infinity ? (b - a) / m : 0;
  }
  return s;
}

/** The size of the largest group (the items sharing one group id). */
export function largestGroup(groups: Int32Array): number {
  const count = new Map<number, number>();
  let most = 0;
  for (const g of groups) {
    const c = (count.get(g) ?? 0) + 1;
    count.set(g, c);
    if (c > most) most = c;
  }
  return most;
}

/**
 * The k nearest other points of every row of D (ties by smaller index): [n, k]. With `groups`,
 * only points of other groups count (leave-one-group-out: an item's sibling items in its world
 * tree, which share its story, are never its neighbours).
 */
export function neighboursFromDistances(D: Float64Array, n: number, k: number, groups?: Int32Array | null): Int32Array {
  if (groups && k > n - largestGroup(groups)) {
    throw new Error(
      `k = ${k} neighbours outside each item's group, but a group holds ${largestGroup(groups)} of ${n} items`,
    );
  }
  const out = new Int32Array(n * k);
  const bd = new Float64Array(k);
  const bi = new Int32Array(k);
  for (let i = 0; i < n; i++) {
    const o = i * n;
    let size = 0;
    const gi = groups ? groups[i]! : -1;
    for (let j = 0; j < n; j++) {
      if (j === i || (groups && groups[j] === gi)) continue;
      const v = D[o + j];
      // j increases, so an equal distance never displaces an earlier index
      if (size === k && v >= bd[k - 1]) continue;
      let p = size < k ? size++ : k - 1;
      while (p > 0 && bd[p - 1] > v) {
        bd[p] = bd[p - 1];
        bi[p] = bi[p - 1];
        p--;
      }
      bd[p] = v;
      bi[p] = j;
    }
    for (let r = 0; r < k; r++) out[i * k + r] = bi[r];
  }
  return out;
}

/** Leave-one-out kNN predictions from neighbour lists. */
export function knnPredict(nbrs: Int32Array, n: number, k: number, labels: Int32Array, nClasses: number): Int32Array {
  const votes = new Int32Array(nClasses);
  const first = new Int32Array(nClasses);
  const pred = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    votes.fill(0);
    first.fill(k);
    for (let r = 0; r < k; r++) {
      const c = labels[nbrs[i * k + r]];
      votes[c]++;
      if (first[c] === k) first[c] = r;
    }
    let best = 0;
    for (let c = 1; c < nClasses; c++)
      if (votes[c] > votes[best] || (votes[c] === votes[best] && first[c] < first[best])) best = c;
    pred[i] = best;
  }
  return pred;
}

/** Davies–Bouldin index of X [n, d] (euclidean). */
export function daviesBouldin(X: Float64Array | Float32Array, n: number, d: number, labels: Int32Array,
  nClasses: number): number
{
  const cent = new Float64Array(nClasses * d);
  const counts = new Int32Array(nClasses);
  for (let i = 0; i < n; i++) {
    counts[labels[i]]++;
    for (let j = 0; j < d; j++) cent[labels[i] * d + j] += X[i * d + j];
  }
  for (let c = 0; c < nClasses; c++) for (let j = 0; j < d; j++) cent[c * d + j] /= Math.max(counts[c], 1);
  const S = new Float64Array(nClasses);
  for (let i = 0; i < n; i++) {
    const c = labels[i];
    let s = 0;
    for (let j = 0; j < d; j++) s += (X[i * d + j] - cent[c * d + j]) ** 2;
    S[c] += Math.sqrt(s);
  }
  for (let c = 0; c < nClasses; c++) S[c] /= Math.max(counts[c], 1);
  let total = 0;
  let present = 0;
  for (let a = 0; a < nClasses; a++) {
    if (counts[a] === 0) continue;
    present++;
    let worst = 0;
    for (let b = 0; b < nClasses; b++) {
      if (b === a || counts[b] === 0) continue;
      let dist = 0;
      for (let j = 0; j < d; j++) dist += (cent[a * d + j] - cent[b * d + j]) ** 2;
      dist = Math.sqrt(dist);
      const r = dist > 0 ? (S[a] + S[b]) / dist : Infinity;
      if (r > worst) worst = r;
    }
    total += worst;
  }
  return total / Math.max(present, 1);
}

/** Mean of a list (0 when empty). */
export function mean(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i];
  return a.length ? s / a.length : 0;
}

/**
 * Percentile bootstrap 95% CI of the mean of per-sample values; with `members` (the items of
 * each group, src/cluster/resample.ts groupMembers) each resample draws groups, then items
 * within them (a grouped resample's size varies with the groups drawn: its mean is over its rows).
 */
export function bootstrapCI(values: ArrayLike<number>, B: number, rng: Rng, members: Int32Array[] | null = null): [
  number,
  number,
] | null {
  const n = values.length;
  if (B <= 0 || n === 0) return null;
  const means = new Float64Array(B);
  let rows: Int32Array = new Int32Array(n);
  for (let b = 0; b < B; b++) {
    rows = resampleRows(n, rng, members, rows);
    let s = 0;
    for (let t = 0; t < rows.length; t++) s += values[rows[t]!]!;
    means[b] = s / rows.length;
  }
  means.sort();
  const q = (p: number) => {
    const pos = p * (B - 1);
    const lo = Math.floor(pos);
    const hi = Math.min(lo + 1, B - 1);
    return means[lo] + (means[hi] - means[lo]) * (pos - lo);
  };
  return [q(0.025), q(0.975)];
}

/** p = (1 + #{null ≥ observed}) / (1 + R). */
export function permutationP(observed: number, nulls: ArrayLike<number>): number | null {
  if (nulls.length === 0) return null;
  let c = 0;
  for (let i = 0; i < nulls.length; i++) if (nulls[i] >= observed - 1e-12) c++;
  return (1 + c) / (1 + nulls.length);
}

/** The label permutations of the silhouette and kNN p-values (the same draws spaceMetrics makes). */
export function permutationLabels(labels: Int32Array, count: number, seed: number,
  groups?: Int32Array | null): Int32Array[]
{
  const permRng = new Rng(seed).fork();
  const design = permutationDesign(labels, groups);
  const perm = Int32Array.from(labels);
  const out: Int32Array[] = [];
  for (let r = 0; r < count; r++) {
    designShuffle(permRng, perm, design);
    out.push(Int32Array.from(perm));
  }
  return out;
}

/**
 * How a null may shuffle the labels, given the items' groups (world trees, `--group`): without
 * groups, freely over the items; with groups whose every item has one label (the label belongs
 * to the group), whole groups' labels among the groups; otherwise only within each group, so
 * every group keeps its own labels and the null asks what the representation reads beyond the
 * group. The shuffles are exchangeable under each design's null; an item-level shuffle of
 * grouped data would make label patterns the design cannot produce.
 */
export type PermutationDesign =
  | { kind: 'items' }
  | { kind: 'within-groups'; blocks: number[][]; exchangeable: number; buf: Int32Array }
  | { kind: 'groups'; members: number[][]; exchangeable: number };

/** The design for `labels` with `groups` (null or absent: items). */
export function permutationDesign(labels: Int32Array, groups?: Int32Array | null): PermutationDesign {
  if (!groups) return { kind: 'items' };
  const lists = strataMembers(groups);
  const pure = lists.every((m) => m.every((i) => labels[i] === labels[m[0]!]));
  if (pure)
    return { kind: 'groups', members: lists,
      exchangeable: new Set(lists.map((m) => labels[m[0]!])).size > 1 ? labels.length : 0 };
  // within each group: the items of a group with one label cannot move (as swap's conditional null counts them)
  const blocks = lists.filter((m) => m.some((i) => labels[i] !== labels[m[0]!]));
  return { kind: 'within-groups', blocks, exchangeable: exchangeability(labels, groups).items,
    buf: new Int32Array(Math.max(0, ...blocks.map((b) => b.length))) };
}

/** One shuffle of `perm` in place under `design` (items: the plain Fisher–Yates of before, draw for draw). */
export function designShuffle(rng: Rng, perm: Int32Array, design: PermutationDesign): void {
  if (design.kind === 'items') {
    rng.shuffle(perm);
    return;
  }
  if (design.kind === 'groups') {
    const gl = Int32Array.from(design.members, (m) => perm[m[0]!]!);
    rng.shuffle(gl);
    design.members.forEach((m, g) =>
      m.forEach((i) => {
        perm[i] = gl[g]!;
      })
    );
    return;
  }
  for (const b of design.blocks) shuffleWithin(rng, perm, perm, b, design.buf);
}

/** Mean silhouette for labels `labels` from a distance matrix. */
export function meanSilhouette(D: Float64Array, n: number, labels: Int32Array, nClasses: number): number {
  return mean(silhouetteSamples(D, n, labels, nClasses));
}

/**
 * Mean silhouette for each labelling of `perms` (the permutation null): meanSilhouette of each,
 * through the WebAssembly gather kernel when it is available (bit-identical, about twice as fast).
 */
export function silhouetteMeans(D: Float64Array, n: number, perms: Int32Array[], nClasses: number): Float64Array {
  return silhouetteMeansWasm(D, n, perms, nClasses) ??
    Float64Array.from(perms, (p) => meanSilhouette(D, n, p, nClasses));
}

/**
 * The label permutations the probe's p-value uses (the same draws spaceMetrics makes), so they
 * can be evaluated elsewhere (worker threads) with identical results.
 */
export function probePermutationLabels(labels: Int32Array, count: number, seed: number,
  groups?: Int32Array | null): Int32Array[]
{
  const rng = new Rng(seed);
  rng.fork(); // the silhouette/kNN permutations' generator
  const pr = rng.fork();
  const design = permutationDesign(labels, groups);
  const pl = Int32Array.from(labels);
  const out: Int32Array[] = [];
  for (let r = 0; r < count; r++) {
    designShuffle(pr, pl, design);
    out.push(Int32Array.from(pl));
  }
  return out;
}
