/**
 * "Metrics": on a comparison page the run-against-run table first (detail rows folded away),
 * then per run the separation metrics (cluster/metrics.json) and the region metrics (wanda/metrics.json).
 */
import type { ComparisonRow, RunPayload } from '../../types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { fmt, fmtP, fmtCI } from '../format.js';

function comparisonTables(page: Page, root: HTMLElement): void {
  const cmp = page.data.comparison;
  if (!cmp) return;
  const runs = page.runs;
  root.appendChild(el('h3', null, 'Run 1 (' + runs[0]!.name + ') vs run 2 (' + runs[1]!.name + ')'));
  const head = ['section', 'metric', 'run 1', 'run 2', 'run 2 − run 1', '95% CI of difference', 'ahead', 'note'];
  const fmtRow = (r: ComparisonRow): Cell[] => [r.section, r.metric, r.a, r.b, r.diff, r.ci ? fmtCI(r.ci) : '—', r.ahead, r.note || ''];
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

function clusterTables(run: RunPayload, cell: HTMLElement): void {
  const cm = run.cluster && run.cluster.metrics;
  if (!cm) {
    cell.appendChild(el('p', 'missing', 'No cluster metrics.'));
    return;
  }
  cell.appendChild(el('h4', null, 'Separation of ' + cm.classes.length + ' classes (' + cm.n + ' points, d = ' + cm.dim + ')'));
  cell.appendChild(table(['space', 'silhouette', '95% CI', 'p', 'kNN accuracy', '95% CI', 'p', 'probe accuracy', '95% CI', 'Davies–Bouldin', '95% CI'],
    cm.spaces.map((s) => [
      s.space, s.silhouette.value, fmtCI(s.silhouette.ci95), fmtP(s.silhouette.p), s.knnAccuracy.value, fmtCI(s.knnAccuracy.ci95), fmtP(s.knnAccuracy.p),
      s.probeAccuracy ? s.probeAccuracy.value : '—', s.probeAccuracy ? fmtCI(s.probeAccuracy.ci95) : '—', s.daviesBouldin.value, fmtCI(s.daviesBouldin.ci95),
    ])));
  cell.appendChild(el('p', 'meta', 'PCA explained variance ' + fmt(cm.pcaExplainedVariance) + '; t-SNE KL divergence ' + fmt(cm.klDivergence) + '.'));
  cm.spaces.forEach((s) => {
    if (!s.perClass || !s.perClass.length) return;
    const det = el('details');
    det.appendChild(el('summary', null, 'Per class, ' + s.space));
    det.appendChild(table(['class', 'n', 'silhouette', 'kNN recall'], s.perClass.map((c) => [c.label, c.n, c.silhouette, c.knnRecall]), 'metrics small'));
    if (s.confusion && s.confusion.length) {
      det.appendChild(el('p', 'meta', 'kNN confusion (rows: true class, columns: predicted, in the order above)'));
      det.appendChild(table([''].concat(cm.classes), s.confusion.map((row, i): Cell[] => [cm.classes[i]!, ...row]), 'metrics small'));
    }
    cell.appendChild(det);
  });
}

function wandaTables(run: RunPayload, cell: HTMLElement): void {
  const w = run.wanda;
  const wm = w && w.metrics;
  if (!wm) {
    if (w) cell.appendChild(el('p', 'missing', 'wanda/metrics.json is missing.'));
    return;
  }
  cell.appendChild(el('h4', null, 'Neuron regions by ' + w.by));
  cell.appendChild(table(['group', 'n', 'region size (blocks)', 'density', 'components'],
    wm.groups.map((g) => [g.group, g.n, g.regionSize, g.density, g.components]), 'metrics small'));
  cell.appendChild(table(['A', 'B', 'Jaccard', 'p', '|A∖B|/|A|', 'p', '|B∖A|/|B|', 'p', '|A∖B|', '|B∖A|', 'density A∖B', 'p', 'density B∖A', 'p'],
    wm.pairs.map((m) => [
      m.a, m.b, m.jaccard.value, fmtP(m.jaccard.p), m.isolationAB.value, fmtP(m.isolationAB.p), m.isolationBA.value, fmtP(m.isolationBA.p),
      m.sizeAminusB, m.sizeBminusA, m.densityAminusB.value, fmtP(m.densityAminusB.p), m.densityBminusA.value, fmtP(m.densityBminusA.p),
    ])));
  cell.appendChild(el('p', 'meta', 'p: share of ' + w.settings.permutations + ' label permutations with a value at least as large (one-sided, +1 corrected).'));
}

export const metricsSection: Section = {
  title: 'Metrics',
  id: 'metrics',
  render(page, root) {
    comparisonTables(page, root);
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
