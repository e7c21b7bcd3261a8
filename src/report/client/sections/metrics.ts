/**
 * "Metrics": on a comparison page the run-against-run table first (detail rows folded away),
 * then per run the separation metrics (cluster/metrics.json) and the region metrics (wanda/metrics.json).
 */
import type { ComparisonRow, RunPayload } from '../../types.js';
import type { ClassifierMetrics, ClusterMetrics, DifferenceCI, MetricWithCI } from '../../../cluster/types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { esc, fmt, fmtP, fmtCI, fmtPFloor, fmtTest, wrapTitle, wrapWords } from '../format.js';

function comparisonTables(page: Page, root: HTMLElement): void {
  const cmp = page.data.comparison;
  if (!cmp) return;
  const runs = page.runs;
  root.appendChild(el('h3', null, runs[1]!.name + ' against ' + runs[0]!.name));
  if (cmp.order) root.appendChild(el('p', 'meta', cmp.order));
  const head = ['section', 'metric', 'A', 'B', cmp.diffLabel || 'B − A', '95% CI of difference', 'ahead', 'note'];
  const fmtRow = (
    r: ComparisonRow,
  ): Cell[] => [r.section, r.metric, r.a, r.b, r.diff, r.ci ? fmtCI(r.ci) : '—', r.ahead, r.note || ''];
  const rows = cmp.rows;
  root.appendChild(table(head, rows.filter((r) => !r.detail).map(fmtRow), 'metrics compare'));
  const parts: [string, (r: ComparisonRow) => boolean][] = [
    ['Per class', (r) => r.section.indexOf('separation') === 0],
    ['Per pair of groups', (r) => r.section.indexOf('separation') !== 0 && r.section.indexOf('evaluation') !== 0],
    ['Evaluation by slice', (r) => r.section.indexOf('evaluation') === 0],
  ];
  parts.forEach(([title, inPart]) => {
    const detail = rows.filter((r) => r.detail && inPart(r));
    if (!detail.length) return;
    const det = el('details');
    det.appendChild(el('summary', null, title + ' (' + detail.length + ' rows)'));
    det.appendChild(table(head, detail.map(fmtRow), 'metrics compare'));
    root.appendChild(det);
  });
  cmp.notes.forEach((n) => root.appendChild(el('p', 'meta', n)));
}

/** "0.452 [0.43, 0.47]": a value with its CI. */
function withCI(m: MetricWithCI | null | undefined): string {
  return m ? fmt(m.value) + (m.ci95 ? ' ' + fmtCI(m.ci95) : '') : '—';
}

/** "0.201 [0.18, 0.22]": a null's mean and 95% band. */
function nullOf(m: MetricWithCI | null | undefined): string {
  return m && m.nullMean !== null && m.nullMean !== undefined
    ? fmt(m.nullMean) + (m.nullBand ? ' ' + fmtCI(m.nullBand) : '')
    : '—';
}

/** Every classifier of a run (kNN and probe per space, then the token baselines, the controls and the incremental probes), in display order. */
export function classifiers(cm: ClusterMetrics): { name: string; c: ClassifierMetrics }[] {
  const out: { name: string; c: ClassifierMetrics }[] = [];
  cm.spaces.forEach((s) => {
    if (s.knn) out.push({ name: 'kNN, ' + s.space, c: s.knn });
    if (s.probe)
      out.push({ name: 'probe, ' + s.space + (s.probeDims ? ' (' + s.probeDims + ' dims)' : ''), c: s.probe });
  });
  (cm.baselines || []).forEach((b) =>
    out.push({ name: 'tokens alone: ' + b.name + ' probe (' + b.probeDims + ' dims)', c: b.probe })
  );
  (cm.controls || []).forEach((b) =>
    out.push({ name: 'control: ' + b.name + ' probe (' + b.probeDims + " dims; not in the verdict's family)",
      c: b.probe })
  );
  (cm.incremental || []).forEach((b) =>
    out.push({
      name: (b.words === 'length' ? 'length + representation: ' : 'tokens + representation: ') + b.words + ' probe (' +
        b.probeDims + ' dims)',
      c: b.probe,
    })
  );
  return out;
}

/** "+0.031 [0.01, 0.05]": a paired difference with its CI. */
function diffCI(d: DifferenceCI): string {
  return (d.value >= 0 ? '+' : '') + fmt(d.value) + (d.ci95 ? ' ' + fmtCI(d.ci95) : '');
}

