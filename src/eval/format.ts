/**
 * The summary of an evaluation as Markdown tables (printed by `lobes eval`, pasted into
 * findings): every accuracy with its 95% CI and chance level.
 */
import type { EvalManifest } from './run.js';
import { modelName } from '../store/model-name.js';
import type { Accuracy, AccuracyTable, EvalSummary, GaeSummary, ItemSummary, PositionBias } from './summary.js';
import { formatCloze } from './summary-cloze.js';
import { evalHeadline, omittedOnce } from './headline.js';

const pct = (x: number) => (Number.isFinite(x) ? (100 * x).toFixed(1) : '—');
const ci = (
  a: Accuracy,
) => (a.ci95 ? `[${pct(a.ci95[0])}, ${pct(a.ci95[1])}]${a.ciMethod === 'bootstrap' ? ' b' : ''}` : '—');
const fp = (
  p: number | null | undefined,
) => (p === null || p === undefined ? '—' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

function row(name: string, a: Accuracy): string {
  return `| ${name} | ${a.n} | ${pct(a.accuracy)} | ${ci(a)} | ${pct(a.chance)} | ${fp(a.pChance)} | ${
    fp(a.pChanceHolm)
  } |`;
}

const HEAD = (
  what: string,
) => [`| ${what} | n | accuracy % | 95% CI | chance % | p vs chance | Holm |`, '|---|---:|---:|---:|---:|---:|---:|'];
/** What the intervals and p-values are. */
const LEGEND =
  '95% CI: Clopper–Pearson (exact) for counts, a percentile bootstrap over units where marked b. p vs chance: exact one-sided P(at least this many correct) when each unit succeeds with its own chance; Holm: adjusted within its breakdown.';

function tableLines(t: AccuracyTable): string[] {
  return t.rows.map((r) => row(`${t.by.replace(/^label:/, '')} = ${r.key}`, r));
}

function biasLines(b: PositionBias[]): string[] {
  return b.map((x) => {
    const letters = x.pickRate.map((r, i) => `${String.fromCharCode(65 + i)} ${pct(r)}`).join(', ');
    const ans = x.answerRate
      ? `; answer at: ${x.answerRate.map((r, i) => `${String.fromCharCode(65 + i)} ${pct(r)}`).join(', ')}`
      : '';
    return `- ${x.k} options (${x.prompts} prompts): picked ${letters}${ans} (uniform: ${pct(1 / x.k)} each)`;
  });
}

function items(s: ItemSummary, title: string): string[] {
  const out = [`### ${title}`, '',
    ...(s.skipped?.length
      ? [
        `${s.skipped.length} items skipped (prompt longer than --skip-longer-than): ${
          s.skipped.slice(0, 5).join(', ')
        }${s.skipped.length > 5 ? ', …' : ''}`,
        '',
      ]
      : []), ...HEAD('slice'), row('overall (every item once, voted)', s.overall)];
  if (s.macro) out.push(row('mean over abilities (run_iae.py "Overall Average")', s.macro));
  if (s.macroOmitted) out.push(`| ${omittedOnce(s.macroOmitted)} | | | | | | |`);
  for (const [l, a] of Object.entries(s.macroByLanguage)) out.push(row(`mean over abilities, ${l}`, a));
  out.push(row('single shuffles before the vote', s.unvoted));
  for (const t of s.tables) out.push(...tableLines(t));
  out.push('', 'Position bias:', ...biasLines(s.positionBias),
    `- letters' share of the next-token probability: mean ${pct(s.letterMass.mean)}%, min ${pct(s.letterMass.min)}%`,
    '');
  return out;
}

function gae(s: GaeSummary): string[] {
  const out = [
    '### GAE (goal achievement: success = ending with goal achievement 2)',
    '',
    `${s.trees} world trees, ${s.ended} walks reached an ending, ${s.stuck.length} stopped at a node without choices${
      s.stuck.length ? ` (${s.stuck.slice(0, 5).join(', ')}${s.stuck.length > 5 ? ', …' : ''})` : ''
    }${
      s.skipped?.length
        ? `, ${s.skipped.length} at a decision longer than --max-tokens (${s.skipped.slice(0, 5).join(', ')}${
          s.skipped.length > 5 ? ', …' : ''
        })`
        : ''
    }; ${s.decisions} decisions.`,
    '',
    ...HEAD('slice'),
    row('overall (every tree once)', s.overall),
    ...(s.macro ? [row('mean over world categories (run_gae.py "Overall Average")', s.macro)] : []),
    ...(s.macroOmitted ? [`| ${omittedOnce(s.macroOmitted)} | | | | | | |`] : []),
  ];
  for (const [l, a] of Object.entries(s.macroByLanguage)) out.push(row(`mean over categories, ${l}`, a));
  for (const t of s.tables) out.push(...tableLines(t));
  out.push('', 'Position bias:', ...biasLines(s.positionBias),
    `- letters' share of the next-token probability: mean ${pct(s.letterMass.mean)}%, min ${pct(s.letterMass.min)}%`,
    '');
  return out;
}

/** Markdown of a summary (with the model and settings when the manifest is given). */
export function formatSummary(s: EvalSummary, m?: EvalManifest): string {
  const out: string[] = [];
  if (m) {
    const t = m.throughput;
    out.push(
      `## ${modelName(m.model)}${
        m.model.control ? `, random-weights control (seed ${m.model.control.seed})` : ''
      }: ${m.dataset.spec}`,
      '',
      `model folder ${m.model.dir}`,
      '',
      `${m.settings.shuffles} shuffles (seed ${m.settings.seed})${
        m.settings.cot ? `, reasoning up to ${m.settings.cot} tokens` : ''
      }${m.settings.limit ? `, --limit ${m.settings.limit}` : ''}; ${t.prompts} prompts, ${t.promptTokens} tokens (${
        t.prompts ? Math.round(t.promptTokens / t.prompts) : 0
      } per prompt); wall ${(m.timings.wallMs / 1000).toFixed(0)} s.`,
      '',
    );
  }
  // First: each task's accuracy against chance and its scoring, and a letter that takes over the picks.
  const h = evalHeadline(s);
  if (h.warnings.length || h.headline.length)
    out.push(...h.warnings.map((w) => `**${w}**`), ...h.headline.map((l) => `- ${l}`), '');
  // Cloze scoring has no shuffles, letters or votes: its own table replaces the letter tables.
  if (s.cloze) out.push(...formatCloze(s.cloze));
  const letters = (s.iae && !s.cloze?.iae) || (s.mcq && !s.cloze?.mcq) || s.gae;
  if (s.iae && !s.cloze?.iae)
    out.push(...items(s.iae, 'IAE (interpersonal ability: the utterance that shows the asked ability)'));
  if (s.mcq && !s.cloze?.mcq) out.push(...items(s.mcq, 'Multiple choice'));
  if (s.gae) out.push(...gae(s.gae));
  // the p and Holm columns' legend only under tables that have them (the cloze table has neither)
  if (letters) out.push(LEGEND, '');
  return out.join('\n') + '\n';
}
