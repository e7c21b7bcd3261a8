/**
 * The registry of multiplicity families. A family is one claim's tests, adjusted together: it is
 * declared with its name, the claim it serves, its members (test ids, in order), its
 * corrections (Holm for the family-wise error, Benjamini–Hochberg for the false discovery rate)
 * and its level α, before its p-values are adjusted; every Holm or BH adjustment of lobes runs
 * through `Family.adjust`, which takes exactly one p-value per declared member (a test added
 * after the fact, or one left out, throws), and the family records how many p-values it adjusted.
 * Every output lists its families in one shape (`FamilyRecord`, `Family.record()`): swap.json's
 * `families`, cluster's metrics.json `families`, wanda's metrics.json `declaredFamilies` (the
 * capture points' per-channel BH families `channels HOOK` included), ablation.json
 * `declaredFamilies` (and each `--top` dose's `doses[].declaredFamilies`, the shuffled-label
 * family in `shuffled.declaredFamilies`, each specificity row's random-region families in
 * `paired.declaredFamilies`), and eval's summary: each accuracy table's `family` and each
 * section's `declaredFamilies`.
 *
 * A family is declared when its analysis's plan is fixed (its members follow from the settings
 * and the input, never from a result). A member that turns out not to be testable stays a
 * member, marked `notTested(member, reason)` before the adjustment (it adjusts with no p, out of
 * `size`); `adjustBy` takes the p-values by member name, so a result for a member the family did
 * not declare, or a member left without one, throws; and once adjusted, a family takes no more
 * `notTested` marks.
 *
 * Only this module calls holm and benjaminiHochberg (src/util/stats.ts) outside the tests; the
 * structure test (test/structure.test.ts) looks for calls anywhere else.
 */
import { benjaminiHochberg, holm, type MaybeP } from './stats.js';

/** How a family's p-values are adjusted. */
export type Correction = 'holm' | 'bh';

/** A family as an output lists it. */
export interface FamilyRecord {
  /** Its name, unique within the output (e.g. `classifiers`, `conditional`, `specificity`). */
  family: string;
  /** The claim the family's tests serve, in words. */
  claim: string;
  /** How many p-values were adjusted (members with a p; the largest count over its adjustments). */
  size: number;
  /** Every member, in order (members without a p stay out of `size`). */
  members: string[];
  correction: Correction[];
  alpha: number;
  /** Members declared but not tested, each with its reason (absent when every member could be tested). */
  notTested?: { member: string; reason: string }[];
}

/** What a family is declared with. */
export interface FamilyDeclaration {
  name: string;
  claim: string;
  members: readonly string[];
  /** The corrections it may be adjusted with (default: Holm only). */
  correction?: Correction | readonly Correction[];
  /** Its level (default 0.05). */
  alpha?: number;
}

/** One declared family: its members are fixed when it is declared. */
export class Family {
  readonly name: string;
  readonly claim: string;
  readonly members: readonly string[];
  readonly corrections: readonly Correction[];
  readonly alpha: number;
  private adjusted = 0;
  private used = false;
  private readonly skipped = new Map<string, string>();

  constructor(d: FamilyDeclaration) {
    if (!d.name) throw new Error('a family needs a name');
    if (new Set(d.members).size !== d.members.length)
      throw new Error(`family ${d.name}: a member is declared twice (${d.members.join(', ')})`);
    this.name = d.name;
    this.claim = d.claim;
    this.members = Object.freeze([...d.members]);
    this.corrections = Object.freeze(
      d.correction === undefined ? ['holm'] : typeof d.correction === 'string' ? [d.correction] : [...d.correction],
    );
    this.alpha = d.alpha ?? 0.05;
  }

