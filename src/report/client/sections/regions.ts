/**
 * "Neuron regions": the set differences A∖B and B∖A of one pair of groups at a time, as heatmaps
 * (rows gate / up / down, columns A∖B | B∖A; layers x blocks each), with the pair's metrics.
 * A selector switches pairs; heatmaps are built only for the selected pair.
 */
import type { RunPayload } from '../../types.js';
import type { Section } from '../section.js';
import { el, table, columns } from '../dom.js';
import { esc, fmt, fmtP, wrapTitle } from '../format.js';
import { bytes, bit } from '../bits.js';
import type { NullTested } from '../../../wanda/types.js';

type Pair = NonNullable<RunPayload['wanda']>['pairs'][number];

const BLOCK_BG = '#ececec';

/** Lowest importance percentile shown among the difference blocks of one run's pair (1 when unshaded). */
function pairMin(run: RunPayload, pi: number): number {
  const w = run.wanda!;
  const p = w.pairs[pi]!;
  const pct = w.pct;
  if (!(pct && pct[p.a] && pct[p.b])) return 1;
  let lo = 255;
  ([[p.ab, p.a], [p.ba, p.b]] as const).forEach(([set, g]) => {
    const bits = bytes(set);
    const pg = bytes(pct[g]!);
    for (let j = 0; j < bits.length; j++) {
      if (!bits[j]) continue;
      for (let t = 0; t < 8; t++) {
        if ((bits[j]! >> t) & 1) {
          const v = pg[j * 8 + t]!;
          if (v < lo) lo = v;
        }
      }
    }
  });
  return lo / 255;
}

/** The heatmaps of pair pi of one run, coloured from cmin (the page's shared lower bound) to 1. */
function pairFigure(run: RunPayload, pi: number, cmin: number): PlotlyFigure {
  const w = run.wanda!;
  const p = w.pairs[pi]!;
  const nP = w.projs.length;
  const nL = w.layers.length;
  const present = bytes(w.present);
  const pctOf = w.pct && w.pct[p.a] && w.pct[p.b] ? w.pct : null;
  const shaded = !!pctOf;
  const dirs = [
    { bits: bytes(p.ab), g: p.a, label: esc(p.a) + ' ∖ ' + esc(p.b), n: p.nAB },
    { bits: bytes(p.ba), g: p.b, label: esc(p.b) + ' ∖ ' + esc(p.a), n: p.nBA },
  ];
  const rowPx = Math.max(90, Math.min(260, nL * 4));
  // Between rows: the upper row's x-axis title and the lower row's two-line subplot titles.
  const gapPx = 96;
  const plotPx = nP * rowPx + (nP - 1) * gapPx;
  cmin = Math.max(0, Math.min(cmin, 0.99));
  const title = wrapTitle(esc(run.name) + ': ' + esc(p.a) + ' vs ' + esc(p.b) + ' (' + esc(w.by) + ')', 100);
  const data: PlotlyTrace[] = [];
  const ann: Record<string, unknown>[] = [];
  const layout: PlotlyLayout = {
    title: title.title,
    height: plotPx + 120 + title.top,
    margin: { t: 70 + title.top, l: 60, r: 20, b: 50 },
    plot_bgcolor: BLOCK_BG,
    annotations: ann,
    showlegend: false,
    coloraxis: shaded
      ? { cmin, cmax: 1, colorscale: 'Viridis',
        colorbar: { title: { text: 'importance<br>percentile', font: { size: 11 } }, len: 0.6, thickness: 14, x: 1.01,
          xanchor: 'left' } }
      : { cmin: 0, cmax: 1, colorscale: [[0, '#3b5b92'], [1, '#3b5b92']], showscale: false },
  };
  const gapX = 0.07;
  const gapY = gapPx / plotPx;
  const cw = (1 - gapX) / 2;
  const rh = rowPx / plotPx;
  for (let r = 0; r < nP; r++) {
    const gr = w.grid[r]!;
    for (let c = 0; c < 2; c++) {
      const d = dirs[c]!;
      const k = r * 2 + c + 1;
      const ax = k === 1 ? '' : String(k);
      const pct = pctOf ? bytes(pctOf[d.g]!) : null;
      const z: (number | null)[][] = new Array(nL);
      let shown = 0;
      for (let li = 0; li < nL; li++) {
        const row: (number | null)[] = new Array(gr.blocks);
        const has = bit(present, r * nL + li);
        const base = gr.offset + li * gr.blocks;
        for (let b = 0; b < gr.blocks; b++) {
          const i = base + b;
          if (has && bit(d.bits, i)) {
            row[b] = pct ? pct[i]! / 255 : 1;
            shown++;
          } else row[b] = null;
        }
        z[li] = row;
      }
      data.push({
        type: 'heatmap',
        z,
        y: w.layers,
        xaxis: 'x' + ax,
        yaxis: 'y' + ax,
        coloraxis: 'coloraxis',
        hovertemplate: 'layer %{y}<br>block %{x}' + (shaded ? '<br>importance percentile %{z:.2f}' : '') + '<extra>' +
          d.label + '</extra>',
        xgap: 0,
        ygap: 0,
        hoverongaps: false,
      });
      const x0 = c * (cw + gapX);
      const y1 = 1 - r * (rh + gapY);
      layout['xaxis' + ax] = {
        domain: [x0, x0 + cw],
        anchor: 'y' + ax,
        showgrid: false,
        zeroline: false,
        range: [-0.5, gr.blocks - 0.5],
        title: { text: esc(w.projs[r]) + ' block (' + gr.rowBlocks + '×' + gr.colBlocks + ', row-major)',
          font: { size: 11 }, standoff: 4 },
      };
      layout['yaxis' + ax] = {
        domain: [y1 - rh, y1],
        anchor: 'x' + ax,
        showgrid: false,
        zeroline: false,
        title: { text: 'layer', font: { size: 11 } },
        autorange: 'reversed',
        tickformat: 'd',
        dtick: nL <= 12 ? 1 : undefined,
      };
      ann.push({
        // Two short lines, so that the titles of the two columns stay apart on narrow figures.
        text: '<b>' + d.label + '</b><br>' + esc(w.projs[r]) + ': ' + shown + ' blocks' +
          (r === 0 ? ' (' + d.n + ' in all)' : ''),
        xref: 'paper',
        yref: 'paper',
        x: x0 + cw / 2,
        y: y1 + 0.01,
        xanchor: 'center',
        yanchor: 'bottom',
        showarrow: false,
        font: { size: 12 },
      });
    }
  }
  return { data, layout };
}

