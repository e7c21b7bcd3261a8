/**
 * An ablation's results on the report page: the `summary.json` that `lobes ablate --out DIR`
 * writes (kind "ablate", version 1), read and checked here, and turned into the page's payload.
 *
 * The file (docs/report.md#ablation):
 *   { kind: "ablate", version: 1, by: <label axis>, labels: [...], random: K, unit: "nats",
 *     regions: [{ name, minus: null | B, blocks }],
 *     cells: [{ region, minus, label, n, before, delta, ci: [lo, hi], nullDelta: [K], p, z, pT, pTHolm }],
 *     specificity: [{ region, minus, target, contrast, ci: [lo, hi], nullContrast: [K], p, pHolm, pT, pTHolm,
 *                     ratio, nullRatio: [K], ratioP, ratioPHolm }] }
 * (pT … ratioPHolm came later within version 1: for summaries without them they are derived from
 * the cells and nulls, as lobes ablate derives them: src/ablate/stats.ts predictionTests.)
 * `delta` is a label's mean change of the items' continuation log-likelihood (after − before,
 * nats) when the region's blocks are zeroed; `nullDelta` the same change for each of K random
 * regions of the same size. The page shows, per region and label, the effect beyond the null:
 * delta − mean(nullDelta), with the null's 2.5–97.5% band and p. A permutation p cannot be
 * smaller than 1/(K+1); at that floor the page says so.
 *
 * With `lobes ablate --task iae` the unit is "accuracy" (delta: the change of the share of the
 * label's items answered right) and the summary has an `iae` section (version 1: scoring, metric,
 * the test against chance before ablating, and per cell the accuracy before and after, the items
 * lost and gained with the exact McNemar p, and Holm over regions), shown as its own table.
 *
 * The check of the summary's fields (parseAblateSummary) is in src/report/ablate-summary.ts.
 */
import { existsSync } from 'node:fs';
import { ablateJobFile, ablateSummaryFile, isAblateJobDir, readAblateJob, readAblateSummary,
  type AblateSummary } from '../ablate/store.js';
import { ProvenanceError, runIdentity } from '../store/provenance.js';
import { staleInput } from '../store/lineage.js';
import type { RunManifest } from '../store/types.js';
import { LobesError, opt } from '../util/errors.js';
import type { AblateCellPayload, AblateIaePayload, AblatePayload, AblateSpecificityPayload } from './types.js';
import type { AblateCell, AblateSpecificity } from '../ablate/stats.js';
import { geometricMean, parseAblateSummary, regionName, type CheckedAblateSummary } from './ablate-summary.js';

export type { AblatePayload, AblateSummary };
export type { AblateRegion, CheckedAblateSummary } from './ablate-summary.js';
export { parseAblateSummary, regionName };

/** One region × label cell and one specificity contrast, as lobes ablate writes them (src/ablate/stats.ts). */
export type { AblateCell, AblateSpecificity };

export interface AblateData {
  /** The folder given (as given, for the page). */
  dir: string;
  summary: CheckedAblateSummary;
}

/**
 * Read DIR/summary.json of `lobes ablate --out DIR`, verified against the job.json beside it (the
 * summary's sha256 recorded when the job finished). A summary without its job.json, edited after
 * the job, or of an unfinished job is refused: the report shows only ablations it can trace.
 */
export function loadAblate(dir: string): AblateData {
  const file = ablateSummaryFile(dir);
  if (!existsSync(file))
    throw new LobesError('no ablation summary here', { file, hint: `pass the ${opt('out')} folder of lobes ablate` });
  if (!isAblateJobDir(dir))
    throw new LobesError('no job.json beside the summary, so it cannot be verified as the output of lobes ablate', {
      file,
      hint: `pass the ${opt('out')} folder of lobes ablate as it wrote it`,
    });
  return { dir, summary: parseAblateSummary(readAblateSummary(dir), file) };
}

/**
 * Check that an ablation belongs to a run as it is now (lineage, src/store/lineage.ts): made from
 * this run, and from the wanda files the run holds now (a wanda rerun since, or an edited
 * regions.json, makes it stale). Ablations of an older lobes, which recorded no inputs, are
 * checked by their run identity alone. Throws a ProvenanceError naming job.json and the first
 * input that differs.
 */