/** The paired differences of probes (representation − words, incremental, layer to layer) and how the probe was cross-validated. */
function probeComparisons(cm: ClusterMetrics, cell: HTMLElement): void {
  const cs = cm.comparisons || [];
  if (cs.length) {
    const kind = { 'model-vs-words': 'representation − words', incremental: '(words + representation) − words',
      layers: 'layer − previous layer' };
    cell.appendChild(
      table(['paired difference', 'probes', 'balanced accuracy Δ [95% CI]', 'p', 'macro-F1 Δ [95% CI]', 'p',
        'accuracy Δ [95% CI]', 'p'],
        cs.map((
          c,
        ): Cell[] => [kind[c.kind], c.a + ' − ' + c.b, diffCI(c.balancedAccuracy), fmtP(c.balancedAccuracy.p),
          diffCI(c.macroF1), fmtP(c.macroF1.p), diffCI(c.accuracy), fmtP(c.accuracy.p)]
        )),
    );
    cell.appendChild(
      el('p', 'meta',
        'Paired bootstrap over the ' + cs[0]!.n +
          ' items and the CV repeats: both probes scored on the same resampled items and the same folds (p two-sided, from the bootstrap).'),
    );
  }
  const probe = cm.spaces.map((s) => s.probe).find((p) => p && p.cv);
  const cv = probe && probe.cv;
  if (cv) {
    const cs2 = cv.chosenC.flat();
    const counts = [...new Set(cs2)].sort((a, b) => a - b).map((c) =>
      'C = ' + c + ' in ' + cs2.filter((v) => v === c).length
    );
    cell.appendChild(
      el('p', 'meta',
        'Probe: stratified ' + cv.folds + '-fold CV repeated ' + cv.repeats +
          ' times (scores are means over repeats, CIs resample items and repeats)' +
          (cv.pca
            ? ', PCA-' + cv.pca + ' and standardization fitted inside each training fold'
            : ', standardization fitted inside each training fold') +
          (cv.cMethod === 'nested'
            ? '; C chosen by nested CV over ' + (cv.cGrid || []).join(', ') + ' (representation, original space: ' +
              counts.join(', ') + ' of ' + cs2.length + ' folds)'
            : '; C = ' + cs2[0]) +
          (cv.classWeight ? '; class weights ' + cv.classWeight : '') + '.'),
    );
  }
}

function clusterTables(run: RunPayload, cell: HTMLElement): void {
  const cm = run.cluster && run.cluster.metrics;
  if (!cm) {
    cell.appendChild(el('p', 'missing', 'No cluster metrics.'));
    return;
  }
  cell.appendChild(
    el('h4', null, 'Separation of ' + cm.classes.length + ' classes (' + cm.n + ' points, d = ' + cm.dim + ')'),
  );
  const ch = cm.chance;
  if (ch) {
    cell.appendChild(
      el('p', 'meta',
        'Chance: balanced accuracy ' + fmt(ch.balancedAccuracy) +
          ' (1/C for any predictor that ignores the input); always answering "' + ch.majorityClass +
          '" gets accuracy ' + fmt(ch.majorityRate) + '. Class sizes: ' +
          cm.classes.map((c, i) => c + ' ' + ch.counts[i]).join(', ') + '.'),
    );
  }
  const cls = classifiers(cm);
  if (cls.length) {
    cell.appendChild(
      table(['classifier', 'balanced accuracy [95% CI]', 'null mean [95% band]', 'p', 'macro-F1 [95% CI]',
        'null mean [95% band]', 'p', 'accuracy [95% CI]', 'null mean [95% band]', 'p'],
        cls.map(({ name, c }): Cell[] => [
          name,
          withCI(c.balancedAccuracy),
          nullOf(c.balancedAccuracy),
          fmtTest(c.balancedAccuracy),
          withCI(c.macroF1),
          nullOf(c.macroF1),
          fmtTest(c.macroF1),
          withCI(c.accuracy),
          nullOf(c.accuracy),
          fmtTest(c.accuracy),
        ])),
    );
  }
  probeComparisons(cm, cell);
  cell.appendChild(
    table(['space', 'silhouette [95% CI]', 'null mean [95% band]', 'p', 'Davies–Bouldin'],
      cm.spaces.map((
        s,
      ): Cell[] => [s.space, withCI(s.silhouette), nullOf(s.silhouette), fmtTest(s.silhouette),
        s.daviesBouldin.value]
      )),
  );
  cell.appendChild(
    el('p', 'meta',
      'Null: the same statistic on label permutations (p one-sided, +1 corrected). Davies–Bouldin has no null and no CI: read it only alongside the others. ' +
        (cm.pcaDims && cm.pcaDims < cm.dim ? 'PCA explained variance ' + fmt(cm.pcaExplainedVariance) + '; ' : '') +
        't-SNE KL divergence ' + fmt(cm.klDivergence) + '.'),
  );
  (cm.baselines || []).forEach((b) =>
    cell.appendChild(el('p', 'meta', 'Tokens alone, ' + b.name + ': ' + b.description + '.'))
  );
  (cm.controls || []).forEach((b) =>
    cell.appendChild(el('p', 'meta', 'Control, ' + b.name + ': ' + b.description + '.'))
  );
  (cm.notes || []).forEach((n) => cell.appendChild(el('p', 'meta', 'Note: ' + n)));
  cm.spaces.forEach((s) => {
    if (!s.perClass || !s.perClass.length) return;
    const det = el('details');
    det.appendChild(el('summary', null, 'Per class, ' + s.space));
    const probe = s.perClass.some((c) => c.probeRecall !== undefined);
    det.appendChild(
      table(['class', 'n', 'silhouette', 'kNN recall'].concat(probe ? ['probe recall'] : []),
        s.perClass.map((c): Cell[] => {
          const r: Cell[] = [c.label, c.n, c.silhouette, c.knnRecall];
          if (probe) r.push(c.probeRecall === undefined ? null : c.probeRecall);
          return r;
        }), 'metrics small'),
    );
    if (s.confusion && s.confusion.length) {
      det.appendChild(el('p', 'meta', 'kNN confusion (rows: true class, columns: predicted, in the order above)'));
      det.appendChild(
        table([''].concat(cm.classes), s.confusion.map((row, i): Cell[] => [cm.classes[i]!, ...row]), 'metrics small'),
      );
    }
    if (s.probe && s.probe.confusion.length) {
      det.appendChild(el('p', 'meta', 'Probe confusion (out-of-fold predictions)'));
      det.appendChild(
        table([''].concat(cm.classes), s.probe.confusion.map((row, i): Cell[] => [cm.classes[i]!, ...row]),
          'metrics small'),
      );
    }
    cell.appendChild(det);
  });
}

