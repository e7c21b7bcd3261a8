/**
 * Verdicts that know what their test could show. A permutation test with R shuffles cannot give a
 * p below 1/(R + 1), and Holm over a family of m cannot bring it below about m/(R + 1): with too
 * few shuffles a family's verdict is decided before anything is measured. This module
 *
 *  - sizes a permutation count to its family before a run (planPermutations: the count
 *    permutationsForFamily gives, up to a cost cap; a count the user gave is kept as given);
 *  - reads each member of a family into one Verdict (familyVerdicts): passes, fails, "not
 *    testable at R = …" (its smallest attainable Holm-adjusted p is above α), or no p at all
 *    (its null has no spread, so a p would only count ties). Beside every permutation p it puts
 *    the z of the value against its null and the normal-approximation p of that z, flagged as
 *    an approximation; a p at its floor 1/(R + 1) is marked. Where the default count was capped
 *    for cost below what the family needs, the verdict is read from the normal approximation,
 *    and says so.
 *
 * The report's first lines, the cluster command's summary and the metrics files all print these
 * objects, so two sentences about one test cannot disagree.
 */
import { permutationsForFamily } from './stats.js';
import type { Family } from './families.js';

/** Significance level of the verdicts. */
export const VERDICT_ALPHA = 0.05;

/**
 * How a permutation count was set: `sized` (the default, permutationsForFamily of its family),
 * `capped` (the default, held below that for cost: the verdict reads the normal approximation)
 * or `user` (given on the command line, or derived from a count that was).
 */
export type Sizing = 'sized' | 'capped' | 'user';

/** A permutation count chosen for a family. */
export interface PermutationPlan {
  /** Permutations to run. */
  R: number;
  /** Members of the family the count was sized for. */
  family: number;
  /** Permutations the family needs for its smallest p to pass Holm (permutationsForFamily). */
  needed: number;
  sizing: Sizing;
}

/**
 * The permutation count of a family of `family` tests: `user` when given (kept as it is), else
 * permutationsForFamily(family), at most `cap` (then `capped`: the verdicts read z's normal
 * approximation) and at least `min`.
 */
export function planPermutations(family: number, user: number | undefined, cap: number, min = 0,
  alpha = VERDICT_ALPHA): PermutationPlan
{
  const needed = permutationsForFamily(Math.max(1, family), alpha);
  if (user !== undefined) return { R: user, family, needed, sizing: 'user' };
  const R = Math.max(min, Math.min(needed, cap));
  return { R, family, needed, sizing: R < needed ? 'capped' : 'sized' };
}

/**
 * P(Z ≥ z) for a standard normal Z (the complementary error function in Chebyshev form;
 * relative error below 1.2e-7, enough for an approximation that is flagged as one).
 */
