/** "Representations: t-SNE": one scatter per run, coloured by group, and the probe-accuracy sweep. */
import type { RunPayload, ScatterPayload } from '../../types.js';
import type { ClusterMetrics } from '../../../cluster/types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, columns, table } from '../dom.js';
import { esc, fmt, fmtP, fmtCI, wrapTitle } from '../format.js';
import { PALETTE } from '../page.js';

type Sweep = NonNullable<ClusterMetrics['sweep']>;

/** The map's colouring by `axis`: the values, each point's value index, and the colour of a value. */
function colouring(page: Page, s: ScatterPayload,
  axis: string): { by: string; values: string[]; v: number[]; colour: (value: string, k: number) => string }
{
  const a = axis === s.by ? null : (s.axes || []).find((x) => x.axis === axis);
  if (!a) return { by: s.by, values: s.groups, v: s.g, colour: (g) => page.colour(g) };
  return { by: a.axis, values: a.values, v: a.v, colour: (_value, k) => PALETTE[k % PALETTE.length]! };
}

function scatterFigure(page: Page, run: RunPayload, s: ScatterPayload, axis: string): PlotlyFigure {
  const c = colouring(page, s, axis);
  const traces: PlotlyTrace[] = c.values.map((g, gi) => {
    const x: number[] = [];
    const y: number[] = [];
    const t: string[] = [];
    for (let i = 0; i < c.v.length; i++) {
      if (c.v[i] === gi) {
        x.push(s.x[i]!);
        y.push(s.y[i]!);
        t.push(s.hover[i]!);
      }
    }
    return {
      // SVG at every size: the inlined cartesian bundle has no WebGL traces (docs/report.md, "Plotly").
      type: 'scatter',
      mode: 'markers',
      name: esc(g) + ' (' + x.length + ')',
      x,
      y,
      text: t,
      hovertemplate: '%{text}<extra></extra>',
      marker: { size: s.g.length > 20000 ? 3 : s.g.length > 3000 ? 4 : 6, opacity: 0.8, color: c.colour(g, gi) },
    };
  });
  const point = run.cluster && run.cluster.settings ? run.cluster.settings.point : 'representations';
  // Short lines: on a comparison page the map is half the page wide.
  const title = wrapTitle(esc(run.name) + ': t-SNE of ' + esc(point) + ', coloured by ' + esc(c.by),
    page.compare ? 52 : 100);
  return {
    data: traces,
    layout: {
      title: title.title,
      xaxis: { title: { text: 't-SNE 1' }, zeroline: false },
      yaxis: { title: { text: 't-SNE 2' }, zeroline: false },
      legend: { itemsizing: 'constant' },
      hovermode: 'closest',
      margin: { t: title.top, r: 10 },
      height: 500 + title.top - 30,
    },
  };
}

/** A sweep with what it is read against. */
interface SweepRun {
  name: string;
  /** 'A' or 'B' on a comparison page (legends stay short; the title names the runs). */
  tag: string;
  sweep: Sweep;
  chance: number;
  majority: number | null;
}

/** A chance level and the runs whose level it is. */
interface Level {
  value: number;
  runs: string[];
}

function addLevel(levels: Level[], value: number, run: string): void {
  const hit = levels.find((l) => l.value.toFixed(2) === value.toFixed(2));
  if (hit) hit.runs.push(run);
  else levels.push({ value, runs: [run] });
}

/**
 * The probe per capture point: balanced accuracy with its bootstrap CI and the permutation
 * null's 95% band (shaded), accuracy (dotted), and the chance levels: 1/C for balanced accuracy
 * (dashed) and the majority-class rate for accuracy (dotted). Older sweeps without balanced
 * accuracy show accuracy only.
 */
