/**
 * What the region metrics can claim, added after the analysis: each tested value's z-score
 * against its null, the random-placement null of every difference and region (with the
 * density normalised for the set's size), and the multiplicity corrections within each
 * family (Holm for the family-wise error, Benjamini–Hochberg for the false discovery rate).
 *
 * Families: a metric over the pairs (Jaccard: the P pairs; isolation, density and components
 * of the differences: A∖B and B∖A of every pair, 2P values), a metric over the groups (G), and
 * the capture points of the channel test. The adjusted p-values sit beside the raw ones.
 */
import { nullZ, permutationFloor } from '../util/stats.js';
import { declareFamily, type Family } from '../util/families.js';
import { familyVerdicts, type Sizing } from '../util/resolution.js';
import { nullTest, type Nulls } from './analyze.js';
import { placementNull, randomDensity, countsPerMatrix } from './placement.js';
import { density, components, type Masks } from './regions.js';
import { correctChannelFamily } from './channels.js';
import type { BlockSet, NullTested, SetPlacement, WandaMatrix, WandaMetrics, WandaRegions, WandaChannelTest,
  WandaWeightPairMetrics } from './types.js';

export interface InferenceOptions {
  /** Random placements per set (0: none). */
  placements: number;
  seed: number;
  /** The channel test's per-capture-point results, before the family correction. */
  channels?: WandaChannelTest[];
  /** The placement nulls of placementSets' sets, in that order, computed already (on worker threads); else computed here. */
  placed?: PlacementNull[];
  /** How the permutation count was set for its families (settings.sizing; default `sized`). */
  sizing?: Sizing;
}

/** R random placements' densities and component counts of one set (placementNull). */
export type PlacementNull = { density: Float64Array; components: Float64Array };

/**
 * The sets the random-placement null tests, in order (A∖B and B∖A of every pair, then every
 * group's region, in `groups` order), each with its blocks per matrix and its seed (the order
 * and seeds addInference uses).
 */
export function placementSets(regions: WandaRegions, groups: readonly string[],
  seed: number): { counts: Int32Array; seed: number }[]
{
  const mats = regions.matrices;
  const sets = [...regions.differences.flatMap((d) => [d.aMinusB, d.bMinusA]),
    ...groups.map((g) => regions.regions[g] ?? {})];
  return sets.map((set, k) => ({ counts: countsPerMatrix(masksOf(set, mats)), seed: placementSeed(seed, k) }));
}

/** Notes written into metrics.json (and shown by the report) on what the numbers are. */
export const WANDA_NOTES = [
  "Jaccard and isolation are one test: the top selection keeps the same number of blocks for every group (|A| = |B|), so both move only with |A∩B|; isolation = 1 − |A∩B|/|A| is monotone in Jaccard = |A∩B|/(2|A| − |A∩B|), and its p equals Jaccard's pLower. Jaccard is the one reported.",
  "The label-permutation null keeps the shared |W| map, so shuffled groups' regions are as clustered as real ones: it asks whether the groups differ, not whether a set is denser than random blocks. The random-placement null (placement*) and densityRatio (density / a random set's expected density) answer that.",
  'A region compares activation RMS: a group enters the score only through s_g, which rescales the columns of one |W| map; metrics.channels tests s_g directly.',
];

/** Masks of a block set (sorted flat indices per matrix name). */
export function masksOf(set: BlockSet, matrices: WandaMatrix[]): Masks {
  return matrices.map((m) => {
    const mask = new Uint8Array(m.rowBlocks * m.colBlocks);
    for (const i of set[m.name] ?? []) mask[i] = 1;
    return mask;
  });
}

