/** "Representations: t-SNE": one scatter per run, coloured by group, and the probe-accuracy sweep. */
import type { RunPayload, ScatterPayload } from '../../types.js';
import type { ClusterMetrics } from '../../../cluster/types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, columns } from '../dom.js';
import { esc } from '../format.js';

type Sweep = NonNullable<ClusterMetrics['sweep']>;

function scatterFigure(page: Page, run: RunPayload, s: ScatterPayload): PlotlyFigure {
  const traces: PlotlyTrace[] = s.groups.map((g, gi) => {
    const x: number[] = [];
    const y: number[] = [];
    const t: string[] = [];
    for (let i = 0; i < s.g.length; i++) {
      if (s.g[i] === gi) {
        x.push(s.x[i]!);
        y.push(s.y[i]!);
        t.push(s.hover[i]!);
      }
    }
    return {
      // SVG at every size: the inlined cartesian bundle has no WebGL traces (docs/report.md, "Plotly").
      type: 'scatter', mode: 'markers', name: esc(g) + ' (' + x.length + ')',
      x, y, text: t, hovertemplate: '%{text}<extra></extra>',
      marker: { size: s.g.length > 20000 ? 3 : s.g.length > 3000 ? 4 : 6, opacity: 0.8, color: page.colour(g) },
    };
  });
  const point = run.cluster && run.cluster.settings ? run.cluster.settings.point : 'representations';
  return {
    data: traces,
    layout: {
      title: { text: esc(run.name) + ': t-SNE of ' + esc(point) + ', coloured by ' + esc(s.by) },
      xaxis: { title: { text: 't-SNE 1' }, zeroline: false }, yaxis: { title: { text: 't-SNE 2' }, zeroline: false },
      legend: { itemsizing: 'constant' }, hovermode: 'closest', margin: { t: 50, r: 10 }, height: 520,
    },
  };
}

function sweepFigure(runs: { name: string; sweep: Sweep }[]): PlotlyFigure {
  return {
    data: runs.map(({ name, sweep: sw }): PlotlyTrace => ({
      type: 'scatter', mode: 'lines+markers', name: esc(name), x: sw.map((s) => esc(s.point)),
      y: sw.map((s) => s.probeAccuracy),
      error_y: {
        type: 'data', symmetric: false, array: sw.map((s) => (s.ci95 ? s.ci95[1] - s.probeAccuracy : 0)),
        arrayminus: sw.map((s) => (s.ci95 ? s.probeAccuracy - s.ci95[0] : 0)),
      },
    })),
    layout: { title: { text: 'Linear-probe accuracy per capture point' }, yaxis: { title: { text: 'accuracy' }, range: [0, 1] }, height: 360, margin: { t: 50 } },
  };
}

export const scatterSection: Section = {
  title: 'Representations: t-SNE',
  id: 'scatter',
  render(page, root) {
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      const s = run.scatter;
      if (!s) {
        cell.appendChild(el('p', 'missing', run.name + ': no cluster results (run lobes cluster).'));
        return;
      }
      const id = page.figures.register(page.figureId(ri, 'scatter'), () => scatterFigure(page, run, s));
      const div = el('div', 'fig');
      cell.appendChild(div);
      page.ready.push(page.figures.draw(id, div));
    });
    const sweepRuns: { name: string; sweep: Sweep }[] = [];
    page.runs.forEach((r) => {
      const sweep = r.cluster && r.cluster.metrics && r.cluster.metrics.sweep;
      if (sweep && sweep.length) sweepRuns.push({ name: r.name, sweep });
    });
    if (sweepRuns.length) {
      const div = el('div', 'fig');
      root.appendChild(div);
      page.figures.register('sweep', () => sweepFigure(sweepRuns));
      page.ready.push(page.figures.draw('sweep', div));
    }
  },
};
