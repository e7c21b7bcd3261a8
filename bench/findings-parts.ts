/**
 * The detailed sections of bench/findings-summary.ts: every classifier with its family's Holm p
 * and z, the paired model − words and incremental probes, the layer sweep after Holm with the
 * layer steps, the neuron regions pair by pair (Jaccard with Holm and BH, the share in common,
 * density against random placements and against the label null, the channel test), and the
 * statistics derived from figures recorded from earlier runs (bench/findings-recorded.json).
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { ClusterMetrics, ClusterSettings, MetricWithCI } from '../src/cluster/types.js';
import { adjustFamilies, verdictClassifiers } from '../src/cluster/multiplicity.js';
import type { WandaMetrics, WandaSettings } from '../src/wanda/types.js';
import { benjaminiHochberg, binomialUpper, clopperPearson, holm, wilson } from '../src/util/stats.js';

export const f3 = (
  v: number | null | undefined,
) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(3));
const f2 = (
  v: number | null | undefined,
) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(2));
const fp = (
  p: number | null | undefined,
) => (p === null || p === undefined ? '—' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));
const ci = (c: [number, number] | null | undefined) => (c ? `[${f3(c[0])}, ${f3(c[1])}]` : '');
const sd = (
  c: [number, number] | null | undefined,
) => (c ? `[${c[0] >= 0 ? '+' : ''}${f3(c[0])}, ${c[1] >= 0 ? '+' : ''}${f3(c[1])}]` : '');
const sg = (v: number) => `${v >= 0 ? '+' : ''}${f3(v)}`;
const range = (v: number[], f: (x: number) => string = f3) => {
  const w = v.filter(Number.isFinite);
  return w.length ? `${f(Math.min(...w))}–${f(Math.max(...w))}` : '—';
};
const int = (x: number) => String(Math.round(x));
const median = (v: number[]) => {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};

/** The metrics with pHolm and pBH: as written, or adjusted here for a file written before lobes adjusted them. */
export function adjusted(m: ClusterMetrics): ClusterMetrics {
  return m.families ? m : adjustFamilies(structuredClone(m));
}

const NAMES: Record<string, string> = {
  'original-euclidean:probe': 'linear probe on the state',
  'original-cosine:knn': 'kNN (cosine) on the state',
  'embedding:knn': 'kNN in the t-SNE map',
  'baseline:token-counts': 'tokens alone: token-id counts, probe',
  'baseline:token-embedding-mean': 'tokens alone: mean input embedding, probe',
};

/** The verdict's classifiers with their nulls, p, Holm p (over the classifiers) and z; the probe's repeats and C. */
export function classifierTable(label: string, metrics: ClusterMetrics): string[] {
  const m = adjusted(metrics);
  const out = [
    `#### ${label}: every classifier of the verdict (Holm over the ${verdictClassifiers(m).length} classifiers)`,
    '',
    '| classifier | dims | balanced accuracy [95% CI] | null mean [95% band] | p | Holm p | z | accuracy | macro-F1 (null mean) | CV |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  const dims = (
    key: string,
  ) => (key.startsWith('baseline:')
    ? m.baselines?.find((b) => `baseline:${b.name}` === key)?.dim
    : key === 'original-euclidean:probe'
    ? m.spaces.find((s) => s.space === 'original-euclidean')?.probeDims
    : key === 'embedding:knn'
    ? 2
    : m.dim);
  for (const [key, c] of verdictClassifiers(m)) {
    const b = c.balancedAccuracy;
    const d = c.cv && c.cv.pca > 0 ? `${c.cv.pca} (in-fold PCA of ${dims(key) ?? '—'})` : dims(key);
    const cv = c.cv
      ? `${c.cv.repeats}×${c.cv.folds}-fold, C ${
        c.cv.cMethod === 'nested' ? `nested (most often ${c.cv.nullC})` : c.cv.nullC
      }`
      : 'leave-one-out';
    out.push(
      `| ${NAMES[key] ?? key} | ${d ?? '—'} | ${f3(b.value)} ${ci(b.ci95)} | ${f3(b.nullMean)} ${ci(b.nullBand)} | ${
        fp(b.p)
      } | ${fp(b.pHolm)} | ${f2(b.z)} | ${f3(c.accuracy.value)} | ${f3(c.macroF1.value)} (${
        f3(c.macroF1.nullMean)
      }) | ${cv} |`,
    );
  }
  const sil = m.spaces.map((s) =>
    `${s.space} ${f3(s.silhouette.value)} ${ci(s.silhouette.ci95)} (null ${f3(s.silhouette.nullMean)}, p ${
      fp(s.silhouette.p)
    })`
  );
  const eu = m.spaces.find((s) => s.space === 'original-euclidean')?.probe;
  const rec = eu ? m.classes.map((k, i) => `${k} ${f2(eu.recall[i])}`).join(', ') : '';
  out.push('',
    `Silhouette: ${sil.join('; ')}. KL of the t-SNE map ${f2(m.klDivergence)}.${
      rec ? ` Per-class recall of the probe: ${rec}.` : ''
    }`, '');
  return out;
}

