/**
 * "Ablation": per run, the `lobes ablate` results given with --ablate-dir (src/report/ablate.ts).
 * A region × label heatmap of the effect beyond the null: each cell is the label's mean change
 * of continuation log-likelihood when the region is zeroed, minus the mean change of K random
 * regions of the same size (negative: the region hurts that label more than random blocks do),
 * with the raw change, its CI, the null's band and p in the hover and in a table; the
 * specificity table (the target label's change minus the others', against the null, Holm p); and
 * on a comparison page, B − A of the two matrices.
 */
import type { AblateBaselineRow, AblateBaselinesPayload, AblatePayload, RunPayload } from '../../types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { esc, fmt, fmtCI, fmtP, wrapTitle } from '../format.js';
import { ablateDifference, excessMatrix } from '../ablate-diff.js';

/** p, marked when it is the permutation floor 1/(K+1). */
function pFloor(p: number, atFloor: boolean, a: AblatePayload): string {
  return atFloor ? fmtP(p) + ' (floor 1/(K+1), K = ' + a.random + ')' : fmtP(p);
}

/** Symmetric colour range around 0 over the matrices shown together. */
function span(ms: (number | null)[][][]): number {
  let m = 0;
  ms.forEach((z) => z.forEach((row) => row.forEach((v) => {
    if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  })));
  return m > 0 ? m : 1;
}

function heatmap(title: string, regions: string[], labels: string[], z: (number | null)[][], hover: string[][],
  zmax: number, barTitle: string): PlotlyFigure
{
  const t = wrapTitle(title, 70);
  const text = z.map((row) => row.map((v) => (v === null ? '' : fmt(v))));
  return {
    data: [{
      type: 'heatmap',
      x: labels.map(esc),
      y: regions.map(esc),
      z,
      zmin: -zmax,
      zmax,
      zmid: 0,
      // red: the ablation lowers the label's log-likelihood more than random regions do
      colorscale: [[0, '#b2182b'], [0.5, '#f7f7f7'], [1, '#2166ac']],
      text,
      texttemplate: '%{text}',
      hovertext: hover,
      hoverinfo: 'text',
      colorbar: { title: { text: barTitle, font: { size: 11 } }, len: 0.9, thickness: 14 },
    }],
    layout: {
      title: t.title,
      height: t.top + 110 + Math.max(3, regions.length) * 44,
      // margins grow to the longest tick label (automargin), and the axis titles stand off them
      margin: { t: t.top, l: 20, r: 20, b: 20 },
      xaxis: { title: { text: 'items by label', standoff: 12 }, type: 'category', automargin: true },
      yaxis: { title: { text: 'region zeroed', standoff: 12 }, type: 'category', autorange: 'reversed',
        automargin: true },
    },
  };
}

/** The items the ablation scored: each item has one label, so the first region's cells count them once. */
export function ablatedItems(a: AblatePayload): number {
  return a.cells.filter((c) => c.region === a.regions[0]).reduce((s, c) => s + c.n, 0);
}

function runFigure(run: RunPayload, a: AblatePayload, zmax: number): PlotlyFigure {
  const hover = a.regions.map((r) => a.labels.map((l) => {
    const c = a.cells.find((x) => x.region === r && x.label === l);
    if (!c) return esc(r + ' × ' + l + ': not measured');
    return esc(r + ' zeroed, ' + l + ' items (n = ' + c.n + ')') + '<br>' +
      esc('change ' + fmt(c.delta) + ' ' + a.unit + ' ' + fmtCI(c.ci) + ', before ' + fmt(c.before)) + '<br>' +
      esc('random regions: mean ' + fmt(c.nullMean) + ', 95% band ' + fmtCI(c.nullBand)) + '<br>' +
      esc(
        'beyond the null ' + fmt(c.excess) + ', p ' + pFloor(c.p, c.atFloor, a) +
          (c.pT === null ? '' : ', t-test p ' + fmtP(c.pT)),
      );
  }));
  return heatmap(
    esc(run.name) + ': change of ' + (a.unit === 'accuracy' ? 'accuracy' : 'log-likelihood') + ' on the ' +
      ablatedItems(a) + ' items ablated, beyond ' + a.random + ' random regions of the same size (' + esc(a.unit) + ')',
    a.regions,
    a.labels,
    excessMatrix(a),
    hover,
    zmax,
    'change −<br>null mean',
  );
}

