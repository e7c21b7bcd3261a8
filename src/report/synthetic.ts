/**
 * Synthetic run directories in the exact on-disk contracts (manifest.json, samples.jsonl,
 * wanda/, cluster/), for tests, benchmarks, notebooks and trying the report without a model.
 * Activations are not written: the report does not read them.
 *
 * Planted structure: each group's pooled scores are log-normal noise plus a bump on its own band
 * of layers, so its region (top fraction per matrix) concentrates there; t-SNE coordinates are
 * one Gaussian blob per group. Region sets, differences, sizes, Jaccard, isolation, density and
 * components are computed from the planted scores; p-values, nulls and cluster metrics are drawn
 * from the seed (they are inputs to the report, not results).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { Rng } from '../util/rng.js';
import type { StWriteTensor } from '../formats/safetensors.js';
import { LOBES_VERSION } from '../version.js';
import type { AnalysisProvenance, RunManifest, SampleRow } from '../store/types.js';
import { runIdentity } from '../store/provenance.js';
import { samplesSha256, writeManifest, writeSamples } from '../store/manifest.js';
import { wandaDir, writeWandaFiles } from '../wanda/store.js';
import { clusterDir, writeClusterFiles } from '../cluster/store.js';
import type { WandaSettings, WandaMatrix, WandaRegions, WandaPairMetrics, BlockSet,
  NullTested } from '../wanda/types.js';
import type { ClusterSettings, ClusterCoords, ClusterMetrics, SpaceMetrics, MetricWithCI,
  ClassifierMetrics } from '../cluster/types.js';

export interface SyntheticRunOptions {
  seed?: number;
  /** Group names (default: the five SocialEval aspects). */
  groups?: string[];
  samplesPerGroup?: number;
  layers?: number;
  /** Pooled grid [rowBlocks, colBlocks] per projection. */
  grid?: Record<string, [number, number]>;
  /** Share of blocks per matrix in a group's region. */
  top?: number;
  permutations?: number;
  /** Text of sample i of group g (default: a plain sentence). */
  text?: (i: number, group: string) => string;
  /** manifest.model.dir (default "synthetic"). */
  modelDir?: string;
  wanda?: boolean;
  cluster?: boolean;
  /** Write wanda/pooled.safetensors (default true). */
  pooled?: boolean;
  /** Add a probe-accuracy sweep to cluster/metrics.json. */
  sweep?: boolean;
}

export const SOCIALEVAL_ASPECTS = ['Self-Management', 'Social Engagement', 'Cooperation', 'Emotional Resilience',
  'Innovation'];

const round = (v: number, d = 6) => Math.round(v * 10 ** d) / 10 ** d;

/** Write a synthetic run to `dir` (created); returns `dir`. */
export function writeSyntheticRun(dir: string, opts: SyntheticRunOptions = {}): string {
  const seed = opts.seed ?? 7;
  const rng = new Rng(seed);
  const groups = opts.groups ?? SOCIALEVAL_ASPECTS;
  const per = opts.samplesPerGroup ?? 20;
  const L = opts.layers ?? 4;
  const grid = opts.grid ?? { gate_proj: [8, 4], up_proj: [8, 4], down_proj: [4, 8] };
  const top = opts.top ?? 0.1;
  const R = opts.permutations ?? 200;
  mkdirSync(dir, { recursive: true });

  const samples: (SampleRow & { text: string })[] = [];
  for (let i = 0; i < per * groups.length; i++) {
    const g = groups[i % groups.length]!;
    samples.push({
      index: i,
      id: `item-${String(i).padStart(5, '0')}`,
      labels: { aspect: g },
      tokens: 20 + (i % 13),
      truncated: false,
      text: opts.text
        ? opts.text(i, g)
        : `Synthetic item ${i} about ${g.toLowerCase()}: what would you say to a colleague who needs help?`,
    });
  }
  const manifest: RunManifest = {
    format: 'lobes-run',
    formatVersion: 1,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    model: {
      dir: opts.modelDir ?? 'synthetic',
      graphSha256: '0'.repeat(64),
      arch: { family: 'llama', layers: L, hidden: 256 * 4, intermediate: 256 * 8, heads: 8, kvHeads: 8, vocab: 32000,
        dtype: 'fp32', quantization: null },
    },
    tokenizer: { source: 'synthetic', chatTemplate: false, addBos: true, maxTokens: null },
    dataset: { spec: 'synthetic', itemsSha256: '0'.repeat(64), count: samples.length, axes: ['aspect'] },
    capture: { points: [{ name: 'final.hidden', dim: 64, dtype: 'F32' }], selection: ['final'] },
    dtype: 'fp32',
    provider: { device: 'cpu', deviceId: 0 },
    shard: null,
    counts: { samples: samples.length, truncated: 0, tokens: samples.reduce((s, r) => s + r.tokens, 0) },
    timings: {},
    complete: true,
  };
  const rows: SampleRow[] = samples.map(({ text: _t, ...row }) => row);
  manifest.samplesSha256 = samplesSha256(rows);
  manifest.identity = runIdentity(manifest);
  writeManifest(dir, manifest);
  writeSamples(dir, rows);
  // What lobes wanda / lobes cluster record about the run they read (no activations here).
  const provenance: AnalysisProvenance = { run: manifest.identity, runDir: path.resolve(dir),
    samplesSha256: manifest.samplesSha256, rows: samples.length, chunks: {} };

  if (opts.wanda !== false)
    writeWanda(dir, rng, { groups, per, L, grid, top, R, seed, pooled: opts.pooled !== false, provenance });
  if (opts.cluster !== false) writeCluster(dir, rng, { groups, samples, seed, R, sweep: !!opts.sweep, L, provenance });
  return dir;
}