/** Paired model − words and incremental (words + state) − words, with CI, bootstrap p and Holm within each kind. */
export function comparisonTable(label: string, metrics: ClusterMetrics): string[] {
  const m = adjusted(metrics);
  const comps = (m.comparisons ?? []).filter((c) => c.kind !== 'layers');
  if (!comps.length) return [];
  const out = [
    `#### ${label}: paired comparisons of probes (same items, same folds; bootstrap over items and fold repeats)`,
    '',
    '| kind | A − B | balanced accuracy difference [95% CI] | p | Holm p (within the kind) | accuracy difference [95% CI] |',
    '|---|---|---|---|---|---|',
  ];
  for (const c of comps)
    out.push(
      `| ${c.kind} | ${c.a} − ${c.b} | ${sg(c.balancedAccuracy.value)} ${sd(c.balancedAccuracy.ci95)} | ${
        fp(c.balancedAccuracy.p)
      } | ${fp(c.balancedAccuracy.pHolm)} | ${sg(c.accuracy.value)} ${sd(c.accuracy.ci95)} |`,
    );
  for (const inc of m.incremental ?? [])
    out.push('',
      `Incremental probe, ${inc.words} + state (${inc.probeDims} dims): balanced accuracy ${
        f3(inc.probe.balancedAccuracy.value)
      } ${ci(inc.probe.balancedAccuracy.ci95)}.`);
  return [...out, ''];
}

