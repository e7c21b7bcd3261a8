/**
 * The numbers docs/findings-swap.md quotes, from the outputs of bench/swap-smollm2.sh, as
 * markdown tables: per language, chance and crossChance, the words, and per point the balanced
 * accuracy of the probe for the question's and the response's aspect (with its null mean and p),
 * question − response, and (words + state) − words per label, each with its 95% CI.
 *
 *   node --import tsx bench/swap-summary.ts runs/swap > bench/swap-summary.out.md
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { SwapResult } from '../src/swap/swap.js';

const dir = process.argv[2] ?? 'runs/swap';
const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(3));
const s = (x: number) => (x >= 0 ? '+' : '−') + Math.abs(x).toFixed(3);
const ci = (d: { value: number; ci95: [number, number] | null }) =>
  `${s(d.value)} [${d.ci95 ? `${s(d.ci95[0])}, ${s(d.ci95[1])}` : '–'}]`;
const out: string[] = ['# Question/response swaps on SmolLM2-135M-Instruct: the numbers', '',
  `From \`${dir}\` (bench/swap-smollm2.sh). Balanced accuracy throughout; CIs are 95% paired-bootstrap intervals over items and fold repeats.`,
  ''];
for (const lang of ['en', 'zh']) {
  const file = path.join(dir, `${lang}-swap`, 'swap', 'swap.json');
  if (!existsSync(file)) {
    out.push(`## ${lang}`, '', `(no ${file})`, '');
    continue;
  }
  const r: SwapResult = JSON.parse(readFileSync(file, 'utf8'));
  // more points of the same run, analysed by later lobes swap --points … --out RUN/swap-NAME runs
  // with the same settings: their points join the table in layer order
  for (const extra of readdirSync(path.join(dir, `${lang}-swap`)).filter((n) => n.startsWith('swap-')).sort()) {
    const more: SwapResult = JSON.parse(readFileSync(path.join(dir, `${lang}-swap`, extra, 'swap.json'), 'utf8'));
    if (JSON.stringify(more.settings) !== JSON.stringify(r.settings))
      throw new Error(`${extra}: other settings than swap/`);
    r.points.push(...more.points);
  }
  const order = (p: SwapResult['points'][number]) => (p.layer ?? 1e9) * 2 + (p.pool === 'mean' ? 1 : 0);
  r.points.sort((a, b) => order(a) - order(b));
  const m = JSON.parse(readFileSync(path.join(dir, `${lang}-swap`, 'manifest.json'), 'utf8'));
  out.push(`## ${lang}`, '');
  out.push(
    `Run: ${m.dataset.count} texts (\`${
      m.dataset.spec.replace(/^socialeval:[^?]*/, 'socialeval:…')
    }\`, --limit ${m.dataset.limit?.limit} by ${m.dataset.limit?.by?.join(',')}); composition ${
      JSON.stringify({ seed: m.dataset.composition?.seed, responses: m.dataset.composition?.responses,
        pairsSha256: m.dataset.composition?.pairsSha256?.slice(0, 12) })
    }.`,
  );
  out.push(
    `Swapped samples analysed: ${r.n}; classes ${
      r.classes.join(', ')
    }. Probe: ${r.settings.probe.repeats} repeats × ${r.settings.probe.folds} folds, C ${
      r.settings.probe.cGrid ? 'nested' : r.settings.probe.C
    }, PCA-${r.settings.probePca} in fold; null ${r.settings.permutations} permutations per probe (smallest p ${
      f(1 / (r.settings.permutations + 1))
    }); bootstrap ${r.settings.bootstrap}.`,
    '',
  );
  out.push(
    `Chance (balanced accuracy): ${f(r.chance.question.balancedAccuracy)}. Majority rate: question's aspect ${
      f(r.chance.question.majorityRate)
    } (${r.chance.question.majorityClass}), response's ${
      f(r.chance.response.majorityRate)
    } (${r.chance.response.majorityClass}). crossChance (one label from the other alone): question's aspect ${
      f(r.crossChance.questionFromResponse.balancedAccuracy)
    }, response's ${f(r.crossChance.responseFromQuestion.balancedAccuracy)}.`,
    '',
  );
  out.push('| words | question (null, p) | response (null, p) | question − response |', '|---|---|---|---|');
  for (const w of r.words) {
    const q = w.question.balancedAccuracy;
    const re = w.response.balancedAccuracy;
    out.push(
      `| ${w.name} | ${f(q.value)} (${f(q.nullMean)}, ${f(q.p)}) | ${f(re.value)} (${f(re.nullMean)}, ${f(re.p)}) | ${
        ci(w.questionMinusResponse.balancedAccuracy)
      } |`,
    );
  }
  out.push('');
  const other = r.words.map((w) => w.name).find((n) => n !== r.incrementalWords);
  out.push(
    `| point | pool | question (null, p) | response (null, p) | question − response | ${r.incrementalWords} + state − ${r.incrementalWords}: question | … : response | state − ${r.incrementalWords}: question | … : response | state − ${other}: question | … : response |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const p of r.points) {
    const q = p.question.probe.balancedAccuracy;
    const re = p.response.probe.balancedAccuracy;
    const inc = (l: 'question' | 'response') => (p[l].incremental ? ci(p[l].incremental!.balancedAccuracy) : '–');
    const mw = (l: 'question' | 'response',
      name: string | null
        | undefined) => (name && p[l].minusWords[name] ? ci(p[l].minusWords[name].balancedAccuracy) : '–');
    out.push(
      `| ${p.point} | ${p.pool} | ${f(q.value)} (${f(q.nullMean)}, ${f(q.p)}) | ${f(re.value)} (${f(re.nullMean)}, ${
        f(re.p)
      }) | ${ci(p.questionMinusResponse.balancedAccuracy)} | ${inc('question')} | ${inc('response')} | ${
        mw('question', r.incrementalWords)
      } | ${mw('response', r.incrementalWords)} | ${mw('question', other)} | ${mw('response', other)} |`,
    );
  }
  out.push('');
  for (const n of r.notes) out.push(`Note: ${n}`, '');
}
const times = path.join(dir, 'times.tsv');
if (existsSync(times)) out.push('## Wall times', '', '```', readFileSync(times, 'utf8').trimEnd(), '```', '');
process.stdout.write(out.join('\n'));
