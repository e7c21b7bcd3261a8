/**
 * "Evaluation": per run, the benchmark results of `lobes eval` (SocialEval IAE / GAE, or any
 * multiple-choice items): every accuracy with its 95% CI and its chance level, the position
 * bias, a figure of accuracy by aspect / world category against chance, and the paper's
 * published rows as clearly labelled references (never as this model's numbers).
 */
import type { EvalPayload, RunPayload } from '../../types.js';
import type { Accuracy, AccuracyTable, ClozeMetric, ClozeSummary, GaeSummary, ItemSummary,
  PositionBias } from '../../../eval/summary-types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { esc, wrapTitle } from '../format.js';
import { omittedOnce } from '../../../eval/headline.js';

/** A share as a percent with one decimal (text, so every cell shows the same precision). */
const pct = (x: number | null | undefined): Cell => (typeof x === 'number' && isFinite(x) ? (x * 100).toFixed(1) : '—');
const ci = (
  a: Accuracy,
): string => (a.ci95
  ? '[' + (a.ci95[0] * 100).toFixed(1) + ', ' + (a.ci95[1] * 100).toFixed(1) + ']' +
    (a.ciMethod === 'bootstrap' ? ' b' : '')
  : '—');
const pv = (
  p: number | null | undefined,
): string => (p === null || p === undefined ? '—' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));
const HEAD = ['slice', 'n', 'accuracy %', '95% CI', 'chance %', 'p vs chance', 'Holm'];
const LEGEND =
  '95% CI: Clopper–Pearson (exact) for counts; b: a percentile bootstrap over units (means over groups, single shuffles). p vs chance: exact one-sided P(at least this many correct) when each item or tree succeeds with its own chance; Holm: adjusted within its table.';

function accRow(name: string, a: Accuracy): Cell[] {
  return [name, a.n, pct(a.accuracy), ci(a), pct(a.chance), pv(a.pChance), pv(a.pChanceHolm)];
}

/** The family a table's Holm p was adjusted in, where the summary declares it: " (Holm over 3 in family accuracy by aspect)". */
function familyNote(t: AccuracyTable): string {
  return t.family ? ' (Holm over ' + t.family.size + ' in family ' + t.family.family + ')' : '';
}

function tableRows(t: AccuracyTable): Cell[][] {
  return t.rows.map((r) => accRow(r.key, r));
}

function biasTable(b: PositionBias[]): HTMLTableElement {
  const k = Math.max(...b.map((x) => x.k));
  const letters = Array.from({ length: k }, (_, i) => String.fromCharCode(65 + i));
  return table(
    ['options', 'prompts', ...letters.map((l) => 'picked ' + l + ' %'),
      ...(b.some((x) => x.answerRate) ? letters.map((l) => 'answer at ' + l + ' %') : [])],
    b.map((
      x,
    ) => [String(x.k), x.prompts, ...letters.map((_, i) => (i < x.k ? pct(x.pickRate[i]) : null)),
      ...(x.answerRate ? letters.map((_, i) => (i < x.k ? pct(x.answerRate![i]) : null)) : [])]
    ),
    'metrics small',
  );
}

function itemTables(s: ItemSummary, cell: HTMLElement, title: string): void {
  cell.appendChild(el('h4', null, title + ' (' + s.items + ' items)'));
  if (s.skipped && s.skipped.length)
    cell.appendChild(
      el('p', 'meta',
        s.skipped.length + ' items were not scored: their prompt is longer than --max-tokens (' +
          s.skipped.slice(0, 5).join(', ') + (s.skipped.length > 5 ? ', …' : '') + ').'),
    );
  const rows: Cell[][] = [accRow('overall (voted)', s.overall)];
  if (s.macro) rows.push(accRow('mean over abilities', s.macro));
  Object.keys(s.macroByLanguage).forEach((l) => rows.push(accRow('mean over abilities, ' + l, s.macroByLanguage[l]!)));
  rows.push(accRow('single shuffles, before the vote', s.unvoted));
  cell.appendChild(table(HEAD, rows));
  if (s.macroOmitted) cell.appendChild(el('p', 'meta', omittedOnce(s.macroOmitted) + '.'));
  cell.appendChild(el('p', 'meta', LEGEND));
  s.tables.forEach((t) => {
    if (t.by === 'ability') {
      const det = el('details');
      det.appendChild(
        el('summary', null,
          'By ability (' + t.rows.length + '; composite items count toward each of their abilities)' + familyNote(t)),
      );
      det.appendChild(table(HEAD, tableRows(t), 'metrics small'));
      cell.appendChild(det);
    } else {
      cell.appendChild(el('p', 'meta', 'By ' + t.by.replace(/^label:/, '') + familyNote(t)));
      cell.appendChild(table(HEAD, tableRows(t), 'metrics small'));
    }
  });
  cell.appendChild(
    el('p', 'meta',
      'Position bias: how often each letter slot is picked, and how often it holds the answer (uniform by shuffling).'),
  );
  cell.appendChild(biasTable(s.positionBias));
  cell.appendChild(
    el('p', 'meta',
      "The letters' share of the next-token probability: mean " + (s.letterMass.mean * 100).toFixed(1) + '%, lowest ' +
        (s.letterMass.min * 100).toFixed(1) + '%.'),
  );
}