function sweepFigure(runs: SweepRun[], compare: boolean): PlotlyFigure {
  const data: PlotlyTrace[] = [];
  const shapes: Record<string, unknown>[] = [];
  const annotations: Record<string, unknown>[] = [];
  const colours = ['#1f77b4', '#d62728'];
  // Chance levels, one line per distinct value (shown to 2 places) with the runs it belongs to, so
  // two runs with the same chance share one label instead of printing two on top of each other.
  const chances: Level[] = [];
  const majorities: Level[] = [];
  runs.forEach(({ name, tag, sweep: sw, chance, majority }, ri) => {
    const pre = compare ? esc(tag) + ': ' : '';
    const x = sw.map((s) => esc(s.point));
    const colour = colours[ri % colours.length]!;
    const bal = sw.every((s) => s.balancedAccuracy);
    if (bal && sw.every((s) => s.balancedAccuracy!.nullBand)) {
      data.push({ type: 'scatter', mode: 'lines', x, y: sw.map((s) => s.balancedAccuracy!.nullBand![0]),
        line: { width: 0 }, hoverinfo: 'skip', showlegend: false });
      data.push({
        type: 'scatter',
        mode: 'lines',
        x,
        y: sw.map((s) => s.balancedAccuracy!.nullBand![1]),
        line: { width: 0 },
        fill: 'tonexty',
        fillcolor: ri === 0 ? 'rgba(31,119,180,0.15)' : 'rgba(214,39,40,0.15)',
        name: pre + 'null 95% band (balanced accuracy)',
      });
    }
    if (bal) {
      data.push({
        type: 'scatter',
        mode: 'lines+markers',
        name: pre + 'balanced accuracy',
        x,
        y: sw.map((s) => s.balancedAccuracy!.value),
        line: { color: colour },
        error_y: {
          type: 'data',
          symmetric: false,
          array: sw.map((
            s,
          ) => (s.balancedAccuracy!.ci95 ? s.balancedAccuracy!.ci95[1] - s.balancedAccuracy!.value : 0)),
          arrayminus: sw.map((
            s,
          ) => (s.balancedAccuracy!.ci95 ? s.balancedAccuracy!.value - s.balancedAccuracy!.ci95[0] : 0)),
        },
      });
    }
    data.push({
      type: 'scatter',
      mode: 'lines',
      name: pre + 'accuracy',
      x,
      y: sw.map((s) => s.probeAccuracy),
      line: { color: colour, dash: bal ? 'dot' : 'solid' },
      ...(bal
        ? {}
        : {
          error_y: { type: 'data', symmetric: false, array: sw.map((s) => (s.ci95 ? s.ci95[1] - s.probeAccuracy : 0)),
            arrayminus: sw.map((s) => (s.ci95 ? s.probeAccuracy - s.ci95[0] : 0)) },
        }),
    });
    addLevel(chances, chance, name);
    if (majority !== null) addLevel(majorities, majority, name);
  });
  const title = wrapTitle(
    'Linear probe per capture point, against chance' +
      (compare ? ' (' + runs.map((r) => esc(r.tag) + ' = ' + esc(r.name.replace(/^[AB]: /, ''))).join('; ') + ')' : ''),
    110,
  );
  const label = (
    l: Level,
  ) => (compare && runs.length > 1
    ? ' (' + (l.runs.length === runs.length ? 'both runs' : l.runs.map(esc).join(', ')) + ')'
    : '');
  chances.forEach((l, j) => {
    shapes.push({ type: 'line', xref: 'paper', x0: 0, x1: 1, y0: l.value, y1: l.value,
      line: { dash: 'dash', color: '#444', width: 1.5 } });
    // Close levels: labels staggered along the line (chance from the left, majority from the right).
    annotations.push({ xref: 'paper', x: j * 0.3, y: l.value,
      text: 'chance (balanced) ' + l.value.toFixed(2) + label(l), showarrow: false, xanchor: 'left', yanchor: 'bottom',
      font: { size: 11, color: '#444' } });
  });
  majorities.forEach((l, j) => {
    shapes.push({ type: 'line', xref: 'paper', x0: 0, x1: 1, y0: l.value, y1: l.value,
      line: { dash: 'dot', color: '#999', width: 1.5 } });
    annotations.push({ xref: 'paper', x: 1 - j * 0.3, y: l.value,
      text: 'majority-class accuracy ' + l.value.toFixed(2) + label(l), showarrow: false, xanchor: 'right',
      yanchor: 'bottom', font: { size: 11, color: '#777' } });
  });
  return {
    data,
    layout: { title: title.title, yaxis: { title: { text: 'score' }, range: [0, 1] }, xaxis: { automargin: true },
      shapes, annotations, height: 400 + title.top, margin: { t: title.top + 10 } },
  };
}