/** Colours of run 1 and run 2 in the page's figures. */
export const RUN_COLOURS = ['#1f77b4', '#d62728'];

/**
 * Balanced accuracy of every classifier of the page's runs: the value with its bootstrap CI, the
 * permutation null's 95% band (a floating bar from its low to its high end) and mean, and the
 * chance level 1/C (dashed line). One category per classifier; on a comparison page the runs sit
 * side by side inside it (run 1 left, run 2 right), so each classifier's pair reads at a glance.
 */
export function separationFigure(page: Page): PlotlyFigure | null {
  const data: PlotlyTrace[] = [];
  let chance: number | null = null;
  // Classifier names of every run, in order of first appearance: one category each.
  const names: string[] = [];
  const perRun = page.runs.map((run) => {
    const cm = run.cluster && run.cluster.metrics;
    const cls = cm ? classifiers(cm) : [];
    cls.forEach((c) => {
      if (names.indexOf(c.name) < 0) names.push(c.name);
    });
    return { run, cm, cls };
  });
  const R = page.runs.length;
  const slot = 0.8 / R;
  perRun.forEach(({ run, cm, cls }, ri) => {
    if (!cm || !cls.length) return;
    chance = cm.chance ? cm.chance.balancedAccuracy : 1 / cm.classes.length;
    const pre = page.compare ? esc(run.name) + ': ' : '';
    const x = cls.map((c) => names.indexOf(c.name) + (ri - (R - 1) / 2) * slot);
    const text = cls.map((c) => pre + esc(c.name));
    const band = cls.map((c) => c.c.balancedAccuracy.nullBand || null);
    data.push({
      type: 'bar',
      x,
      base: band.map((b) => (b ? b[0] : null)),
      y: band.map((b) => (b ? b[1] - b[0] : null)),
      width: slot * 0.9,
      marker: { color: 'rgba(120,120,120,0.30)' },
      name: 'null 95% band',
      legendgroup: 'band',
      showlegend: ri === 0,
      text,
      hovertemplate: '%{text}<br>null 95% band from %{base:.3f}<extra></extra>',
      textposition: 'none',
    });
    data.push({
      type: 'scatter',
      mode: 'markers',
      x,
      y: cls.map((c) => c.c.balancedAccuracy.nullMean ?? null),
      text,
      hovertemplate: '%{text}<br>null mean %{y:.3f}<extra></extra>',
      marker: { symbol: 'line-ew-open', size: Math.max(8, Math.min(18, 40 * slot)), color: '#555', line: { width: 2 } },
      name: 'null mean',
      legendgroup: 'mean',
      showlegend: ri === 0,
    });
    data.push({
      type: 'scatter',
      mode: 'markers',
      x,
      y: cls.map((c) => c.c.balancedAccuracy.value),
      text,
      hovertemplate: '%{text}<br>balanced accuracy %{y:.3f}<extra></extra>',
      name: page.compare ? esc(run.tag || run.name) : 'balanced accuracy',
      marker: { size: 10, color: RUN_COLOURS[ri % RUN_COLOURS.length] },
      error_y: {
        type: 'data',
        symmetric: false,
        array: cls.map((
          c,
        ) => (c.c.balancedAccuracy.ci95 ? c.c.balancedAccuracy.ci95[1] - c.c.balancedAccuracy.value : 0)),
        arrayminus: cls.map((
          c,
        ) => (c.c.balancedAccuracy.ci95 ? c.c.balancedAccuracy.value - c.c.balancedAccuracy.ci95[0] : 0)),
      },
    });
  });
  if (!data.length) return null;
  const title = wrapTitle(
    'Balanced accuracy against chance and the permutation null' + (page.compare
      ? ' (' + page.runs.map((r) => esc(r.tag || '') + ' = ' + esc(r.name.replace(/^[AB]: /, ''))).join('; ') + ')'
      : ''),
    110,
  );
  const shapes = chance === null
    ? []
    : [{ type: 'line', xref: 'paper', x0: 0, x1: 1, y0: chance, y1: chance,
      line: { dash: 'dash', color: '#444', width: 1.5 } }];
  // the chance label sits in the right margin, beside its line, where no marker or band can be
  const annotations = chance === null
    ? []
    : [{ xref: 'paper', x: 1, xshift: 4, y: chance, text: 'chance<br>' + fmt(chance), showarrow: false, xanchor: 'left',
      yanchor: 'middle', align: 'left', font: { size: 11, color: '#444' } }];
  // the axis spans the data (values, CIs, null bands and means, chance) with a margin, not 0–1:
  // balanced accuracies of 0.17–0.27 would be a sliver of a 0–1 axis
  const ys: number[] = chance === null ? [] : [chance];
  perRun.forEach(({ cls }) => cls.forEach((c) => {
    const b = c.c.balancedAccuracy;
    [b.value, b.nullMean, ...(b.ci95 || []), ...(b.nullBand || [])].forEach((v) => {
      if (typeof v === 'number' && isFinite(v)) ys.push(v);
    });
  }));
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const pad = Math.max(0.02, 0.08 * (hi - lo));
  // tick labels in lines of at most 18 characters, level: rotated ones ran off the figure's left edge
  const ticktext = names.map((n) => wrapWords(esc(n), 18));
  return {
    data,
    layout: {
      title: title.title,
      yaxis: { title: { text: 'balanced accuracy' }, range: [Math.max(0, lo - pad), Math.min(1, hi + pad)] },
      xaxis: { automargin: true, tickangle: 0, tickmode: 'array', tickvals: names.map((_, i) => i), ticktext,
        range: [-0.5, names.length - 0.5], zeroline: false, showgrid: false },
      barmode: 'overlay',
      shapes,
      annotations,
      height: 430 + title.top,
      margin: { t: title.top + 10, r: 70 },
    },
  };
}

