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
 */
import { existsSync } from 'node:fs';
import { ablateJobFile, ablateSummaryFile, isAblateJobDir, readAblateJob, readAblateSummary,
  type AblateSummary } from '../ablate/store.js';
import { ProvenanceError, runIdentity } from '../store/provenance.js';
import { staleInput } from '../store/lineage.js';
import type { RunManifest } from '../store/types.js';
import { LobesError, opt } from '../util/errors.js';
import type { AblateBaselinesPayload, AblateCellPayload, AblateIaePayload, AblatePayload, AblateSpecificityPayload,
  PayloadFamily } from './types.js';
import type { IaeSection } from '../ablate/iae.js';
import { predictionTests, type AblateCell, type AblateSpecificity } from '../ablate/stats.js';

export type { AblatePayload, AblateSummary };

/** A region of the summary (name, the region subtracted from it, its blocks). */
export type AblateRegion = AblateSummary['regions'][number];

/** One region × label cell and one specificity contrast, as lobes ablate writes them (src/ablate/stats.ts). */
export type { AblateCell, AblateSpecificity };

/**
 * What the report reads of summary.json (AblateSummary, src/ablate/store.ts, the contract), each
 * field checked: the cells, contrasts and iae section as written, and the baselines' sections
 * (--top, --magnitude, --shuffled, --fit-split) as the page shows them. The settings the page
 * does not show (pFloor, scope, seed, items) are not read, so summaries without them still load.
 */
export type CheckedAblateSummary = Pick<AblateSummary,
  'kind' | 'version' | 'by' | 'labels' | 'random' | 'unit' | 'regions' | 'cells' | 'specificity' | 'iae'> & {
  /** With --top, --magnitude, --shuffled or --fit-split: what the page shows of them. */
  baselines?: AblateBaselinesPayload;
};

