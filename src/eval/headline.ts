/**
 * An evaluation's first lines: per task, its accuracy with the exact 95% CI against chance and
 * the scoring that produced it; a warning when one answer letter takes over LETTER_TAKEOVER of
 * the picks (then letter accuracy says more about the letter than the model); and the
 * "no mean over …" notes once each.
 */
import type { Accuracy, EvalSummary, PositionBias } from './summary-types.js';

/** Share of picks above which one letter is said to take over. */
export const LETTER_TAKEOVER = 0.9;

const pct = (x: number) => (100 * x).toFixed(1);
const ci = (c: [number, number] | null) => (c ? ` [${pct(c[0])}, ${pct(c[1])}]` : '');
const pv = (
  p: number | null | undefined,
) => (p === null || p === undefined ? '' : `, p vs chance ${p < 0.001 ? p.toExponential(1) : p.toFixed(3)}`);

/** The scoring of a summary's task in words. */
export function scoringOf(s: EvalSummary, task: 'iae' | 'mcq' | 'gae'): string {
  if (task !== 'gae' && s.cloze?.[task])
    return "cloze (acc: each option's summed log-likelihood as a continuation of the prompt)";
  return "answer letter (the letter's logit, options shuffled, majority vote)";
}

/** The letter most often picked over every prompt of these position-bias rows, and its share. */
export function topLetter(bias: PositionBias[]): { letter: string; share: number; prompts: number } | null {
  const picks = new Map<number, number>();
  let prompts = 0;
  for (const b of bias) {
    prompts += b.prompts;
    b.pickRate.forEach((r, i) => picks.set(i, (picks.get(i) ?? 0) + r * b.prompts));
  }
  if (!prompts) return null;
  let best = 0;
  for (const [i, c] of picks) if (c > (picks.get(best) ?? 0)) best = i;
  return { letter: String.fromCharCode(65 + best), share: (picks.get(best) ?? 0) / prompts, prompts };
}

/** "no mean over abilities: …; no mean over abilities (en): …" with the entries that repeat the first's count left out. */
export function omittedOnce(text: string | null | undefined): string | null {
  if (!text) return null;
  const parts = text.split('; no mean over ').map((p, i) => (i ? `no mean over ${p}` : p));
  const key = (p: string) => p.replace(/^no mean over (\S+) \([^)]*\)/, 'no mean over $1').replace(/ \(.*$/, '');
  const seen = new Set<string>();
  return parts.filter((p) => (seen.has(key(p)) ? false : (seen.add(key(p)), true))).join('; ');
}

const TITLES = { iae: 'IAE', mcq: 'Multiple choice', gae: 'GAE' } as const;

/** The evaluation's headline lines and its warnings. */
export function evalHeadline(s: EvalSummary): { headline: string[]; warnings: string[] } {
  const headline: string[] = [];
  const warnings: string[] = [];
  for (const task of ['iae', 'mcq'] as const) {
    const c = s.cloze?.[task];
    const it = s[task];
    if (c) {
      headline.push(
        `${TITLES[task]}: accuracy ${pct(c.acc.accuracy)}%${ci(c.acc.ci95)} vs chance ${
          pct(c.acc.chance)
        }% on ${c.acc.n} items (${c.acc.correct} right); scoring: ${scoringOf(s, task)}; exact (Clopper–Pearson) CI.`,
      );
    } else if (it) {
      const a: Accuracy = it.overall;
      headline.push(
        `${TITLES[task]}: accuracy ${pct(a.accuracy)}%${ci(a.ci95)} vs chance ${pct(a.chance)}% on ${a.n} items${
          pv(a.pChance)
        }; scoring: ${scoringOf(s, task)}.`,
      );
      const top = topLetter(it.positionBias);
      if (top && top.share > LETTER_TAKEOVER)
        warnings.push(
          `${TITLES[task]}: letter accuracy means little here: the model picks ${top.letter} on ${
            pct(top.share)
          }% of ${top.prompts} prompts, so its accuracy is about where the answer happens to sit.`,
        );
    }
  }
  if (s.gae) {
    const a = s.gae.overall;
    headline.push(
      `GAE: success ${pct(a.accuracy)}%${ci(a.ci95)} vs chance ${pct(a.chance)}% over ${a.n} world trees${
        pv(a.pChance)
      }; scoring: ${scoringOf(s, 'gae')} at each decision.`,
    );
    const top = topLetter(s.gae.positionBias);
    if (top && top.share > LETTER_TAKEOVER)
      warnings.push(
        `GAE: letter accuracy means little here: the model picks ${top.letter} on ${
          pct(top.share)
        }% of ${top.prompts} decisions.`,
      );
  }
  return { headline, warnings };
}