function cellTable(a: AblatePayload): HTMLElement {
  const det = el('details');
  det.appendChild(el('summary', null, 'Every cell (' + a.cells.length + ')'));
  const rows: Cell[][] = a.cells.map((
    c,
  ) => [c.region, c.label, c.n, c.before, c.delta, fmtCI(c.ci), c.nullMean, fmtCI(c.nullBand), c.excess,
    pFloor(c.p, c.atFloor, a), fmtP(c.pT), fmtP(c.pTHolm)]
  );
  det.appendChild(
    table(['region', a.by, 'n', 'before', 'change', '95% CI', 'null mean', 'null 95% band', 'change − null', 'p (rank)',
      'p (t)', 'Holm p (t)'], rows, 'metrics small'),
  );
  det.appendChild(el('p', 'meta', 'Holm p (t): over the ' + a.cells.length + ' cells, in the family cells.'));
  return det;
}

/** --task iae: accuracy before and after per region × label, with the paired tests. */
function iaeTable(a: AblatePayload): HTMLElement {
  const t = a.iae!;
  const pct = (x: number) => (100 * x).toFixed(1) + '%';
  const rows: Cell[][] = t.rows.map((
    r,
  ) => [r.region, r.label, r.n, pct(r.before), pct(r.after), r.change, fmtCI(r.ci), r.lost, r.gained, fmtP(r.pMcNemar),
    r.nullMean, pFloor(r.p, r.atFloor, a), fmtP(r.pHolm)]
  );
  return table(['region', a.by, 'n', 'accuracy before', 'after', 'change', '95% CI (paired)', 'lost', 'gained',
    'McNemar p', 'null mean', 'p vs random', 'Holm p'], rows);
}

function specificityTable(a: AblatePayload): HTMLElement {
  const rows: Cell[][] = a.specificity.map((
    s,
  ) => [s.region, s.target, s.contrast, fmtCI(s.ci), s.nullMean, fmtCI(s.nullBand), pFloor(s.p, s.atFloor, a),
    fmtP(s.pHolm), fmtP(s.pT), fmtP(s.pTHolm), s.ratio ?? '—', s.nullRatio ?? '—', fmtP(s.ratioP), fmtP(s.ratioPHolm)]
  );
  return table(['region', 'target ' + a.by, 'contrast', '95% CI', 'null mean', 'null 95% band', 'p (rank)', 'Holm p',
    'p (t)', 'Holm p (t)', 'cost ratio', 'random ratio', 'ratio p (t)', 'Holm p'], rows);
}

/** The other baselines lobes ablate ran (--top, --magnitude, --shuffled, --fit-split): one table each, only those it ran. */
/** The doses' family sizes, where the summary declares them: "; Holm over 3 in family specificity at each dose" (or per dose). */
function doseSizes(doses: AblateBaselinesPayload['doses']): string {
  if (!doses.every((d) => d.family)) return '';
  const sizes = [...new Set(doses.map((d) => d.family!.size))];
  return sizes.length === 1
    ? '; Holm over ' + sizes[0] + ' in family specificity at each dose'
    : '; Holm over ' + doses.map((d) => d.family!.size + ' at top ' + fmt(d.top)).join(', ') + ' in family specificity';
}