/** The sweep after Holm across the layers, with z, and the layer steps whose paired CI excludes 0. */
export function sweepDetail(label: string, metrics: ClusterMetrics, settings: ClusterSettings | null,
  steps: [number, number][] = []): string[]
{
  const m = adjusted(metrics);
  const sw = m.sweep ?? [];
  if (!sw.length) return [];
  const b = sw.map((w) => w.balancedAccuracy).filter((x): x is MetricWithCI => !!x);
  const raw = b.filter((x) => (x.p ?? 1) <= 0.05).length;
  const h = b.filter((x) => (x.pHolm ?? 1) <= 0.05).length;
  const bh = b.filter((x) => (x.pBH ?? 1) <= 0.05).length;
  const R = settings?.sweepPermutations;
  const floor = Math.min(...b.map((x) => x.p ?? 1));
  const out = [`#### ${label}: probe per layer (balanced accuracy; Holm and BH across the ${sw.length} layers)`, '',
    `Layers with p ≤ 0.05: ${raw} of ${sw.length} raw, ${h} after Holm, ${bh} after BH (smallest p ${fp(floor)}${
      R ? `, ${R} permutations` : ''
    }; ${f2(0.05 * sw.length)} layers at p ≤ 0.05 expected by chance alone). z (value − null mean, in null sds): ${
      range(b.map((x) => x.z ?? NaN), f2)
    }.`, '', '| layer | balanced accuracy [95% CI] | null mean | p | Holm p | z | accuracy |',
    '|---|---|---|---|---|---|---|'];
  sw.forEach((w, i) => {
    const x = w.balancedAccuracy;
    out.push(
      `| ${i} | ${f3(x?.value)} ${ci(x?.ci95)} | ${f3(x?.nullMean)} | ${fp(x?.p)} | ${fp(x?.pHolm)} | ${f2(x?.z)} | ${
        f3(w.accuracy?.value ?? w.probeAccuracy)
      } |`,
    );
  });
  const ls = (m.comparisons ?? []).filter((c) => c.kind === 'layers');
  if (ls.length) {
    const sig = ls.filter((c) =>
      c.balancedAccuracy.ci95 && (c.balancedAccuracy.ci95[0] > 0 || c.balancedAccuracy.ci95[1] < 0)
    );
    const sigH = ls.filter((c) => (c.balancedAccuracy.pHolm ?? 1) <= 0.05);
    const name = (p: string) => p.replace('layers.', '').replace('.resid_out', '');
    out.push('',
      `Layer steps (layer i − layer i−1, paired): ${sig.length} of ${ls.length} CIs exclude 0 (${
        sig.map((c) => `${name(c.b)}→${name(c.a)} ${sg(c.balancedAccuracy.value)} ${sd(c.balancedAccuracy.ci95)}`).join(
          '; ',
        ) || 'none'
      }); ${sigH.length} pass Holm across the ${ls.length} steps.`);
    for (const [a, bb] of steps) {
      const c = ls.find((x) => x.b === `layers.${a}.resid_out` && x.a === `layers.${bb}.resid_out`);
      if (c)
        out.push(
          `- step ${a} → ${bb}: ${sg(c.balancedAccuracy.value)} ${sd(c.balancedAccuracy.ci95)}, p ${
            fp(c.balancedAccuracy.p)
          }, Holm ${fp(c.balancedAccuracy.pHolm)}`,
        );
    }
  }
  return [...out, ''];
}