function gaeTables(s: GaeSummary, cell: HTMLElement): void {
  cell.appendChild(
    el('h4', null, 'GAE: goal achievement (' + s.trees + ' world trees, ' + s.decisions + ' decisions)'),
  );
  const rows: Cell[][] = [accRow('overall (every tree once)', s.overall)];
  if (s.macro) rows.push(accRow('mean over world categories', s.macro));
  Object.keys(s.macroByLanguage).forEach((l) => rows.push(accRow('mean over categories, ' + l, s.macroByLanguage[l]!)));
  cell.appendChild(table(HEAD, rows));
  if (s.macroOmitted) cell.appendChild(el('p', 'meta', omittedOnce(s.macroOmitted) + '.'));
  s.tables.forEach((t) => {
    cell.appendChild(el('p', 'meta', 'By ' + t.by + familyNote(t)));
    cell.appendChild(table(HEAD, tableRows(t), 'metrics small'));
  });
  cell.appendChild(
    el('p', 'meta',
      'Success: the walk ends at an ending whose goal achievement is 2. ' + s.ended + ' walks reached an ending' +
        (s.stuck.length
          ? '; ' + s.stuck.length + ' stopped at a node without choices and are left out (' + s.stuck.join(', ') + ')'
          : '') +
        (s.skipped && s.skipped.length
          ? '; ' + s.skipped.length + ' stopped at a decision longer than --max-tokens and are left out (' +
            s.skipped.join(', ') + ')'
          : '') +
        '. Chance: the probability that random choices reach a successful ending.'),
  );
  cell.appendChild(biasTable(s.positionBias));
}

const CLOZE_TITLES = { iae: 'IAE, cloze scoring', mcq: 'Multiple choice, cloze scoring' } as const;

/** The cloze metrics (--scoring cloze): each with its exact interval and chance, per task. */
function clozeTables(c: ClozeSummary, cell: HTMLElement): void {
  const row = (name: string,
    m: ClozeMetric): Cell[] => [name, m.n, m.correct, pct(m.accuracy),
    m.ci95 ? '[' + (m.ci95[0] * 100).toFixed(1) + ', ' + (m.ci95[1] * 100).toFixed(1) + ']' : '—', pct(m.chance)];
  (['iae', 'mcq'] as const).forEach((task) => {
    const t = c[task];
    if (!t) return;
    cell.appendChild(el('h4', null, CLOZE_TITLES[task] + ' (' + t.items + ' items)'));
    const rows: Cell[][] = [row('acc (log-likelihood)', t.acc), row('acc_norm (per character)', t.acc_norm),
      row('acc_bytes (per UTF-8 byte)', t.acc_bytes)];
    if (t.acc_mutual_info) rows.push(row('acc_mutual_info', t.acc_mutual_info));
    cell.appendChild(table(['metric', 'n', 'correct', 'accuracy %', '95% CI', 'chance %'], rows, 'metrics cloze'));
    cell.appendChild(
      el('p', 'meta',
        "Cloze scoring, as lm-evaluation-harness scores multiple choice: every option's text is scored as a continuation of the prompt and the most likely option is the answer. acc: the highest summed log-likelihood; acc_norm: divided by the option's length in characters; acc_bytes: by its length in UTF-8 bytes" +
          (t.acc_mutual_info ? "; acc_mutual_info: minus the option's log-likelihood without the question" : '') +
          '. 95% CI: Clopper–Pearson (exact). Chance: the mean of 1/(number of options) over the items. The correct option is the greedy continuation for ' +
          pct(t.exactMatch) + '% of the items; options are ' + t.meanTokens.toFixed(1) + ' tokens long on average.'),
    );
  });
}