function pairMetricsTable(p: Pair): HTMLElement {
  const m = p.metrics;
  if (!m) return el('p', 'missing', 'No metrics for this pair in wanda/metrics.json.');
  const pct = (t: NullTested) => (t.percentile === null || t.percentile === undefined ? '—' : fmt(t.percentile));
  // Jaccard is tested for a low overlap (pLower); isolation is the same test and is not repeated.
  const low = (name: string,
    t: NullTested) => [name, t.value, fmtP(t.pLower), fmtP(t.pLowerHolm), pct(t), fmt(t.nullMean)];
  const high = (name: string, t: NullTested) => [name, t.value, fmtP(t.p), fmtP(t.pHolm), pct(t), fmt(t.nullMean)];
  const rows = [
    low('Jaccard of regions (lower than shuffled labels)', m.jaccard),
    high('density of A∖B (vs shuffled labels)', m.densityAminusB),
    high('density of B∖A (vs shuffled labels)', m.densityBminusA),
  ];
  if (m.placementAminusB)
    rows.push(
      high('density of A∖B vs random blocks (' + fmt(m.placementAminusB.densityRatio) + '× random)',
        m.placementAminusB.density),
    );
  if (m.placementBminusA)
    rows.push(
      high('density of B∖A vs random blocks (' + fmt(m.placementBminusA.densityRatio) + '× random)',
        m.placementBminusA.density),
    );
  rows.push(['size of A∖B / B∖A (blocks)', m.sizeAminusB + ' / ' + m.sizeBminusA, '', '', '', '']);
  rows.push(['components of A∖B / B∖A', m.componentsAminusB + ' / ' + m.componentsBminusA, '', '', '', '']);
  return table(['metric', 'value', 'p (permutation)', 'Holm', 'null percentile', 'null mean'], rows, 'metrics small');
}