/** One wanda folder pair by pair, the densities against both nulls, and the channel test. */
export function wandaDetail(label: string, dir: string): string[] {
  if (!existsSync(path.join(dir, 'metrics.json'))) return [];
  const s = JSON.parse(readFileSync(path.join(dir, 'settings.json'), 'utf8')) as WandaSettings;
  const m = JSON.parse(readFileSync(path.join(dir, 'metrics.json'), 'utf8')) as WandaMetrics;
  const R = m.permutations ?? s.permutations;
  const out = [
    `#### ${label}, ${s.block.join('×')} blocks, top ${s.top.value} per ${s.top.scope}, ${R} permutations (floor p ${
      fp(m.pFloor ?? 1 / (R + 1))
    })`,
    '',
  ];
  const jp = m.pairs.map((q) => q.jaccard.pLower ?? null);
  const jh = m.pairs.map((q) => q.jaccard.pLowerHolm ?? holm(jp)[m.pairs.indexOf(q)]);
  const jb = m.pairs.map((q) => q.jaccard.pLowerBH ?? benjaminiHochberg(jp)[m.pairs.indexOf(q)]);
  out.push(
    '| pair | Jaccard (null mean) | share of A in B, 1 − isolation (null) | p (Jaccard as low) | Holm | BH | z | A∖B density ratio to random | A∖B denser than random, Holm p | A∖B denser than label null, Holm p |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  m.pairs.forEach((q, i) => {
    const pl = q.placementAminusB;
    out.push(
      `| ${q.a} – ${q.b} | ${f3(q.jaccard.value)} (${f3(q.jaccard.nullMean)}) | ${f3(1 - q.isolationAB.value)} (${
        f3(q.isolationAB.nullMean === null ? null : 1 - q.isolationAB.nullMean)
      }) | ${fp(jp[i])} | ${fp(jh[i])} | ${fp(jb[i])} | ${f2(q.jaccard.z)} | ${f2(pl?.densityRatio)} | ${
        fp(pl?.density.pHolm)
      } | ${fp(q.densityAminusB.pHolm)} |`,
    );
  });
  const pass = (v: (number | null | undefined)[]) => v.filter((x) => x !== null && x !== undefined && x <= 0.05).length;
  const diffs = m.pairs.flatMap((q) => [q.placementAminusB, q.placementBminusA]).filter((x) => !!x);
  const dl = m.pairs.flatMap((q) => [q.densityAminusB, q.densityBminusA]);
  const ratioLabel = m.pairs.flatMap((q) =>
    [[q.densityAminusB, q.placementAminusB], [q.densityBminusA, q.placementBminusA]] as const
  ).map(([d, pl]) => (pl && d.nullMean !== null && pl.randomDensity > 0 ? d.nullMean / pl.randomDensity : NaN));
  out.push(
    '',
    `- Jaccard below the label null: ${pass(jp)} of ${m.pairs.length} pairs raw, ${pass(jh)} after Holm, ${
      pass(jb)
    } after BH; Jaccard ${range(m.pairs.map((q) => q.jaccard.value))} (nulls ${
      range(m.pairs.map((q) => q.jaccard.nullMean ?? NaN))
    }); share of one region in the other ${range(m.pairs.map((q) => 1 - q.isolationAB.value))}.`,
    `- The ${dl.length} set differences (A∖B and B∖A): denser than the label null ${pass(dl.map((d) => d.p))} raw, ${
      pass(dl.map((d) => d.pHolm))
    } after Holm; denser than random placements of their size ${pass(diffs.map((x) => x!.density.p))} raw, ${
      pass(diffs.map((x) => x!.density.pHolm))
    } after Holm (z ${range(diffs.map((x) => x!.density.z ?? NaN), f2)}); density ratio to a random set ${
      range(diffs.map((x) => x!.densityRatio ?? NaN))
    } (median ${f2(median(diffs.map((x) => x!.densityRatio ?? NaN)))}); the label null's own mean density is ${
      range(ratioLabel.filter(Number.isFinite))
    } times a random set's (median ${f2(median(ratioLabel))}).`,
  );
  const g = m.groups.filter((x) => x.placement);
  if (g.length)
    out.push(
      `- The ${g.length} regions: density ${range(g.map((x) => x.density))}, ${
        range(g.map((x) => x.placement!.densityRatio ?? NaN))
      } times a random set's; denser than random placements after Holm: ${
        pass(g.map((x) => x.placement!.density.pHolm))
      } of ${g.length}; denser than the label null after Holm: ${
        pass(g.map((x) => x.densityNull?.pHolm))
      } of ${g.length}.`,
    );
  const ch = m.channels ?? [];
  if (ch.length) {
    const top = ch.slice().sort((a, b) => (b.z ?? -Infinity) - (a.z ?? -Infinity)).slice(0, 3);
    out.push(
      `- Channel test (activation RMS s_g by group, ${ch.length} capture points): beyond the label null ${
        pass(ch.map((c) => c.p))
      } raw, ${pass(ch.map((c) => c.pHolm))} after Holm; channels with BH q ≤ 0.05 per point ${
        range(ch.map((c) => c.channelsBH05 ?? NaN), int)
      } (of ${[...new Set(ch.map((c) => c.channels))].join(' or ')}); points with z > 3: ${
        ch.filter((c) => (c.z ?? 0) > 3).length
      }; z ${range(ch.map((c) => c.z ?? NaN), f2)}; smallest z at ${
        ch.slice().sort((a, b) => (a.z ?? Infinity) - (b.z ?? Infinity))[0]!.hook
      }. Largest z: ${
        top.map((c) =>
          `${c.hook} (z ${f2(c.z)}; top channel ${
            c.top[0] ? `${c.top[0].channel}: ${c.top[0].high} ${f2(c.top[0].ratio)}× ${c.top[0].low}` : '—'
          })`
        ).join('; ')
      }.`,
    );
  }
  if (m.sensitivity?.length) {
    out.push('',
      '| block | top | selected | mean Jaccard | Jaccard below null (raw / Holm) | median density ratio | denser than random (Holm) | denser than label null (Holm) |',
      '|---|---|---|---|---|---|---|---|');
    for (const r of m.sensitivity)
      out.push(
        `| ${r.block} | ${r.top} | ${r.selected}${r.coarse ? ' (coarse)' : ''} | ${
          f3(r.meanJaccard)
        } | ${r.jaccardBelowNull} / ${r.jaccardBelowNullHolm} of ${r.pairs} | ${
          f2(r.medianDensityRatio)
        } | ${r.denserThanRandomHolm} of ${r.differences} | ${r.denserThanLabelNullHolm} of ${r.differences} |`,
      );
  }
  return [...out, ''];
}