function writeWanda(
  dir: string,
  rng: Rng,
  o: { groups: string[]; per: number; L: number; grid: Record<string, [number, number]>; top: number; R: number;
    seed: number; pooled: boolean; provenance: AnalysisProvenance },
): void {
  const wd = wandaDir(dir);
  mkdirSync(wd, { recursive: true });
  const matrices: WandaMatrix[] = [];
  for (let l = 0; l < o.L; l++) {
    for (const [proj, [rb, cb]] of Object.entries(o.grid)) {
      const down = proj === 'down_proj';
      matrices.push({
        name: `layers.${l}.mlp.${proj}`,
        layer: l,
        proj,
        input: down ? `layers.${l}.mlp.down_in` : `layers.${l}.mlp.in`,
        dOut: rb * 256,
        dIn: cb * 256,
        rowBlocks: rb,
        colBlocks: cb,
      });
    }
  }
  const G = o.groups.length;
  const tensors: StWriteTensor[] = [];
  const regions: Record<string, BlockSet> = {};
  const sets = new Map<string, Map<string, Uint8Array>>();
  for (let gi = 0; gi < G; gi++) {
    const g = o.groups[gi]!;
    regions[g] = {};
    sets.set(g, new Map());
    const band0 = Math.floor((gi * o.L) / G);
    const band1 = Math.max(band0 + 1, Math.floor(((gi + 1) * o.L) / G));
    for (const m of matrices) {
      const n = m.rowBlocks * m.colBlocks;
      const s = new Float32Array(n);
      const hot = m.layer >= band0 && m.layer < band1;
      for (let k = 0; k < n; k++) {
        const row = Math.floor(k / m.colBlocks);
        const bump = hot && row % G === gi ? 2 : 0;
        s[k] = Math.exp(0.5 * rng.normal()) + bump;
      }
      if (o.pooled) tensors.push({ name: `${g}|${m.name}`, dtype: 'F32', shape: [m.rowBlocks, m.colBlocks], data: s });
      const k = Math.max(1, Math.round(o.top * n));
      const order = Array.from(s.keys()).sort((i, j) => s[j]! - s[i]! || i - j).slice(0, k).sort((i, j) => i - j);
      regions[g]![m.name] = order;
      const mask = new Uint8Array(n);
      for (const i of order) mask[i] = 1;
      sets.get(g)!.set(m.name, mask);
    }
  }
  const differences: WandaRegions['differences'] = [];
  const pairs: WandaPairMetrics[] = [];
  const nt = (value: number): NullTested => {
    if (o.R === 0) return { value, p: null, percentile: null, nullMean: null };
    const p = (1 + Math.floor(rng.next() * o.R)) / (o.R + 1);
    return { value: round(value), p: round(p), percentile: round(100 * (1 - p), 3),
      nullMean: round(value * (0.5 + rng.next() * 0.5)) };
  };
  const gstats = o.groups.map((g) => ({ group: g, n: o.per, regionSize: 0, density: 0, components: 0 }));
  for (let gi = 0; gi < G; gi++) {
    const st = shapeStats(matrices, sets.get(o.groups[gi]!)!);
    Object.assign(gstats[gi]!, { regionSize: st.size, density: round(st.density), components: st.components });
  }
  for (let i = 0; i < G; i++) {
    for (let j = i + 1; j < G; j++) {
      const a = o.groups[i]!;
      const b = o.groups[j]!;
      const ab: BlockSet = {};
      const ba: BlockSet = {};
      const mab = new Map<string, Uint8Array>();
      const mba = new Map<string, Uint8Array>();
      let inter = 0;
      let uni = 0;
      let sa = 0;
      let sb = 0;
      const byLayerAB = new Array(o.L).fill(0);
      const byLayerBA = new Array(o.L).fill(0);
      const byProjAB: Record<string, number> = {};
      const byProjBA: Record<string, number> = {};
      for (const m of matrices) {
        const A = sets.get(a)!.get(m.name)!;
        const B = sets.get(b)!.get(m.name)!;
        const x = new Uint8Array(A.length);
        const y = new Uint8Array(A.length);
        const lx: number[] = [];
        const ly: number[] = [];
        for (let k = 0; k < A.length; k++) {
          sa += A[k]!;
          sb += B[k]!;
          if (A[k] && B[k]) inter++;
          if (A[k] || B[k]) uni++;
          if (A[k] && !B[k]) {
            x[k] = 1;
            lx.push(k);
          }
          if (B[k] && !A[k]) {
            y[k] = 1;
            ly.push(k);
          }
        }
        ab[m.name] = lx;
        ba[m.name] = ly;
        mab.set(m.name, x);
        mba.set(m.name, y);
        byLayerAB[m.layer] += lx.length;
        byLayerBA[m.layer] += ly.length;
        byProjAB[m.proj] = (byProjAB[m.proj] ?? 0) + lx.length;
        byProjBA[m.proj] = (byProjBA[m.proj] ?? 0) + ly.length;
      }
      differences.push({ a, b, aMinusB: ab, bMinusA: ba });
      const sAB = shapeStats(matrices, mab);
      const sBA = shapeStats(matrices, mba);
      pairs.push({
        a,
        b,
        jaccard: nt(uni ? inter / uni : 0),
        isolationAB: nt(sa ? sAB.size / sa : 0),
        isolationBA: nt(sb ? sBA.size / sb : 0),
        sizeAminusB: sAB.size,
        sizeBminusA: sBA.size,
        densityAminusB: nt(sAB.density),
        densityBminusA: nt(sBA.density),
        componentsAminusB: sAB.components,
        componentsBminusA: sBA.components,
        byLayerAminusB: byLayerAB,
        byLayerBminusA: byLayerBA,
        byProjAminusB: byProjAB,
        byProjBminusA: byProjBA,
      });
    }
  }
  const settings: WandaSettings = {
    by: 'aspect',
    groups: o.groups,
    block: [256, 256],
    top: { kind: 'fraction', value: o.top, scope: 'matrix' },
    statistic: 'rms',
    permutations: o.R,
    seed: o.seed,
    weights: { source: 'onnx', path: 'synthetic' },
    resolution: 'block',
    provenance: o.provenance,
  };
  writeWandaFiles(wd, {
    settings,
    regions: { matrices, regions, differences },
    metrics: { groups: gstats, pairs },
    ...(o.pooled ? { pooled: { tensors, meta: { format: 'lobes-wanda-pooled', seed: String(o.seed) } } } : {}),
  });
}