function wandaTables(run: RunPayload, cell: HTMLElement): void {
  const w = run.wanda;
  const wm = w && w.metrics;
  if (!wm) {
    if (w) cell.appendChild(el('p', 'missing', 'wanda/metrics.json is missing.'));
    return;
  }
  const floor = wm.pFloor ?? (w.settings.permutations ? 1 / (w.settings.permutations + 1) : null);
  const pf = (p: number | null | undefined) => fmtPFloor(p, floor);
  const ratio = (x: number | null | undefined) => (x === null || x === undefined ? '—' : fmt(x) + '×');
  cell.appendChild(el('h4', null, 'Neuron regions by ' + w.by));
  cell.appendChild(
    table(['group', 'n', 'region size (blocks)', 'density', '× random', 'p vs random', 'Holm', 'p vs shuffled labels',
      'Holm', 'components'],
      wm.groups.map((
        g,
      ) => [g.group, g.n, g.regionSize, g.density, ratio(g.placement?.densityRatio), pf(g.placement?.density.p),
        fmtP(g.placement?.density.pHolm), pf(g.densityNull?.p), fmtP(g.densityNull?.pHolm), g.components]
      ), 'metrics small'),
  );
  cell.appendChild(
    table(['A', 'B', 'Jaccard', 'p (lower)', 'Holm', 'BH', '|A∖B|', '|B∖A|', 'density A∖B', '× random',
      'p vs random (Holm)', 'density B∖A', '× random', 'p vs random (Holm)'],
      wm.pairs.map((m) => [
        m.a,
        m.b,
        m.jaccard.value,
        pf(m.jaccard.pLower),
        fmtP(m.jaccard.pLowerHolm),
        fmtP(m.jaccard.pLowerBH),
        m.sizeAminusB,
        m.sizeBminusA,
        m.densityAminusB.value,
        ratio(m.placementAminusB?.densityRatio),
        m.placementAminusB
          ? pf(m.placementAminusB.density.p) + ' (' + fmtP(m.placementAminusB.density.pHolm) + ')'
          : '—',
        m.densityBminusA.value,
        ratio(m.placementBminusA?.densityRatio),
        m.placementBminusA
          ? pf(m.placementBminusA.density.p) + ' (' + fmtP(m.placementBminusA.density.pHolm) + ')'
          : '—',
      ])),
  );
  cell.appendChild(
    el('p', 'meta',
      'Jaccard p: share of ' + w.settings.permutations +
        ' label permutations with an overlap at least as low (one-sided, +1 corrected; the smallest possible p is ' +
        fmtP(floor) + '). Holm and BH adjust within the family (region-pairs: the ' + wm.pairs.length +
        ' pairs; set-differences and placement-set-differences: the ' + 2 * wm.pairs.length +
        " differences for densities; the groups' table: group-density and placement-group-density). × random: density over the expected density of a random set of the same size in each matrix; p vs random: against random placements of that size."),
  );
  if (wm.channels && wm.channels.length) {
    cell.appendChild(
      el('p', 'meta',
        'Activation RMS by group (what a region compares): per capture point, the mean over channels of Σ_g (n_g/N)(s_g/s − 1)², against the label permutations; Holm and BH: over the capture points, in the family capture-points; channels: how many pass Benjamini–Hochberg at 0.05 on their own, "X of N": BH over N in family channels HOOK (the capture point\'s N channels).'),
    );
    cell.appendChild(
      table(['capture point', 'spread', 'null mean', 'z', 'p', 'Holm', 'BH', 'channels (BH ≤ 0.05)',
        'top channels (high > low group)'],
        wm.channels.map((
          c,
        ) => [c.hook, c.value, fmt(c.nullMean), fmt(c.z), pf(c.p), fmtP(c.pHolm), fmtP(c.pBH),
          c.channelsBH05 === null ? '—' : c.channelsBH05 + ' of ' + c.channels,
          c.top.slice(0, 3).map((t) => t.channel + ' (' + t.high + ' > ' + t.low + ')').join(', ')]
        ), 'metrics small'),
    );
  }
  if (wm.sensitivity && wm.sensitivity.length) {
    cell.appendChild(
      el('p', 'meta',
        'Sensitivity to the block size and the fraction kept (lobes wanda --sweep): counts after Holm at 0.05.'),
    );
    cell.appendChild(
      table(['block', 'top', 'blocks per region', 'mean Jaccard', 'pairs below label null (raw)',
        'median density × random', 'differences denser than random', 'differences denser than label null'],
        wm.sensitivity.map((
          r,
        ) => [r.block + '×' + r.block + (r.coarse ? ' (coarse)' : ''), r.top, r.selected, fmt(r.meanJaccard),
          r.jaccardBelowNullHolm + ' of ' + r.pairs + ' (' + r.jaccardBelowNull + ')', ratio(r.medianDensityRatio),
          r.denserThanRandomHolm + ' of ' + r.differences, r.denserThanLabelNullHolm + ' of ' + r.differences]
        ), 'metrics small'),
    );
  }
  for (const n of wm.notes ?? []) cell.appendChild(el('p', 'meta', n));
}

export const metricsSection: Section = {
  title: 'Metrics',
  id: 'metrics',
  visible: (page) =>
    !!page.data.comparison ||
    page.runs.some((r) => !!(r.cluster && r.cluster.metrics) || !!(r.wanda && r.wanda.metrics)),
  render(page, root) {
    comparisonTables(page, root);
    const sep = separationFigure(page);
    if (sep) {
      const div = el('div', 'fig');
      root.appendChild(div);
      page.figures.register('separation', () => sep);
      page.ready.push(page.figures.draw('separation', div));
    }
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      clusterTables(run, cell);
      wandaTables(run, cell);
    });
  },
};
