/**
 * The check of an ablation's summary.json (AblateSummary, src/ablate/store.ts, the contract) as the
 * report reads it: parseAblateSummary checks each field the page shows (regions, cells, specificity
 * contrasts, the iae section, the baselines' sections of --top, --magnitude, --shuffled and
 * --fit-split), each failure one line naming the file and the field, and derives the prediction
 * tests that summaries written before them lack (src/ablate/stats.ts predictionTests). Loading the
 * folder, its lineage check and the page's payload are in src/report/ablate.ts.
 */
import type { AblateSummary } from '../ablate/store.js';
import { LobesError, opt } from '../util/errors.js';
import type { AblateBaselinesPayload, PayloadFamily } from './types.js';
import type { IaeSection } from '../ablate/iae.js';
import { predictionTests, type AblateCell, type AblateSpecificity } from '../ablate/stats.js';

/** A region of the summary (name, the region subtracted from it, its blocks). */
export type AblateRegion = AblateSummary['regions'][number];

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

/** The geometric mean of positive values; null when any is missing or there are none. */
export function geometricMean(xs: readonly (number | null)[]): number | null {
  if (!xs.length || xs.some((x) => x === null)) return null;
  return Math.exp(xs.reduce((s: number, x) => s + Math.log(x as number), 0) / xs.length);
}

/** A region's display name: "A", or "A∖B" for A's blocks that are not B's. */
export function regionName(name: string, minus: string | null): string {
  return minus === null ? name : `${name}∖${minus}`;
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