/** Size, share of blocks with a 4-neighbour in the set, and 4-connected components, over all matrices. */
function shapeStats(matrices: WandaMatrix[],
  masks: Map<string, Uint8Array>): { size: number; density: number; components: number }
{
  let size = 0;
  let withNb = 0;
  let comps = 0;
  for (const m of matrices) {
    const x = masks.get(m.name)!;
    const R = m.rowBlocks;
    const C = m.colBlocks;
    const seen = new Uint8Array(x.length);
    for (let k = 0; k < x.length; k++) {
      if (!x[k]) continue;
      size++;
      const r = Math.floor(k / C);
      const c = k % C;
      if ((r > 0 && x[k - C]) || (r < R - 1 && x[k + C]) || (c > 0 && x[k - 1]) || (c < C - 1 && x[k + 1])) withNb++;
      if (seen[k]) continue;
      comps++;
      const stack = [k];
      seen[k] = 1;
      while (stack.length) {
        const q = stack.pop()!;
        const qr = Math.floor(q / C);
        const qc = q % C;
        const nb = [qr > 0 ? q - C : -1, qr < R - 1 ? q + C : -1, qc > 0 ? q - 1 : -1, qc < C - 1 ? q + 1 : -1];
        for (const t of nb)
          if (t >= 0 && x[t] && !seen[t]) {
            seen[t] = 1;
            stack.push(t);
          }
      }
    }
  }
  return { size, density: size ? withNb / size : 0, components: comps };
}