function baselinesPart(cell: HTMLElement, b: AblateBaselinesPayload): void {
  const ratioRows = (rows: AblateBaselineRow[]): Cell[][] =>
    rows.map((r) => [r.region, r.blocks, r.ratio ?? '—', r.baseline ?? '—', fmtP(r.p), fmtP(r.pHolm)]);
  if (b.doses.length) {
    cell.appendChild(
      el('h4', null, 'Dose–response: each region at each wanda top fraction (' + b.doses.length + ' doses)'),
    );
    const rows: Cell[][] = b.doses.flatMap((d) =>
      ratioRows(d.rows).map((r) => [fmt(d.top) + (d.stored ? ' (stored)' : ''), ...r])
    );
    cell.appendChild(
      table(['top', 'region', 'blocks', 'cost ratio', "random regions' ratio", 'p (t)', 'Holm p'], rows),
    );
    cell.appendChild(
      el('p', 'meta',
        "At each dose, the region's cost ratio (its own items' mean cost over the others') against random regions of its size; a region whose specificity is real keeps its ratio above the random ones as the dose falls below saturation. Holm p: over the regions of the dose (its family specificity" +
          doseSizes(b.doses) + ').'),
    );
  }
  if (b.magnitude.length) {
    cell.appendChild(el('h4', null, 'Against the |W| region of the same size (--magnitude)'));
    cell.appendChild(
      table(['region', 'blocks', 'cost ratio', "|W| region's ratio", 'p (own items)', 'p (other items)'],
        b.magnitude.map((m) => [m.region, m.blocks, m.ratio ?? '—', m.baseline ?? '—', fmtP(m.pOwn), fmtP(m.pOthers)])),
    );
    cell.appendChild(
      el('p', 'meta',
        "The |W| region holds the blocks with the largest mean |W| (no activations), as many per matrix. p: one-sided Wilcoxon signed-rank tests, item by item, that zeroing the region costs more than zeroing the |W| region, on the region's own items and on the others."),
    );
  }
  if (b.shuffled) {
    cell.appendChild(el('h4', null, 'Against regions from shuffled labels (--shuffled ' + b.shuffled.shuffles + ')'));
    cell.appendChild(
      table(['region', 'blocks', 'cost ratio', "shuffled regions' ratio", 'rank p', 'Holm p'],
        ratioRows(b.shuffled.rows)),
    );
    cell.appendChild(
      el('p', 'meta',
        "Each region recomputed by wanda from the same rows with the labels shuffled (group sizes kept), ablated like the real one: the specificity test's proper null. rank p: the share of shuffled regions whose ratio is at least the real one's; with " +
          b.shuffled.shuffles + ' shuffles it cannot be below ' + fmt(b.shuffled.floor) +
          '. Holm p: over the regions, in the family shuffled-label-regions' + (b.shuffled.family
            ? ' (Holm over ' + b.shuffled.family.size + ' in family ' + b.shuffled.family.name + ')'
            : '') +
          '.'),
    );
  }
  if (b.fitSplit) {
    const f = b.fitSplit;
    cell.appendChild(el('h4', null, 'Regions fitted on other items (--fit-split ' + f.seed + ')'));
    cell.appendChild(
      el('p', 'meta',
        'The regions were fitted on ' + f.fit + ' items and every figure above is on the other ' + f.test +
          " (halves stratified by label). Each fitted region's overlap with the region fitted on every item: " +
          f.regions.map((r) => r.name + ' ' + fmt(r.jaccard)).join(', ') + ' (Jaccard).'),
    );
  }
}

