/**
 * The conditional tests of one `lobes swap` output (each label beyond the other: its null shuffles
 * it within the strata of the other label; src/cluster/conditional.ts), as a markdown table: per
 * point and label, the balanced accuracy, the conditional null's mean and 95% band, the
 * permutation p, z, the Holm-adjusted p of the verdict and the verdict; beside them the plain
 * null's mean and p, and with `--control` the random-weights control's numbers.
 *
 *   node --import tsx bench/swap-conditional-summary.ts RUN/swap/swap.json > bench/swap-conditional-en.out.md
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { SwapPointResult, SwapResult } from '../src/swap/swap.js';

const file = process.argv[2];
if (!file) throw new Error('usage: swap-conditional-summary.ts RUN/swap/swap.json');
const r: SwapResult = JSON.parse(readFileSync(file, 'utf8'));
const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(3));
const p = (
  x: number | null | undefined,
) => (x === null || x === undefined ? '–' : x < 0.001 ? x.toExponential(0) : x.toFixed(3));
const z = (x: number | null | undefined) => (x === null || x === undefined ? '–' : x.toFixed(1));
const plan = r.settings.conditionalPermutations;
const out = [
  '# lobes swap: the conditional tests',
  '',
  `From \`${file}\`. ${r.n} swapped samples; balanced accuracy (chance ${
    f(r.chance.question.balancedAccuracy)
  }); crossChance (descriptive) ${f(r.crossChance.questionFromResponse.balancedAccuracy)} (question's aspect) / ${
    f(r.crossChance.responseFromQuestion.balancedAccuracy)
  } (response's).`,
  `Conditional nulls: ${plan.R} permutations each (${plan.sizing}; the family of ${plan.family} needs ${plan.needed}); plain nulls: ${r.settings.permutations}. Holm over the family \`${
    r.families[0]?.family
  }\` of ${r.families[0]?.size} tests; "Holm" is the adjusted p the verdict reads (${
    plan.sizing === 'capped' ? "on z's normal approximation" : 'on the permutation p'
  }).`,
  '',
];
const row = (name: string, pt: SwapPointResult, label: 'question' | 'response') => {
  const t = pt[label].conditional;
  const m = t.balancedAccuracy;
  const plain = pt[label].probe.balancedAccuracy;
  const v = m.verdict;
  return `| ${name} | ${pt.pool} | ${label} | ${f(m.value)} | ${f(plain.nullMean)} (${p(plain.p)}) | ${
    f(m.nullMean)
  } [${f(m.nullBand?.[0])}, ${f(m.nullBand?.[1])}] | ${p(m.p)} | ${z(m.z)} | ${p(v?.adjusted)} | ${
    v?.status ?? '–'
  } | ${t.exchangeable.items} |`;
};
const header = [
  '| point | pool | label | balanced accuracy | plain null mean (p) | conditional null mean [95%] | p | z | Holm | verdict | exchangeable |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
out.push('## The run', '', ...header);
for (const pt of r.points) for (const l of ['question', 'response'] as const) out.push(row(pt.point, pt, l));
if (r.control) {
  out.push('',
    `## Its random-weights control (\`${path.basename(r.control.run)}\`, seed ${r.control.seed}; its own family of ${
      r.control.families[0]?.size
    })`, '', ...header);
  for (const pt of r.control.points) for (const l of ['question', 'response'] as const) out.push(row(pt.point, pt, l));
}
out.push('');
process.stdout.write(out.join('\n'));