function referenceTable(ev: EvalPayload, cell: HTMLElement): void {
  const wanted = new Set<string>();
  if (ev.summary.iae) wanted.add('iae');
  if (ev.summary.gae) wanted.add('gae');
  const rows = ev.reference.rows.filter((r) => wanted.has(r.task));
  if (!rows.length) return;
  const det = el('details', 'reference');
  det.appendChild(el('summary', null, 'Reference: published results (not measured here)'));
  det.appendChild(
    el('p', 'meta',
      ev.reference.source + '. ' + rows[0]!.setting +
        ". lobes scores the answer letter's logit of a local model, so these rows frame the numbers above; they are not the same measurement. The paper's figures are item-weighted (every item or tree once) per language, so this run's row is its per-language accuracy, with its Clopper–Pearson interval."),
  );
  // This run's matching statistic: the item-weighted accuracy per language.
  const lang = (task: string, l: string): string => {
    const sum = task === 'iae' ? ev.summary.iae : ev.summary.gae;
    const r = sum && sum.tables.find((t) => t.by === 'language')?.rows.find((x) => x.key === l);
    return r ? pct(r.accuracy) + ' ' + ci(r) : '—';
  };
  const body: Cell[][] = rows.map((
    r,
  ) => [r.model, r.task === 'iae' ? 'IAE, item-weighted' : 'GAE, every tree once', r.zh, r.en]);
  for (const t of [...wanted].sort())
    body.push(['this run (' + ev.model + ')', t === 'iae' ? 'IAE, item-weighted' : 'GAE, every tree once',
      lang(t, 'zh'), lang(t, 'en')]);
  det.appendChild(table(['model', 'task', 'zh %', 'en %'], body, 'metrics small'));
  cell.appendChild(det);
}

/** Accuracy with its CI per aspect (IAE) and per world category (GAE), chance as a marker. */
function accuracyFigure(run: RunPayload, ev: EvalPayload): PlotlyFigure | null {
  const parts: { t: AccuracyTable; name: string }[] = [];
  const asp = ev.summary.iae && ev.summary.iae.tables.find((t) => t.by === 'aspect');
  if (asp) parts.push({ t: asp, name: 'IAE' });
  const cat = ev.summary.gae && ev.summary.gae.tables.find((t) => t.by === 'category');
  if (cat) parts.push({ t: cat, name: 'GAE' });
  if (!parts.length) return null;
  const title = wrapTitle(esc(run.name) + ': accuracy with 95% CI, and chance', 52);
  const data: PlotlyTrace[] = [];
  parts.forEach(({ t, name }) => {
    const x = t.rows.map((r) => esc(name + ': ' + r.key));
    data.push({
      type: 'bar',
      name: esc(name + ' accuracy'),
      x,
      y: t.rows.map((r) => r.accuracy),
      error_y: { type: 'data', symmetric: false, array: t.rows.map((r) => (r.ci95 ? r.ci95[1] - r.accuracy : 0)),
        arrayminus: t.rows.map((r) => (r.ci95 ? r.accuracy - r.ci95[0] : 0)) },
    });
    data.push({ type: 'scatter', mode: 'markers', name: esc(name + ' chance'), x, y: t.rows.map((r) => r.chance),
      marker: { symbol: 'line-ew-open', size: 28, color: '#555' } });
  });
  return {
    data,
    layout: { title: title.title, yaxis: { title: { text: 'accuracy' }, range: [0, 1] }, height: 360 + title.top,
      margin: { t: title.top, b: 120 }, barmode: 'group' },
  };
}

export const evalSection: Section = {
  title: 'Evaluation',
  id: 'evaluation',
  render(page: Page, root: HTMLElement) {
    // Pages without an evaluation do not show the section at all.
    if (!page.runs.some((r) => r.eval)) {
      root.remove();
      return;
    }
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      const ev = run.eval;
      if (!ev) {
        cell.appendChild(el('p', 'missing', run.name + ': no evaluation.'));
        return;
      }
      (ev.warnings || []).forEach((w) => cell.appendChild(el('p', 'warning letter-bias', w)));
      if (ev.headline && ev.headline.length) {
        const box = el('div', 'summary eval-headline');
        ev.headline.forEach((h) => box.appendChild(el('p', null, h)));
        cell.appendChild(box);
      }
      cell.appendChild(el('p', 'meta', ev.model + ' on ' + ev.dataset + ': ' + ev.settings + ' (' + ev.dir + ').'));
      const fig = accuracyFigure(run, ev);
      if (fig) {
        const id = page.figures.register(page.figureId(ri, 'eval-accuracy'), () => fig);
        const div = el('div', 'fig');
        cell.appendChild(div);
        page.ready.push(page.figures.draw(id, div));
      }
      if (ev.summary.cloze) clozeTables(ev.summary.cloze, cell);
      // cloze scoring has no letters, shuffles or votes: its table replaces the letter tables of its task
      const cz = ev.summary.cloze;
      if (ev.summary.iae && !(cz && cz.iae)) itemTables(ev.summary.iae, cell, 'IAE: interpersonal abilities');
      if (ev.summary.mcq && !(cz && cz.mcq)) itemTables(ev.summary.mcq, cell, 'Multiple choice');
      if (ev.summary.gae) gaeTables(ev.summary.gae, cell);
      referenceTable(ev, cell);
    });
  },
};