export function normalUpper(z: number): number {
  if (Number.isNaN(z)) return NaN;
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const poly = -x * x - 1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const erfc = t * Math.exp(poly);
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/** One test of a family, as its metrics record it. */
export interface TestInput {
  /** The permutation p (null: no null was run). */
  p: number | null | undefined;
  /** (value − null mean) / null sd; null when the null is constant or too short. */
  z?: number | null;
  /** Permutations of its null. */
  R: number;
  /** How R was set (default `sized`). */
  sizing?: Sizing;
  /** The null's standard deviation (0: a degenerate null); absent when unknown. */
  nullSd?: number | null;
  /** The null's value when it has no spread. */
  nullMean?: number | null;
  /** Which tail the p is of: `upper` (value above its null, the default) or `lower`. */
  tail?: 'upper' | 'lower';
}

/** What a test can say: passes, fails, cannot pass at its R, has no p (degenerate null), or was not tested. */
export type VerdictStatus = 'pass' | 'fail' | 'not-testable' | 'degenerate' | 'untested';

/** One test's verdict within its family. */
export interface Verdict {
  status: VerdictStatus;
  /** What decided: the permutation p, the normal approximation of z (a capped count), or nothing. */
  basis: 'permutation' | 'normal' | null;
  /** The permutation p (null when degenerate or untested). */
  p: number | null;
  /** The one-sided normal-approximation p of z (an approximation: it assumes a normal null). */
  pNormal: number | null;
  z: number | null;
  /** Holm-adjusted p of the deciding p within the family. */
  adjusted: number | null;
  /** Members of the family with a p. */
  family: number;
  /** The declared family's name (src/util/families.ts; absent in files written before). */
  familyName?: string;
  R: number;
  /** 1/(R + 1). */
  floor: number | null;
  /** Whether p sits at its floor (no shuffle did as well). */
  atFloor: boolean;
  /** The smallest Holm-adjusted p this test could reach with its R (all the family at their floors). */
  reach: number | null;
  /** Permutations the family needs (permutationsForFamily of its size). */
  needed: number;
  /** Why there is no p, why it cannot pass, or what it was read on. */
  reason?: string;
}

/**
 * The smallest Holm-adjusted p member `i` can reach: every p at its floor, and any set of the
 * members whose floor is no larger than i's ranked before it (Holm's step-down takes the largest
 * (m − j + 1) p_(j) up to i's rank).
 */
export function holmReach(floors: readonly number[], i: number): number {
  const m = floors.length;
  const fi = floors[i]!;
  const before = floors.filter((f, j) => j !== i && f <= fi).sort((a, b) => a - b);
  let best = m * fi;
  let run = 0;
  for (let k = 1; k <= before.length; k++) {
    run = Math.max(run, (m - k + 1) * before[k - 1]!);
    best = Math.min(best, Math.max(run, (m - k) * fi));
  }
  return Math.min(1, best);
}

/**
 * The verdicts of a declared family (Holm at `alpha`, by default the family's). A test without p is untested; a test whose null has
 * no spread is degenerate and has no p; both stay out of the family. A test decided on its
 * permutation p whose smallest attainable adjusted p is above alpha is not testable at its R.
 */
export function familyVerdicts(tests: readonly TestInput[], family: Family,
  alpha = family.alpha ?? VERDICT_ALPHA): Verdict[]
{
  const degenerate = (t: TestInput) => t.R >= 2 && t.nullSd === 0;
  const has = tests.map((t) => t.p !== null && t.p !== undefined && Number.isFinite(t.p) && !degenerate(t));
  const pNormal = tests.map((
    t,
  ) => (t.z === null || t.z === undefined ? null : t.tail === 'lower' ? 1 - normalUpper(t.z) : normalUpper(t.z)));
  const members = tests.map((_, i) => i).filter((i) => has[i]);
  const m = members.length;
  const needed = permutationsForFamily(Math.max(1, m), alpha);
  // A default count too small for its family (capped for cost, or sized for a smaller family) is
  // read on the normal approximation; a count the user gave (or an unknown one) stays a permutation test.
  const basis: ('permutation' | 'normal' | null)[] = tests.map((t,
    i) => (!has[i] ? null : t.sizing === 'capped' && pNormal[i] !== null ? 'normal' : 'permutation')
  );
  // an unknown R (0 with a p: an older file) has no floor to judge
  const floorsOf = () =>
    members.map((i) => (basis[i] === 'permutation' && tests[i]!.R > 0 ? 1 / (tests[i]!.R + 1) : 0));
  let floors = floorsOf();
  members.forEach((i, k) => {
    if (tests[i]!.sizing === 'sized' && pNormal[i] !== null && holmReach(floors, k) > alpha + 1e-12)
      basis[i] = 'normal';
  });
  floors = floorsOf();
  const deciding = tests.map((t,
    i) => (basis[i] === 'normal' ? pNormal[i] : basis[i] === 'permutation' ? (t.p as number) : null)
  );
  // Holm within the declared family (one test per member; src/util/families.ts)
  const adj = family.adjust(deciding, 'holm');
  return tests.map((t, i) => {
    const R = t.R;
    const floor = R > 0 ? 1 / (R + 1) : null;
    const z = t.z ?? null;
    const base = { p: null, pNormal: pNormal[i] ?? null, z, adjusted: null, family: m, familyName: family.name, R,
      floor, atFloor: false, reach: null, needed, basis: null } as const;
    if (degenerate(t)) {
      const at = t.nullMean !== null && t.nullMean !== undefined ? ` ${t.nullMean.toFixed(4)}` : ' the same value';
      return { ...base, status: 'degenerate', pNormal: null,
        reason: `the null has no spread (every one of the ${R} shuffles scored${at}), so a p would only count ties` };
    }
    if (!has[i]) return { ...base, status: 'untested', reason: 'no permutation null' };
    const p = t.p as number;
    const atFloor = floor !== null && Math.abs(p - floor) < 1e-12;
    const k = members.indexOf(i);
    const reach = basis[i] === 'permutation' && R > 0 ? holmReach(floors, k) : null;
    const a = adj[i] ?? null;
    const v: Verdict = { ...base, p, atFloor, reach, adjusted: a, basis: basis[i]!, status: 'fail' };
    if (reach !== null && reach > alpha + 1e-12) {
      v.status = 'not-testable';
      v.reason = `its smallest attainable Holm-adjusted p is ${reach.toFixed(3)} > ${alpha} over ${m} test${
        m === 1 ? '' : 's'
      } (${needed} permutations would reach it)`;
    } else v.status = a !== null && a <= alpha ? 'pass' : 'fail';
    if (basis[i] === 'normal')
      v.reason =
        `read from the normal approximation of z: R = ${R} is below the ${needed} permutations the family of ${m} needs; the default count was held below that for cost`;
    // a normal-approximation member can reach any p: its floor does not bind
    return v;
  });
}

// near the level, four decimals: 0.0495 passes and 0.0502 does not, though both round to 0.05
const fp = (
  p: number,
) => (p < 1e-16
  ? '< 1e-16'
  : p < 0.001
  ? p.toExponential(0)
  : p < 0.01
  ? p.toFixed(3)
  : p >= 0.045 && p < 0.055 && p !== 0.05
  ? p.toFixed(4)
  : p.toFixed(2));
/** "p = 0.02", or "p < 1e-16" below what a double's tail keeps. */
const eq = (label: string, p: number) => (p < 1e-16 ? `${label} < 1e-16` : `${label} = ${fp(p)}`);

/** A p as the verdicts print it. */
export const formatP = fp;

/**
 * "p = 0.02 (the floor 1/(R+1) of 50 permutations), z = 3.1, normal approx. p = 0.001, Holm 0.10
 * over 5 classifiers": the numbers of one test (`noun` names the family's members).
 */
export function verdictNumbers(v: Verdict, noun = 'tests'): string {
  if (v.status === 'degenerate' || v.status === 'untested')
    return v.status === 'degenerate' ? `no p: ${v.reason}` : 'no permutation null';
  const parts = [`${eq('p', v.p!)}${v.atFloor ? ` (the floor 1/(R+1) of ${v.R} permutations)` : ''}`];
  if (v.z !== null) parts.push(`z = ${v.z.toFixed(1)}`);
  if (v.pNormal !== null) parts.push(eq('normal approx. p', v.pNormal));
  if (v.adjusted !== null && v.family > 1)
    parts.push(
      `Holm ${fp(v.adjusted)}${v.basis === 'normal' ? ' of the normal approx. p' : ''} over ${v.family} ${noun}${
        v.familyName && v.familyName !== noun ? ` in family ${v.familyName}` : ''
      }`,
    );
  return parts.join(', ');
}

/** The verdict in words: "passes", "does not pass", "not testable at R = 50 (…)", "no p: …". */
export function verdictWords(v: Verdict, pass = 'passes', fail = 'does not pass'): string {
  switch (v.status) {
    case 'pass':
      return v.basis === 'normal' ? `${pass} (on the normal approximation: ${v.reason})` : pass;
    case 'fail':
      return v.basis === 'normal' ? `${fail} (on the normal approximation: ${v.reason})` : fail;
    case 'not-testable':
      return `not testable at R = ${v.R}: ${v.reason}`;
    case 'degenerate':
      return `no p: ${v.reason}`;
    default:
      return 'not tested against chance';
  }
}