interface Recorded {
  eval: { run: string; k: number; n: number; chance: number; unit: string }[];
  slotA: { prompts: number; pickedA: number; note: string };
  zhRegions32: { permutations: number; pairs: [string, string, number][] };
  paper?: { note: string; iaeEn: number; iaeZh: number; gaeEn: number; gaeZh: number };
}

/** Exact intervals and tests from bench/findings-recorded.json, and Holm/BH of the earlier Chinese region p-values. */
export function recordedLines(file: string): string[] {
  if (!existsSync(file)) return [];
  const r = JSON.parse(readFileSync(file, 'utf8')) as Recorded;
  const out = ['### Recorded from earlier runs (bench/findings-recorded.json), with exact statistics', '',
    '| run | correct / n | % | Clopper–Pearson 95% | Wilson 95% | chance % | P(X ≥ k) at chance |',
    '|---|---|---|---|---|---|---|'];
  for (const e of r.eval) {
    const cp = clopperPearson(e.k, e.n)!;
    const pct = (v: number) => (100 * v).toFixed(1);
    // for k − 1 ≥ n·p̄ the binomial tail at the mean chance bounds the exact (Poisson-binomial) tail from above (Hoeffding 1956)
    const bound = e.unit.startsWith('trees') ? (e.k - 1 >= e.n * e.chance ? ' (upper bound)' : ' (not a bound)') : '';
    out.push(
      `| ${e.run} | ${e.k} / ${e.n} ${e.unit} | ${pct(e.k / e.n)} | [${pct(cp[0])}, ${pct(cp[1])}] | [${
        pct(wilson(e.k, e.n)![0])
      }, ${pct(wilson(e.k, e.n)![1])}] | ${pct(e.chance)} | ${fp(binomialUpper(e.k, e.n, e.chance))}${bound} |`,
    );
  }
  if (r.paper)
    out.push('',
      `Reference (${r.paper.note}): IAE ${r.paper.iaeEn} English, ${r.paper.iaeZh} Chinese; GAE ${r.paper.gaeEn} English, ${r.paper.gaeZh} Chinese.`);
  out.push('', `Slot A: ${r.slotA.pickedA} of ${r.slotA.prompts} prompts answered A (${r.slotA.note}).`, '');
  const R = r.zhRegions32.permutations;
  const p = r.zhRegions32.pairs.map(([, , k]) => k / (R + 1));
  const h = holm(p);
  const q = benjaminiHochberg(p);
  const n = (v: (number | null)[]) => v.filter((x) => x !== null && x <= 0.05).length;
  out.push(
    `Chinese regions at 32×32 (earlier runs, ${R} permutations): Jaccard below the label null in ${
      n(p)
    } of ${p.length} pairs raw, ${n(h)} after Holm, ${n(q)} after BH.`,
    '',
  );
  out.push('| pair | p | Holm | BH |', '|---|---|---|---|');
  r.zhRegions32.pairs.forEach(([a, b], i) => out.push(`| ${a} – ${b} | ${fp(p[i])} | ${fp(h[i])} | ${fp(q[i])} |`));
  return [...out, ''];
}