export interface AblateData {
  /** The folder given (as given, for the page). */
  dir: string;
  summary: CheckedAblateSummary;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A checker bound to one file: each failure is one line naming the file and the field. */
function checker(file: string) {
  const fail = (where: string, cause: string): never => {
    throw new LobesError(cause, { file, where, hint: `pass the ${opt('out')} folder of lobes ablate` });
  };
  return {
    fail,
    num(v: unknown, where: string): number {
      if (!isNum(v)) fail(where, `expected a finite number, got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as number;
    },
    prob(v: unknown, where: string): number {
      if (!isNum(v) || v < 0 || v > 1)
        fail(where, `expected a probability in [0, 1], got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as number;
    },
    count(v: unknown, where: string, min = 0): number {
      if (!Number.isInteger(v) || (v as number) < min)
        fail(where, `expected an integer ≥ ${min}, got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as number;
    },
    str(v: unknown, where: string): string {
      if (typeof v !== 'string' || !v)
        fail(where, `expected a non-empty string, got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as string;
    },
    strOrNull(v: unknown, where: string): string | null {
      if (v === null) return null;
      if (typeof v !== 'string' || !v)
        fail(where, `expected a region name or null, got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as string;
    },
    /** A p-value written by newer versions (missing in older summaries: null), or null where it is undefined. */
    probOpt(v: unknown, where: string): number | null {
      if (v === undefined || v === null) return null;
      if (!isNum(v) || v < 0 || v > 1)
        fail(where, `expected a probability in [0, 1] or null, got ${JSON.stringify(v)}`);
      return v as number;
    },
    posOpt(v: unknown, where: string): number | null {
      if (v === undefined || v === null) return null;
      if (!isNum(v) || v <= 0) fail(where, `expected a positive number or null, got ${JSON.stringify(v)}`);
      return v as number;
    },
    ci(v: unknown, where: string): [number, number] {
      if (!Array.isArray(v) || v.length !== 2 || !isNum(v[0]) || !isNum(v[1]) || v[0] > v[1])
        fail(where, `expected [low, high] with low ≤ high, got ${JSON.stringify(v) ?? 'nothing'}`);
      return [(v as number[])[0], (v as number[])[1]];
    },
    list(v: unknown, where: string, length: number): unknown[] {
      if (!Array.isArray(v) || v.length !== length)
        fail(where, `expected a list of ${length} (one per random region), got ${JSON.stringify(v) ?? 'nothing'}`);
      return v as unknown[];
    },
    nums(v: unknown, where: string, length: number): number[] {
      if (!Array.isArray(v)) fail(where, `expected ${length} numbers, got ${JSON.stringify(v) ?? 'nothing'}`);
      const a = v as unknown[];
      if (a.length !== length)
        fail(where, `expected ${length} numbers (one per random region, "random" is ${length}), got ${a.length}`);
      const bad = a.findIndex((x) => !isNum(x));
      if (bad >= 0) fail(`${where}[${bad}]`, `expected a finite number, got ${JSON.stringify(a[bad])}`);
      return a as number[];
    },
  };
}

/** Check a parsed summary.json against the contract; `file` names it in errors. */
export function parseAblateSummary(j: unknown, file: string): CheckedAblateSummary {
  const c = checker(file);
  if (!isObj(j)) return c.fail('top level', 'expected a JSON object');
  const o = j as Record<string, unknown>;
  if (o.kind !== 'ablate')
    c.fail('kind', `expected "ablate", got ${JSON.stringify(o.kind) ?? 'nothing'} (not a lobes ablate summary)`);
  if (o.version !== 1)
    c.fail('version', `expected 1, got ${JSON.stringify(o.version) ?? 'nothing'} (written by another lobes version)`);
  const by = c.str(o.by, 'by');
  if (!Array.isArray(o.labels) || o.labels.length === 0) c.fail('labels', 'expected a non-empty list of label values');
  const labels = (o.labels as unknown[]).map((l, i) => c.str(l, `labels[${i}]`));
  if (new Set(labels).size !== labels.length) c.fail('labels', 'a label value is listed twice');
  const K = c.count(o.random, 'random', 1);
  const unit = c.str(o.unit, 'unit');
  if (unit !== 'nats' && unit !== 'accuracy') c.fail('unit', `expected nats or accuracy, got ${JSON.stringify(unit)}`);
  if (!Array.isArray(o.regions) || o.regions.length === 0) c.fail('regions', 'expected a non-empty list of regions');
  const key = (name: string, minus: string | null) => (minus === null ? name : `${name}∖${minus}`);
  const regions: AblateRegion[] = (o.regions as unknown[]).map((r, i) => {
    const w = `regions[${i}]`;
    if (!isObj(r)) return c.fail(w, 'expected an object');
    return { name: c.str(r.name, `${w}.name`), minus: c.strOrNull(r.minus, `${w}.minus`),
      blocks: c.count(r.blocks, `${w}.blocks`, 1) };
  });
  const known = new Set(regions.map((r) => key(r.name, r.minus)));
  if (known.size !== regions.length) c.fail('regions', 'a region is listed twice');
  const labelSet = new Set(labels);
  const region = (r: Record<string, unknown>, w: string) => {
    const name = c.str(r.region, `${w}.region`);
    const minus = c.strOrNull(r.minus, `${w}.minus`);
    if (!known.has(key(name, minus))) c.fail(`${w}.region`, `region ${key(name, minus)} is not in "regions"`);
    return { region: name, minus };
  };
  if (!Array.isArray(o.cells)) c.fail('cells', 'expected a list');
  const seen = new Set<string>();
  const cells: AblateCell[] = (o.cells as unknown[]).map((x, i) => {
    const w = `cells[${i}]`;
    if (!isObj(x)) return c.fail(w, 'expected an object');
    const { region: rn, minus } = region(x, w);
    const label = c.str(x.label, `${w}.label`);
    if (!labelSet.has(label)) c.fail(`${w}.label`, `label ${JSON.stringify(label)} is not in "labels"`);
    const k = `${key(rn, minus)}\u0000${label}`;
    if (seen.has(k)) c.fail(w, `a second cell for region ${key(rn, minus)} and label ${label}`);
    seen.add(k);
    return {
      region: rn,
      minus,
      label,
      n: c.count(x.n, `${w}.n`, 1),
      before: c.num(x.before, `${w}.before`),
      delta: c.num(x.delta, `${w}.delta`),
      ci: c.ci(x.ci, `${w}.ci`),
      nullDelta: c.nums(x.nullDelta, `${w}.nullDelta`, K),
      p: c.prob(x.p, `${w}.p`),
      z: x.z === null ? null : c.num(x.z, `${w}.z`),
      pT: c.probOpt(x.pT, `${w}.pT`),
      pTHolm: c.probOpt(x.pTHolm, `${w}.pTHolm`),
      ...(x.pTScale === undefined
        ? {}
        : {
          pTScale: x.pTScale === 'log' || x.pTScale === 'raw'
            ? x.pTScale
            : c.fail(`${w}.pTScale`, `expected "log" or "raw", got ${JSON.stringify(x.pTScale)}`),
        }),
    };
  });
  if (!Array.isArray(o.specificity)) c.fail('specificity', 'expected a list');
  const specificity: AblateSpecificity[] = (o.specificity as unknown[]).map((x, i) => {
    const w = `specificity[${i}]`;
    if (!isObj(x)) return c.fail(w, 'expected an object');
    const { region: rn, minus } = region(x, w);
    const target = c.str(x.target, `${w}.target`);
    if (!labelSet.has(target)) c.fail(`${w}.target`, `label ${JSON.stringify(target)} is not in "labels"`);
    return {
      region: rn,
      minus,
      target,
      contrast: c.num(x.contrast, `${w}.contrast`),
      ci: c.ci(x.ci, `${w}.ci`),
      nullContrast: c.nums(x.nullContrast, `${w}.nullContrast`, K),
      p: c.prob(x.p, `${w}.p`),
      pHolm: c.prob(x.pHolm, `${w}.pHolm`),
      pT: c.probOpt(x.pT, `${w}.pT`),
      pTHolm: c.probOpt(x.pTHolm, `${w}.pTHolm`),
      ratio: c.posOpt(x.ratio, `${w}.ratio`),
      nullRatio: x.nullRatio === undefined
        ? []
        : c.list(x.nullRatio, `${w}.nullRatio`, K).map((v, j) => c.posOpt(v, `${w}.nullRatio[${j}]`)),
      ratioP: c.probOpt(x.ratioP, `${w}.ratioP`),
      ratioPHolm: c.probOpt(x.ratioPHolm, `${w}.ratioPHolm`),
    };
  });
  // written before the t tests and cost ratios: derive them from the cells and nulls, as lobes ablate does now
  if ((o.cells as Record<string, unknown>[]).some((x) => x.pT === undefined)) predictionTests(cells, specificity);
  const out: CheckedAblateSummary = { kind: 'ablate', version: 1, by, labels, random: K,
    unit: unit as AblateSummary['unit'], regions, cells, specificity };
  if (o.iae !== undefined) out.iae = parseIae(o.iae, c, K, (x, w) => region(x, w), labelSet);
  if (o.doses !== undefined || o.magnitude !== undefined || o.shuffled !== undefined || o.fitSplit !== undefined)
    out.baselines = parseBaselines(o, c, (x, w) => region(x, w));
  return out;
}

/** The family `name` of a summary section's declaredFamilies (its name and size), or null where the section declares none. */
function declaredFamily(v: unknown, name: string, w: string, c: ReturnType<typeof checker>): PayloadFamily | null {
  if (v === undefined) return null;
  if (!Array.isArray(v)) return c.fail(w, 'expected a list of families');
  const f = (v as unknown[]).find((x) => isObj(x) && x.family === name) as Record<string, unknown> | undefined;
  return f ? { name, size: c.count(f.size, `${w} (${name}).size`) } : null;
}

/** The baselines' sections of a summary (--top, --magnitude, --shuffled, --fit-split): the fields the page shows, each checked. */
function parseBaselines(o: Record<string, unknown>, c: ReturnType<typeof checker>,
  region: (x: Record<string, unknown>, w: string) => { region: string; minus: string | null }): AblateBaselinesPayload
{
  const list = (v: unknown, w: string): Record<string, unknown>[] => {
    if (!Array.isArray(v)) c.fail(w, 'expected a list');
    return (v as unknown[]).map((x, i) => (isObj(x) ? x : c.fail(`${w}[${i}]`, 'expected an object')));
  };
  // the baseline's ratios as one number: their geometric mean (costs spread multiplicatively)
  const geo = (v: unknown, w: string) => {
    if (v === undefined) return null;
    if (!Array.isArray(v)) return c.fail(w, 'expected a list of ratios');
    return geometricMean((v as unknown[]).map((x, j) => c.posOpt(x, `${w}[${j}]`)));
  };
  const doses = o.doses === undefined ? [] : list(o.doses, 'doses').map((d, i) => {
    const w = `doses[${i}]`;
    const top = c.num(d.top, `${w}.top`);
    if (!(top > 0 && top <= 1)) c.fail(`${w}.top`, `expected a fraction in (0, 1], got ${top}`);
    const blocks = new Map(
      list(d.regions, `${w}.regions`).map((r,
        j) => [regionName(c.str(r.name, `${w}.regions[${j}].name`), c.strOrNull(r.minus, `${w}.regions[${j}].minus`)),
        c.count(r.blocks, `${w}.regions[${j}].blocks`, 1)]
      ),
    );
    const rows = list(d.specificity, `${w}.specificity`).map((x, j) => {
      const v = `${w}.specificity[${j}]`;
      const { region: rn, minus } = region(x, v);
      const name = regionName(rn, minus);
      return { region: name, blocks: blocks.get(name) ?? null, ratio: c.posOpt(x.ratio, `${v}.ratio`),
        baseline: geo(x.nullRatio, `${v}.nullRatio`), p: c.probOpt(x.ratioP, `${v}.ratioP`),
        pHolm: c.probOpt(x.ratioPHolm, `${v}.ratioPHolm`) };
    });
    const family = declaredFamily(d.declaredFamilies, 'specificity', `${w}.declaredFamilies`, c);
    return { top, stored: d.stored === true, rows, ...(family ? { family } : {}) };
  });
  const magnitude = o.magnitude === undefined ? [] : list(o.magnitude, 'magnitude').map((m, i) => {
    const w = `magnitude[${i}]`;
    const { region: rn, minus } = region(m, w);
    if (!isObj(m.specificity)) c.fail(`${w}.specificity`, 'expected an object');
    if (!isObj(m.versusRegion) || !isObj(m.versusRegion.own) || !isObj(m.versusRegion.others))
      c.fail(`${w}.versusRegion`, 'expected {own, others}');
    const vr = m.versusRegion as { own: Record<string, unknown>; others: Record<string, unknown> };
    const own = (o.specificity as Record<string, unknown>[]).find((x) =>
      x.region === rn && (x.minus ?? null) === minus
    );
    return {
      region: regionName(rn, minus),
      blocks: c.count(m.blocks, `${w}.blocks`, 1),
      ratio: own ? c.posOpt(own.ratio, `specificity (${regionName(rn, minus)}).ratio`) : null,
      baseline: c.posOpt((m.specificity as Record<string, unknown>).ratio, `${w}.specificity.ratio`),
      pOwn: c.probOpt(vr.own.p, `${w}.versusRegion.own.p`),
      pOthers: c.probOpt(vr.others.p, `${w}.versusRegion.others.p`),
    };
  });
  let shuffled: AblateBaselinesPayload['shuffled'] = null;
  if (o.shuffled !== undefined) {
    if (!isObj(o.shuffled)) c.fail('shuffled', 'expected an object');
    const sh = o.shuffled as Record<string, unknown>;
    const S = c.count(sh.shuffles, 'shuffled.shuffles', 1);
    shuffled = {
      shuffles: S,
      floor: 1 / (S + 1),
      rows: list(sh.rows, 'shuffled.rows').map((x, j) => {
        const w = `shuffled.rows[${j}]`;
        const { region: rn, minus } = region(x, w);
        return { region: regionName(rn, minus), blocks: null, ratio: c.posOpt(x.ratio, `${w}.ratio`),
          baseline: geo(x.nullRatio, `${w}.nullRatio`), p: c.probOpt(x.ratioP, `${w}.ratioP`),
          pHolm: c.probOpt(x.ratioPHolm, `${w}.ratioPHolm`) };
      }),
    };
    const family = declaredFamily(sh.declaredFamilies, 'shuffled-label-regions', 'shuffled.declaredFamilies', c);
    if (family) shuffled.family = family;
  }
  let fitSplit: AblateBaselinesPayload['fitSplit'] = null;
  if (o.fitSplit !== undefined) {
    if (!isObj(o.fitSplit) || !isObj(o.fitSplit.fit) || !isObj(o.fitSplit.test))
      c.fail('fitSplit', 'expected an object with fit and test');
    const fs = o.fitSplit as { seed: unknown; fit: Record<string, unknown>; test: Record<string, unknown>;
      regions: unknown };
    fitSplit = {
      seed: c.count(fs.seed, 'fitSplit.seed'),
      fit: c.count(fs.fit.items, 'fitSplit.fit.items', 1),
      test: c.count(fs.test.items, 'fitSplit.test.items', 1),
      regions: list(fs.regions, 'fitSplit.regions').map((r, j) => ({ name: c.str(r.name, `fitSplit.regions[${j}].name`),
        blocks: c.count(r.blocks, `fitSplit.regions[${j}].blocks`, 1),
        jaccard: c.prob(r.jaccardWithStored, `fitSplit.regions[${j}].jaccardWithStored`) })
      ),
    };
  }
  return { doses, magnitude, shuffled, fitSplit };
}

/** The `iae` section of a summary (--task iae). */
function parseIae(v: unknown, c: ReturnType<typeof checker>, K: number,
  region: (x: Record<string, unknown>, w: string) => { region: string; minus: string | null },
  labels: Set<string>): IaeSection
{
  if (!isObj(v)) return c.fail('iae', 'expected an object');
  if (v.version !== 1)
    c.fail('iae.version',
      `expected 1, got ${JSON.stringify(v.version) ?? 'nothing'} (written by another lobes version)`);
  if (v.scoring !== 'letter' && v.scoring !== 'cloze')
    c.fail('iae.scoring', `expected letter or cloze, got ${JSON.stringify(v.scoring) ?? 'nothing'}`);
  const metric = c.str(v.metric, 'iae.metric');
  if (!['acc', 'acc_norm', 'acc_mutual_info'].includes(metric))
    c.fail('iae.metric', `expected acc, acc_norm or acc_mutual_info, got ${JSON.stringify(metric)}`);
  const ch = v.chance;
  if (!isObj(ch)) return c.fail('iae.chance', 'expected an object');
  const chance = {
    n: c.count(ch.n, 'iae.chance.n', 1),
    correct: c.count(ch.correct, 'iae.chance.correct'),
    accuracy: c.prob(ch.accuracy, 'iae.chance.accuracy'),
    chance: c.prob(ch.chance, 'iae.chance.chance'),
    p: c.prob(ch.p, 'iae.chance.p'),
    alpha: c.prob(ch.alpha, 'iae.chance.alpha'),
  };
  if (!Array.isArray(v.skipped) || v.skipped.some((x) => typeof x !== 'string'))
    c.fail('iae.skipped', 'expected a list of item ids');
  if (!Array.isArray(v.cells)) c.fail('iae.cells', 'expected a list');
  const cells = (v.cells as unknown[]).map((x, i) => {
    const w = `iae.cells[${i}]`;
    if (!isObj(x)) return c.fail(w, 'expected an object');
    const r = region(x, w);
    const label = c.str(x.label, `${w}.label`);
    if (!labels.has(label)) c.fail(`${w}.label`, `label ${JSON.stringify(label)} is not in "labels"`);
    return {
      ...r,
      label,
      n: c.count(x.n, `${w}.n`, 1),
      accuracyBefore: c.prob(x.accuracyBefore, `${w}.accuracyBefore`),
      accuracyAfter: c.prob(x.accuracyAfter, `${w}.accuracyAfter`),
      change: c.num(x.change, `${w}.change`),
      ci: c.ci(x.ci, `${w}.ci`),
      lost: c.count(x.lost, `${w}.lost`),
      gained: c.count(x.gained, `${w}.gained`),
      pMcNemar: c.prob(x.pMcNemar, `${w}.pMcNemar`),
      nullChange: c.nums(x.nullChange, `${w}.nullChange`, K),
      p: c.prob(x.p, `${w}.p`),
      pHolm: c.prob(x.pHolm, `${w}.pHolm`),
      z: x.z === null ? null : c.num(x.z, `${w}.z`),
    };
  });
  return { version: 1, scoring: v.scoring as IaeSection['scoring'], metric: metric as IaeSection['metric'],
    shuffles: c.count(v.shuffles, 'iae.shuffles', 1), chance, skipped: v.skipped as string[], cells };
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

/** The geometric mean of positive values; null when any is missing or there are none. */
function geometricMean(xs: readonly (number | null)[]): number | null {
  if (!xs.length || xs.some((x) => x === null)) return null;
  return Math.exp(xs.reduce((s: number, x) => s + Math.log(x as number), 0) / xs.length);
}

/** A region's display name: "A", or "A∖B" for A's blocks that are not B's. */
export function regionName(name: string, minus: string | null): string {
  return minus === null ? name : `${name}∖${minus}`;
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