export const ablateSection: Section = {
  title: 'Ablation',
  id: 'ablation',
  visible: (page) => page.runs.some((r) => r.ablate),
  render(page: Page, root: HTMLElement) {
    if (!page.runs.some((r) => r.ablate)) {
      root.remove();
      return;
    }
    const shown = page.runs.map((r) => (r.ablate ? excessMatrix(r.ablate) : []));
    const zmax = span(shown);
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      const a = run.ablate;
      if (!a) {
        cell.appendChild(el('p', 'missing', run.name + ': no ablation.'));
        return;
      }
      cell.appendChild(
        el('p', 'meta',
          'From ' + a.dir + ': ' + a.regions.length + ' regions (' +
            a.regions.map((r, i) => r + ' ' + a.blocks[i] + ' blocks').join(', ') + ') against the items of each ' +
            a.by + ', with ' + a.random + ' random regions of the same size as the null.'),
      );
      const id = page.figures.register(page.figureId(ri, 'ablate'), () => runFigure(run, a, zmax));
      const div = el('div', 'fig');
      cell.appendChild(div);
      page.ready.push(page.figures.draw(id, div));
      cell.appendChild(
        el('p', 'meta', 'Each cell: the mean change (after − before, ' + a.unit + ') of ' + (a.unit === 'accuracy'
          ? "whether each of the label's items is answered right"
          : "the log-likelihood of the label's items") +
          " when the region's blocks are zeroed, minus the mean change when as many random blocks are zeroed (" +
          a.random +
          ' random regions, the same block count per matrix). Red: the region hurts these items more than random blocks do. p: the share of random regions whose change is at least as extreme; with K = ' +
          a.random + ' it cannot be below 1/(K+1) = ' + fmt(a.floor) +
          ". p (t), in the table: the region's change as one more draw from the random regions' values, assumed normal (Student's t, K − 1 degrees of freedom; on the log cost where every value is a cost), which can go below that floor."),
      );
      cell.appendChild(cellTable(a));
      if (a.iae) {
        const t = a.iae;
        cell.appendChild(el('h4', null, 'Accuracy on the items (' + t.scoring + ' scoring, ' + t.metric + ')'));
        cell.appendChild(
          el('p', 'meta',
            'Before ablating: ' + t.chance.correct + '/' + t.chance.n + ' right (' + fmt(t.chance.accuracy) +
              ', chance ' + fmt(t.chance.chance) + ', exact one-sided p ' + fmtP(t.chance.p) + ')' +
              (t.skipped ? '; ' + t.skipped + ' items too long, left out' : '') +
              '. lost: items right before and wrong after; gained: the reverse; McNemar p: exact, two-sided; p vs random: the share of random regions that cost at least as much accuracy; Holm p: over the regions within a label, in the family iae LABEL.'),
        );
        cell.appendChild(iaeTable(a));
      }
      cell.appendChild(
        el('h4', null, "Specificity: does zeroing a region hurt its own label's items more than the others'?"),
      );
      cell.appendChild(specificityTable(a));
      if (a.baselines) baselinesPart(cell, a.baselines);
      cell.appendChild(
        el('p', 'meta',
          "contrast: the target label's mean change minus the other labels' (" + a.unit +
            "; negative: the target is hurt more), with its 95% CI; the null is the same contrast for the random regions; Holm p: adjusted over the rows of this table, in the family specificity-rank; p (t): the t test against the random regions' values, its Holm p (and the ratio's) in the family specificity. The contrast grows with the region's overall damage, so read specificity from the cost ratio: the target's mean cost over the others', against the random regions' ratios (their geometric mean; p by the t test on the logs). A dash: no ratio, because a change is not a cost."),
      );
    });
    const [ra, rb] = page.runs;
    if (page.compare && ra?.ablate && rb?.ablate) {
      const d = ablateDifference(ra.ablate, rb.ablate);
      if (!d) {
        root.appendChild(
          el('p', 'meta', 'The two ablations share no region and label, so they have no difference to show.'),
        );
        return;
      }
      const dmax = span([d.z]);
      const hover = d.regions.map((r, i) =>
        d.labels.map((l, j) => (d.z[i]![j] === null
          ? esc(r + ' × ' + l + ': not in both')
          : esc(r + ' × ' + l + ': B − A = ' + fmt(d.z[i]![j]!)))
        )
      );
      const id = page.figures.register('ablate-difference', () =>
        heatmap(
          'B − A: ' + esc(rb.name) + ' minus ' + esc(ra.name) + ', change beyond the null (' + esc(ra.ablate!.unit) +
            ')',
          d.regions,
          d.labels,
          d.z,
          hover,
          dmax,
          'B − A',
        ));
      const div = el('div', 'fig');
      root.appendChild(div);
      page.ready.push(page.figures.draw(id, div));
    }
  },
};