/** A set against R random placements of the same per-matrix sizes. */
export function setPlacement(mask: Masks, matrices: WandaMatrix[], R: number, seed: number,
  placed?: PlacementNull): SetPlacement
{
  const counts = countsPerMatrix(mask);
  let size = 0;
  for (const c of counts) size += c;
  const dens = density(mask, matrices);
  const comp = components(mask, matrices);
  const rd = randomDensity(counts, matrices);
  const nul = R > 0 ? (placed ?? placementNull(counts, matrices, R, seed)) : null;
  return {
    size,
    randomDensity: rd,
    densityRatio: rd > 0 ? dens / rd : null,
    density: withZ(nullTest(dens, nul?.density ?? null), nul?.density ?? null),
    components: withZ(nullTest(comp, nul?.components ?? null), nul?.components ?? null),
  };
}

function withZ(t: NullTested, nulls: Float64Array | null): NullTested {
  return { ...t, z: nulls && nulls.length ? nullZ(t.value, nulls) : null };
}

/**
 * Holm and BH of p and pLower across a family, written into the members (in place); given the
 * family's permutation count and how it was set, each member's verdicts too (`verdict` for p,
 * `verdictLower` for pLower; src/util/resolution.ts): a null with no spread gives no verdict p.
 */
export function correctFamily(fam: Family, family: NullTested[], test?: { R: number; sizing?: Sizing }): void {
  const ph = fam.adjust(family.map((t) => t.p), 'holm');
  const pb = fam.adjust(family.map((t) => t.p), 'bh');
  const lh = fam.adjust(family.map((t) => t.pLower), 'holm');
  const lb = fam.adjust(family.map((t) => t.pLower), 'bh');
  family.forEach((t, i) => {
    t.pHolm = ph[i]!;
    t.pBH = pb[i]!;
    t.pLowerHolm = lh[i]!;
    t.pLowerBH = lb[i]!;
  });
  if (!test || test.R <= 0) return;
  const input = (t: NullTested, p: number | null | undefined, tail: 'upper' | 'lower') => ({ p, z: t.z ?? null,
    R: test.R, sizing: test.sizing, tail, nullSd: p !== null && p !== undefined && t.z === null ? 0 : undefined,
    nullMean: t.nullMean });
  const up = familyVerdicts(family.map((t) => input(t, t.p, 'upper')), fam);
  const lo = familyVerdicts(family.map((t) => input(t, t.pLower, 'lower')), fam);
  family.forEach((t, i) => {
    t.verdict = up[i];
    if (t.pLower !== undefined && t.pLower !== null) t.verdictLower = lo[i];
  });
}

/** The weight-level Jaccard of every pair (--resolution weight): its own family, added to the metrics' declared families. */
export function correctWeightFamily(metrics: WandaMetrics, weightLevel: WandaWeightPairMetrics[],
  test: { R: number; sizing?: Sizing }): void
{
  const fam = declareFamily({ name: 'weight-region-pairs',
    claim: "two groups' weight-level regions overlap less (or more) than shuffled labels'",
    members: weightLevel.map((w) => `${w.a} | ${w.b}`), correction: ['holm', 'bh'] });
  correctFamily(fam, weightLevel.map((w) => w.jaccard), test);
  metrics.declaredFamilies = [...(metrics.declaredFamilies ?? []), fam.record()];
}

/**
 * The families addInference declares, from the plan alone (the pairs and groups of the labels,
 * which of their nulls the settings compute, the placements P and the capture points), in the
 * order metrics.json lists them: their names, claims and members, before any p is adjusted.
 */