function writeCluster(
  dir: string,
  rng: Rng,
  o: { groups: string[]; samples: (SampleRow & { text: string })[]; seed: number; R: number; sweep: boolean; L: number;
    provenance: AnalysisProvenance },
): void {
  const cd = clusterDir(dir);
  mkdirSync(cd, { recursive: true });
  const G = o.groups.length;
  const xy: number[] = [];
  for (const s of o.samples) {
    const gi = o.groups.indexOf(s.labels.aspect!);
    const ang = (2 * Math.PI * gi) / G;
    xy.push(round(20 * Math.cos(ang) + 6 * rng.normal(), 4), round(20 * Math.sin(ang) + 6 * rng.normal(), 4));
  }
  const coords: ClusterCoords = { ids: o.samples.map((s) => s.id), labels: o.samples.map((s) => s.labels.aspect!), xy,
    text: o.samples.map((s) => s.text) };
  const m = (lo: number, hi: number, chance?: number): MetricWithCI => {
    const v = lo + (hi - lo) * rng.next();
    const w = 0.02 + 0.05 * rng.next();
    const nm = chance ?? lo * 0.5;
    return { value: round(v), ci95: [round(v - w), round(v + w)], p: round(1 / (o.R + 1)), nullMean: round(nm),
      nullBand: [round(nm - 0.03), round(nm + 0.03)] };
  };
  const counts = o.groups.map((g) => o.samples.filter((s) => s.labels.aspect === g).length);
  const classifier = (lo: number, hi: number): ClassifierMetrics => ({
    accuracy: m(lo, hi, Math.max(...counts) / o.samples.length),
    balancedAccuracy: m(lo, hi, 1 / G),
    macroF1: m(lo * 0.9, hi * 0.9, 1 / G),
    recall: o.groups.map(() => round(0.3 + 0.7 * rng.next())),
    confusion: o.groups.map((_, i) => o.groups.map((__, j) => (i === j ? 10 + rng.int(10) : rng.int(4)))),
  });
  const space = (name: string): SpaceMetrics => {
    const knn = classifier(0.4, 0.9);
    const probe = name === 'original-cosine' ? null : classifier(0.5, 0.95);
    return {
      space: name,
      silhouette: m(0.05, 0.4),
      knnAccuracy: knn.accuracy,
      probeAccuracy: probe ? probe.accuracy : null,
      knn,
      probe,
      ...(probe ? { probeDims: name === 'embedding' ? 2 : 50 } : {}),
      daviesBouldin: { ...m(0.8, 3), p: null, nullMean: null, nullBand: null, ci95: null },
      perClass: o.groups.map((g, c) => ({ label: g, n: counts[c], silhouette: round(rng.next() * 0.5),
        knnRecall: knn.recall[c]!, ...(probe ? { probeRecall: probe.recall[c] } : {}) })
      ),
      confusion: knn.confusion,
    };
  };
  const maj = counts.indexOf(Math.max(...counts));
  const metrics: ClusterMetrics = {
    classes: o.groups,
    n: o.samples.length,
    dim: 64,
    pcaExplainedVariance: round(0.6 + 0.3 * rng.next()),
    klDivergence: round(0.5 + rng.next()),
    spaces: [space('original-cosine'), space('original-euclidean'), space('embedding')],
    chance: { balancedAccuracy: round(1 / G), majorityRate: round(counts[maj] / o.samples.length),
      majorityClass: o.groups[maj], counts },
    baselines: [{ name: 'token-counts', description: 'counts of each token id in the item (synthetic)', dim: 300,
      probeDims: 50, probe: classifier(0.3, 0.6) }],
    ...(o.sweep ?
      {
        sweep: Array.from({ length: o.L }, (_, l) => {
          const v = round(0.3 + (0.6 * l) / Math.max(1, o.L - 1));
          const ci: [number, number] = [round(v - 0.05), round(v + 0.05)];
          const b = round(v * 0.9);
          const band: [number, number] = [round(1 / G - 0.04), round(1 / G + 0.04)];
          return {
            point: `layers.${l}.resid_out`,
            probeAccuracy: v,
            ci95: ci,
            accuracy: { value: v, ci95: ci, p: round(1 / 21), nullMean: round(counts[maj] / o.samples.length),
              nullBand: band },
            balancedAccuracy: { value: b, ci95: [round(b - 0.05), round(b + 0.05)] as [number, number],
              p: round(1 / 21), nullMean: round(1 / G), nullBand: band },
            macroF1: { value: round(b * 0.95),
              ci95: [round(b * 0.95 - 0.05), round(b * 0.95 + 0.05)] as [number, number], p: round(1 / 21),
              nullMean: round(0.8 / G), nullBand: band },
          };
        }),
      } :
      {}),
  };
  const settings: ClusterSettings = {
    point: 'final.hidden',
    by: 'aspect',
    seed: o.seed,
    perplexity: 30,
    pcaDims: 50,
    theta: 0.5,
    iterations: 1000,
    earlyExaggeration: 12,
    bootstrap: 200,
    permutations: o.R,
    source: dir,
    provenance: o.provenance,
  };
  writeClusterFiles(cd, { settings, coords, metrics });
}