export function checkAblateOfRun(dir: string, runDir: string, manifest: RunManifest): void {
  const job = readAblateJob(dir);
  const file = ablateJobFile(dir);
  const hint = `run lobes ablate on ${runDir} again (a new --out, or --force)`;
  if (!job.inputs) {
    const id = manifest.identity ?? runIdentity(manifest);
    if (job.run?.identity !== id)
      throw new ProvenanceError(
        `the ablation belongs to another run (run identity ${
          String(job.run?.identity).slice(0, 12)
        }… of ${job.run?.dir}, this run is ${id.slice(0, 12)}…)`,
        { file, hint },
      );
    return;
  }
  const stale = staleInput(job.inputs, { runDir, manifest });
  if (stale) throw new ProvenanceError(`the ablation is not current: ${stale}`, { file, hint });
}

const mean = (a: readonly number[]) => a.reduce((s, x) => s + x, 0) / a.length;

/** The q-quantile of sorted values (linear between order statistics). */
function quantile(sorted: readonly number[], q: number): number {
  const h = (sorted.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/** The null's summary: mean and the 2.5–97.5% band of K values. */
export function nullSummary(values: readonly number[]): { mean: number; band: [number, number] } {
  const s = [...values].sort((a, b) => a - b);
  return { mean: mean(s), band: [quantile(s, 0.025), quantile(s, 0.975)] };
}

/** The page's view of an ablation: the effect beyond the null per region and label, and the specificity rows. */
export function ablatePayload(data: AblateData): AblatePayload {
  const s = data.summary;
  const floor = 1 / (s.random + 1);
  const regions = s.regions.map((r) => regionName(r.name, r.minus));
  const cells: AblateCellPayload[] = s.cells.map((c) => {
    const nul = nullSummary(c.nullDelta);
    return {
      region: regionName(c.region, c.minus),
      label: c.label,
      n: c.n,
      before: c.before,
      delta: c.delta,
      ci: c.ci,
      nullMean: nul.mean,
      nullBand: nul.band,
      excess: c.delta - nul.mean,
      p: c.p,
      atFloor: c.p <= floor * (1 + 1e-9),
      pT: c.pT,
      pTHolm: c.pTHolm,
    };
  });
  const specificity: AblateSpecificityPayload[] = s.specificity.map((x) => {
    const nul = nullSummary(x.nullContrast);
    return {
      region: regionName(x.region, x.minus),
      target: x.target,
      contrast: x.contrast,
      ci: x.ci,
      nullMean: nul.mean,
      nullBand: nul.band,
      p: x.p,
      pHolm: x.pHolm,
      atFloor: x.p <= floor * (1 + 1e-9),
      pT: x.pT,
      pTHolm: x.pTHolm,
      ratio: x.ratio,
      nullRatio: geometricMean(x.nullRatio),
      ratioP: x.ratioP,
      ratioPHolm: x.ratioPHolm,
    };
  });
  const iae: AblateIaePayload | null = s.iae
    ? {
      scoring: s.iae.scoring,
      metric: s.iae.metric,
      chance: s.iae.chance,
      skipped: s.iae.skipped.length,
      rows: s.iae.cells.map((c) => ({
        region: regionName(c.region, c.minus),
        label: c.label,
        n: c.n,
        before: c.accuracyBefore,
        after: c.accuracyAfter,
        change: c.change,
        ci: c.ci,
        lost: c.lost,
        gained: c.gained,
        pMcNemar: c.pMcNemar,
        nullMean: nullSummary(c.nullChange).mean,
        p: c.p,
        pHolm: c.pHolm,
        atFloor: c.p <= floor * (1 + 1e-9),
      })),
    }
    : null;
  return {
    dir: data.dir,
    by: s.by,
    labels: s.labels,
    random: s.random,
    unit: s.unit,
    floor,
    regions,
    blocks: s.regions.map((r) => r.blocks),
    cells,
    specificity,
    iae,
    baselines: s.baselines ?? null,
  };
}