export function wandaPlan(metrics: Pick<WandaMetrics, 'pairs' | 'groups'>, placements: number,
  capturePoints?: readonly string[]): { name: string; claim: string; members: string[] }[]
{
  const pairIds = metrics.pairs.map((p) => `${p.a} | ${p.b}`);
  const diffIds = metrics.pairs.flatMap((p) => [`${p.a} ∖ ${p.b}`, `${p.b} ∖ ${p.a}`]);
  const compIds = metrics.pairs.flatMap((
    p,
  ) => [...(p.componentsAminusBNull ? [`${p.a} ∖ ${p.b}`] : []),
    ...(p.componentsBminusANull ? [`${p.b} ∖ ${p.a}`] : [])]
  );
  const groupIds = metrics.groups.map((g) => g.group);
  const f = (name: string, claim: string, members: string[]) => ({ name, claim, members });
  return [
    f('region-pairs', "two groups' regions overlap less (or more) than shuffled labels' (Jaccard of every pair)",
      pairIds),
    f('isolation', "a set difference holds more of its region than shuffled labels' (every pair, both ways)", diffIds),
    f('set-differences', "a set difference is denser than shuffled labels' (every pair, both ways)", diffIds),
    f('set-difference-components', "a set difference has more (or fewer) connected pieces than shuffled labels'",
      compIds),
    f('group-density', "a group's region is denser than shuffled labels'",
      groupIds.filter((_, i) => !!metrics.groups[i]!.densityNull)),
    f('group-components', "a group's region has more (or fewer) pieces than shuffled labels'",
      groupIds.filter((_, i) => !!metrics.groups[i]!.componentsNull)),
    ...(placements > 0
      ? [
        f('placement-set-differences', 'a set difference is denser than random blocks placed alike', diffIds),
        f('placement-set-difference-components', 'a set difference has fewer pieces than random blocks placed alike',
          diffIds),
        f('placement-group-density', "a group's region is denser than random blocks placed alike", groupIds),
        f('placement-group-components', "a group's region has fewer pieces than random blocks placed alike", groupIds),
      ]
      : []),
    ...(capturePoints
      ? [
        f('capture-points', "the groups' activation RMS differs beyond shuffled labels at a capture point", [
          ...capturePoints,
        ]),
      ]
      : []),
  ];
}

/** Seed of the k-th placement null (distinct streams from the run's seed). */
const placementSeed = (seed: number, k: number) => (seed + 0x9e3779b9 * (k + 1)) >>> 0;

