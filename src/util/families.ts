/**
 * The registry of multiplicity families. A family is one claim's tests, adjusted together: it is
 * declared with its name, the claim it serves, its members (test ids, in order), its
 * corrections (Holm for the family-wise error, Benjamini–Hochberg for the false discovery rate)
 * and its level α, before its p-values are adjusted; every Holm or BH adjustment of lobes runs
 * through `Family.adjust`, which takes exactly one p-value per declared member (a test added
 * after the fact, or one left out, throws), and the family records how many p-values it adjusted.
 * Every output lists its families in one shape (`FamilyRecord`, `Family.record()`): swap.json's
 * `families`, cluster's metrics.json `families`, wanda's metrics.json `declaredFamilies`,
 * ablation.json `declaredFamilies`. Eval's accuracy-by family is declared and used but not yet
 * written into its summary.
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

  constructor(d: FamilyDeclaration) {
    if (!d.name) throw new Error('a family needs a name');
    if (new Set(d.members).size !== d.members.length) throw new Error(`family ${d.name}: a member is declared twice (${d.members.join(', ')})`);
    this.name = d.name;
    this.claim = d.claim;
    this.members = Object.freeze([...d.members]);
    this.corrections = Object.freeze(d.correction === undefined ? ['holm'] : typeof d.correction === 'string' ? [d.correction] : [...d.correction]);
    this.alpha = d.alpha ?? 0.05;
  }

  /**
   * The adjusted p-values of the family's tests, one p per declared member in the declared order
   * (a missing p stays null and out of the count). Throws when the count of p-values is not the
   * number of members, or the correction was not declared.
   */
  adjust(p: readonly MaybeP[], correction: Correction = this.corrections[0]!): (number | null)[] {
    if (p.length !== this.members.length) throw new Error(`family ${this.name}: declared with ${this.members.length} member${this.members.length === 1 ? '' : 's'}, adjusted over ${p.length} p-values`);
    if (!this.corrections.includes(correction)) throw new Error(`family ${this.name}: ${correction} was not declared (declared: ${this.corrections.join(', ')})`);
    this.used = true;
    this.adjusted = Math.max(this.adjusted, p.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).length);
    return correction === 'holm' ? holm(p) : benjaminiHochberg(p);
  }

  /** The family as outputs list it (size: the p-values adjusted; 0 before any adjustment). */
  record(): FamilyRecord {
    return { family: this.name, claim: this.claim, size: this.used ? this.adjusted : 0, members: [...this.members], correction: [...this.corrections], alpha: this.alpha };
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