export const regionsSection: Section = {
  title: 'Neuron regions: set differences per pair',
  id: 'regions',
  visible: (page) => page.runs.some((r) => !!r.wanda),
  render(page, root) {
    const runs = page.runs;
    // Pairs of the whole page in order of first appearance; pairIndex[k][ri]: the pair's index in run ri, or -1.
    const pairKeys: string[] = [];
    const pairIndex: number[][] = [];
    runs.forEach((run, ri) => {
      if (!run.wanda) return;
      run.wanda.pairs.forEach((p, pi) => {
        const key = p.a + '\u0000' + p.b;
        let k = pairKeys.indexOf(key);
        if (k < 0) {
          k = pairKeys.push(key) - 1;
          pairIndex.push(runs.map(() => -1));
        }
        pairIndex[k]![ri] = pi;
      });
    });
    if (!pairKeys.length) {
      root.appendChild(el('p', 'missing', 'No wanda results (run lobes wanda).'));
      return;
    }
    // Regions too coarse to mean anything (src/wanda/blocksize.ts): say so before any figure.
    runs.forEach((run) => {
      const bc = run.wanda && run.wanda.settings.blockCheck;
      if (!bc || !bc.coarse.length) return;
      const w = run.wanda!;
      const parts = bc.coarse.map((c) =>
        c.proj + ' ' + c.rowBlocks + '×' + c.colBlocks + ' blocks, ' + c.selected + ' selected'
      );
      root.appendChild(
        el('p', 'warning',
          (page.compare ? run.name + ': ' : '') + 'At ' + w.settings.block.join('×') +
            ' blocks these matrices are too coarse for regions to mean anything: ' +
            parts.join('; ') + '. The rule needs at least ' + bc.minShortSide + ' blocks on the short side and ' +
            bc.minSelected + ' selected blocks' +
            (bc.suggested ? '; lobes wanda --block auto gives ' + bc.suggested + '×' + bc.suggested : '') +
            '. Read the heatmaps and region metrics below with that in mind.'),
      );
    });

    // One colour range per pair, shared by every run of the page.
    const ranges = new Map<number, number>();
    const pairRange = (k: number): number => {
      let r = ranges.get(k);
      if (r === undefined) {
        let lo = 1;
        runs.forEach((run, ri) => {
          const pi = pairIndex[k]![ri]!;
          if (pi >= 0) lo = Math.min(lo, pairMin(run, pi));
        });
        r = Math.floor(lo * 100) / 100;
        ranges.set(k, r);
      }
      return r;
    };

    const bar = el('div', 'pairbar');
    bar.appendChild(el('label', null, 'Pair: '));
    const sel = el('select');
    sel.id = 'pair-select';
    pairKeys.forEach((key, k) => {
      const ab = key.split('\u0000');
      sel.appendChild(el('option', null, (k + 1) + '. ' + ab[0] + ' vs ' + ab[1])).value = String(k);
    });
    bar.appendChild(sel);
    bar.appendChild(el('span', 'hint', runs.some((r) => r.wanda && r.wanda.pct)
      ? "Colour: the block's importance percentile within its matrix for the group on the left of ∖; grey: not in the difference."
      : 'Coloured: block in the difference; grey: not in it.'));
    root.appendChild(bar);
    // One run above the other, each figure the page's full width: side by side, the two columns of
    // each run's figure leave its subplot titles too little room below about 1,900 px.
    const cols = columns(root, 1);
    const regionDivs: HTMLElement[] = [];
    const metricDivs: HTMLElement[] = [];
    runs.forEach(() => {
      const cell = el('div');
      cols.appendChild(cell);
      const m = el('div', 'pairmetrics');
      cell.appendChild(m);
      metricDivs.push(m);
      const d = el('div', 'fig');
      cell.appendChild(d);
      regionDivs.push(d);
    });
    pairKeys.forEach((_key, k) => {
      runs.forEach((run, ri) => {
        const pi = pairIndex[k]![ri]!;
        if (pi >= 0)
          page.figures.register(page.figureId(ri, 'pair-' + (k + 1)), () => pairFigure(run, pi, pairRange(k)));
      });
    });

    let current = -1;
    const showPair = (k: number): Promise<void> => {
      if (k === current) return Promise.resolve();
      current = k;
      if (sel.value !== String(k)) sel.value = String(k);
      const jobs: Promise<unknown>[] = [];
      runs.forEach((run, ri) => {
        const pi = pairIndex[k]![ri]!;
        const md = metricDivs[ri]!;
        const fd = regionDivs[ri]!;
        md.textContent = '';
        if (pi < 0) {
          md.appendChild(el('p', 'missing', run.name + ': this pair is not in the run.'));
          Plotly.purge(fd);
          fd.removeAttribute('data-figure');
          return;
        }
        const p = run.wanda!.pairs[pi]!;
        md.appendChild(el('h3', null, (page.compare ? run.name + ': ' : '') + 'A = ' + p.a + ', B = ' + p.b));
        md.appendChild(pairMetricsTable(p));
        jobs.push(page.figures.draw(page.figureId(ri, 'pair-' + (k + 1)), fd));
      });
      return Promise.all(jobs).then(() => {});
    };
    sel.addEventListener('change', () => showPair(Number(sel.value)));
    page.hooks.showPair = showPair;
    page.hooks.pairs = () => pairKeys.map((k) => k.split('\u0000'));
    page.ready.push(showPair(0));
  },
};