export const scatterSection: Section = {
  title: 'Representations: t-SNE',
  id: 'scatter',
  // a page shows what its folders hold: no map section without a map
  visible: (page) => page.runs.some((r) => !!r.scatter),
  render(page, root) {
    // Colour by: the label the run was clustered by, or any other label axis of its items.
    const axisNames: string[] = [];
    page.runs.forEach((r) => {
      if (!r.scatter) return;
      [r.scatter.by, ...(r.scatter.axes || []).map((a) => a.axis)].forEach((a) => {
        if (axisNames.indexOf(a) < 0) axisNames.push(a);
      });
    });
    let axis = axisNames[0] || '';
    const drawn: { id: string; div: HTMLElement }[] = [];
    if (axisNames.length > 1) {
      const bar = el('div', 'pairbar');
      bar.appendChild(el('label', null, 'Colour by: '));
      const sel = el('select');
      sel.id = 'colour-select';
      axisNames.forEach((a) => {
        sel.appendChild(el('option', null, a)).value = a;
      });
      sel.addEventListener('change', () => {
        axis = sel.value;
        drawn.forEach((d) => page.figures.draw(d.id, d.div));
      });
      bar.appendChild(sel);
      bar.appendChild(
        el('span', 'hint', 'The table under each map says how well its neighbourhoods predict each label.'),
      );
      root.appendChild(bar);
    }
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      const s = run.scatter;
      if (!s) {
        cell.appendChild(el('p', 'missing', run.name + ': no cluster results (run lobes cluster).'));
        return;
      }
      // A run without the chosen label keeps its own colouring.
      const id = page.figures.register(page.figureId(ri, 'scatter'), () => scatterFigure(page, run, s, axis));
      const div = el('div', 'fig');
      cell.appendChild(div);
      drawn.push({ id, div });
      page.ready.push(page.figures.draw(id, div));
      if (s.fits && s.fits.length > 1) {
        const det = el('details', 'fits');
        det.appendChild(el('summary', null, "Which label the map's islands follow (kNN in the 2-D map, per label)"));
        det.appendChild(
          table(['label', 'classes', 'balanced accuracy', 'chance 1/C', 'null mean [95% band]', 'p', 'adjusted'],
            s.fits.map((
              f,
            ) => [f.axis + (f.axis === s.by ? ' (clustered by)' : ''), f.classes, f.balancedAccuracy, f.chance,
              fmt(f.nullMean) + ' ' + fmtCI(f.nullBand), fmtP(f.p), f.adjusted]
            ), 'metrics small'),
        );
        det.appendChild(
          el('p', 'meta',
            "Each point's 10 nearest points in the map vote for its label; balanced accuracy is the mean recall over the label's classes (chance 1/C). " +
              'Null: the labels shuffled over the points (' + 200 +
              ' permutations, p one-sided). Adjusted = (balanced accuracy − 1/C) / (1 − 1/C): 0 at chance, 1 when neighbours always agree, comparable across labels with different numbers of classes.' +
              (s.fits[0]!.n < s.g.length ? ' Measured on a seeded sample of ' + s.fits[0]!.n + ' points.' : '')),
        );
        cell.appendChild(det);
      }
    });
    const sweepRuns: SweepRun[] = [];
    page.runs.forEach((r) => {
      const cm = r.cluster && r.cluster.metrics;
      const sweep = cm && cm.sweep;
      if (cm && sweep && sweep.length)
        sweepRuns.push({ name: r.name, tag: r.tag || r.name, sweep,
          chance: cm.chance ? cm.chance.balancedAccuracy : 1 / cm.classes.length,
          majority: cm.chance ? cm.chance.majorityRate : null });
    });
    if (sweepRuns.length) {
      const div = el('div', 'fig');
      root.appendChild(div);
      page.figures.register('sweep', () => sweepFigure(sweepRuns, page.compare));
      page.ready.push(page.figures.draw('sweep', div));
    }
  },
};