/** A copy of `metrics` with z-scores, placement nulls, family corrections and notes. */
export function addInference(metrics: WandaMetrics, regions: WandaRegions, nulls: Nulls | null,
  opts: InferenceOptions): WandaMetrics
{
  const R = metrics.permutations ?? 0;
  const mats = regions.matrices;
  const P = opts.placements;
  const pairs = metrics.pairs.map((pm, p) => {
    const nv = R > 0 ? nulls?.pairs[p] : undefined;
    const z = (t: NullTested, v: Float64Array | undefined): NullTested => ({ ...t, z: v ? nullZ(t.value, v) : null });
    const d = regions.differences[p]!;
    return {
      ...pm,
      jaccard: z(pm.jaccard, nv?.jaccard),
      isolationAB: z(pm.isolationAB, nv?.isolationAB),
      isolationBA: z(pm.isolationBA, nv?.isolationBA),
      densityAminusB: z(pm.densityAminusB, nv?.densityAminusB),
      densityBminusA: z(pm.densityBminusA, nv?.densityBminusA),
      componentsAminusBNull: pm.componentsAminusBNull && z(pm.componentsAminusBNull, nv?.componentsAminusB),
      componentsBminusANull: pm.componentsBminusANull && z(pm.componentsBminusANull, nv?.componentsBminusA),
      ...(P > 0
        ? {
          placementAminusB: setPlacement(masksOf(d.aMinusB, mats), mats, P, placementSeed(opts.seed, 2 * p),
            opts.placed?.[2 * p]),
          placementBminusA: setPlacement(masksOf(d.bMinusA, mats), mats, P, placementSeed(opts.seed, 2 * p + 1),
            opts.placed?.[2 * p + 1]),
        }
        : {}),
    };
  });
  const nPairSets = 2 * pairs.length;
  const groups = metrics.groups.map((g, gi) => {
    const nv = R > 0 ? nulls?.groups[gi] : undefined;
    return {
      ...g,
      densityNull: g.densityNull && { ...g.densityNull, z: nv ? nullZ(g.densityNull.value, nv.density) : null },
      componentsNull: g.componentsNull &&
        { ...g.componentsNull, z: nv ? nullZ(g.componentsNull.value, nv.components) : null },
      ...(P > 0
        ? {
          placement: setPlacement(masksOf(regions.regions[g.group] ?? {}, mats), mats, P,
            placementSeed(opts.seed, nPairSets + gi), opts.placed?.[nPairSets + gi]),
        }
        : {}),
    };
  });
  // The families, each with its verdicts: the label permutations' and the placements' counts are both R.
  // Every family is declared first, from the plan (wandaPlan: the pairs, the groups, the settings),
  // and only then adjusted, each through its members by name.
  const lab = { R, sizing: opts.sizing };
  const pla = { R: P, sizing: opts.sizing };
  const plan = wandaPlan(metrics, P, opts.channels?.map((c) => c.hook));
  const declared: Family[] = plan.map((f) => declareFamily({ ...f, correction: ['holm', 'bh'] }));
  const byName = new Map(declared.map((f) => [f.name, f]));
  const correct = (name: string, members: string[], tests: NullTested[], test: { R: number; sizing?: Sizing }) => {
    const fam = byName.get(name)!;
    if (fam.members.length !== members.length || fam.members.some((m, i) => m !== members[i]))
      throw new Error(`family ${name}: adjusted over ${members.join(', ')}, declared with ${fam.members.join(', ')}`);
    correctFamily(fam, tests, test);
  };
  const pairIds = pairs.map((p) => `${p.a} | ${p.b}`);
  const diffIds = pairs.flatMap((p) => [`${p.a} ∖ ${p.b}`, `${p.b} ∖ ${p.a}`]);
  const groupIds = groups.map((g) => g.group);
  correct('region-pairs', pairIds, pairs.map((p) => p.jaccard), lab);
  correct('isolation', diffIds, pairs.flatMap((p) => [p.isolationAB, p.isolationBA]), lab);
  correct('set-differences', diffIds, pairs.flatMap((p) => [p.densityAminusB, p.densityBminusA]), lab);
  const comps = pairs.flatMap((p) => [p.componentsAminusBNull, p.componentsBminusANull]);
  correct('set-difference-components', diffIds.filter((_, i) => !!comps[i]), comps.filter((t): t is NullTested => !!t),
    lab);
  correct('group-density', groupIds.filter((_, i) => !!groups[i]!.densityNull),
    groups.flatMap((g) => (g.densityNull ? [g.densityNull] : [])), lab);
  correct('group-components', groupIds.filter((_, i) => !!groups[i]!.componentsNull),
    groups.flatMap((g) => (g.componentsNull ? [g.componentsNull] : [])), lab);
  if (P > 0) {
    correct('placement-set-differences', diffIds,
      pairs.flatMap((p) => [p.placementAminusB!.density, p.placementBminusA!.density]), pla);
    correct('placement-set-difference-components', diffIds,
      pairs.flatMap((p) => [p.placementAminusB!.components, p.placementBminusA!.components]), pla);
    correct('placement-group-density', groupIds, groups.map((g) => g.placement!.density), pla);
    correct('placement-group-components', groupIds, groups.map((g) => g.placement!.components), pla);
  }
  const chFam = byName.get('capture-points') ?? null;
  // each capture point's per-channel family travels with its test; it is listed here, not in metrics.channels
  const channelFams = (opts.channels ?? []).flatMap((c) => (c.family ? [c.family] : []));
  const tests = opts.channels?.map(({ family: _f, ...c }) => c);
  const channels = tests && chFam ? correctChannelFamily(chFam, tests, { R, sizing: opts.sizing }) : undefined;
  return {
    ...metrics,
    groups,
    pairs,
    pFloor: R > 0 ? permutationFloor(R) : null,
    families: { jaccard: pairs.length, differences: nPairSets, groups: groups.length,
      ...(channels ? { capturePoints: channels.length } : {}) },
    ...(channels ? { channels } : {}),
    declaredFamilies: [...declared.map((f) => f.record()), ...channelFams],
    notes: WANDA_NOTES,
  };
}