  /**
   * The adjusted p-values of the family's tests, one p per declared member in the declared order
   * (a missing p stays null and out of the count). Throws when the count of p-values is not the
   * number of members, or the correction was not declared.
   */
  adjust(p: readonly MaybeP[], correction: Correction = this.corrections[0]!): (number | null)[] {
    if (p.length !== this.members.length)
      throw new Error(
        `family ${this.name}: declared with ${this.members.length} member${
          this.members.length === 1 ? '' : 's'
        }, adjusted over ${p.length} p-values`,
      );
    if (!this.corrections.includes(correction))
      throw new Error(`family ${this.name}: ${correction} was not declared (declared: ${this.corrections.join(', ')})`);
    this.members.forEach((m, i) => {
      const v = p[i];
      if (this.skipped.has(m) && v !== null && v !== undefined && !Number.isNaN(v))
        throw new Error(
          `family ${this.name}: member ${m} was marked not tested (${
            this.skipped.get(m)
          }) but is adjusted with p = ${v}`,
        );
    });
    this.used = true;
    this.adjusted = Math.max(this.adjusted,
      p.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).length);
    return correction === 'holm' ? holm(p) : benjaminiHochberg(p);
  }

  /**
   * The adjusted p-values of the family's tests given by member name (a Map or a record): each
   * declared member needs an entry (null: no p), and an entry for a member the family did not
   * declare throws, so that no test can join (or leave) the family once its results are in.
   */
  adjustBy(p: ReadonlyMap<string, MaybeP> | Readonly<Record<string, MaybeP>>,
    correction: Correction = this.corrections[0]!): Map<string, number | null>
  {
    const get = p instanceof Map
      ? (k: string) => (p as ReadonlyMap<string, MaybeP>).get(k)
      : (k: string) => (p as Readonly<Record<string, MaybeP>>)[k];
    const has = p instanceof Map
      ? (k: string) => (p as ReadonlyMap<string, MaybeP>).has(k)
      : (k: string) => Object.prototype.hasOwnProperty.call(p, k);
    const keys = p instanceof Map ? [...(p as ReadonlyMap<string, MaybeP>).keys()] : Object.keys(p);
    const declared = new Set(this.members);
    for (const k of keys)
      if (!declared.has(k))
        throw new Error(
          `family ${this.name}: a result for ${k}, which the family did not declare (members: ${
            this.members.join(', ')
          })`,
        );
    for (const m of this.members)
      if (!has(m))
        throw new Error(`family ${this.name}: member ${m} has no result (give it a null p, or mark it not tested)`);
    const adj = this.adjust(this.members.map(get), correction);
    return new Map(this.members.map((m, i) => [m, adj[i]!]));
  }

  /**
   * Mark a declared member as not tested, with its reason (e.g. a classifier skipped because a
   * class is empty): it stays a member, adjusts with no p and is listed in the record's
   * `notTested`. Throws for a member the family did not declare, and after the family's first
   * adjustment.
   */
  notTested(member: string, reason: string): this {
    if (!this.members.includes(member))
      throw new Error(`family ${this.name}: ${member} is not a declared member, so it cannot be marked not tested`);
    if (this.used) throw new Error(`family ${this.name}: ${member} marked not tested after the family was adjusted`);
    this.skipped.set(member, reason);
    return this;
  }

  /** The family as outputs list it (size: the p-values adjusted; 0 before any adjustment). */
  record(): FamilyRecord {
    const rec: FamilyRecord = { family: this.name, claim: this.claim, size: this.used ? this.adjusted : 0,
      members: [...this.members], correction: [...this.corrections], alpha: this.alpha };
    if (this.skipped.size)
      rec.notTested = this.members.filter((m) => this.skipped.has(m)).map((m) => ({ member: m,
        reason: this.skipped.get(m)! })
      );
    return rec;
  }
}

/** Declare a family (before its tests' p-values are adjusted). */
export function declareFamily(d: FamilyDeclaration): Family {
  return new Family(d);
}

/** The members `0`, `1`, … of a family whose tests have no names but their order. */
export function indexMembers(n: number, prefix = ''): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}
