/**
 * The script that runs inside a report page. It reads the JSON payload from
 * <script type="application/json" id="lobes-data">, builds every table with textContent (never
 * innerHTML) and draws figures with Plotly; heatmaps are built only for the selected pair.
 *
 * It exposes `window.lobesReport` for figure export and tests:
 *   ready: boolean                     initial figures drawn
 *   figureIds(): string[]              every figure of the page (drawn or not)
 *   figure(id): {data, layout}         a figure's Plotly spec
 *   toImage(id, {format, width, height}): Promise<string>   data URL of the figure
 *   showPair(i): Promise<void>         select a pair of groups
 *
 * Plain ES2019 in a string: it is inlined into the page as is.
 */
export const CLIENT_JS = String.raw`
(function () {
  'use strict';
  var START_MS = performance.now();
  var DATA = JSON.parse(document.getElementById('lobes-data').textContent);
  var RUNS = DATA.runs;
  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f',
    '#393b79', '#ad494a', '#637939', '#8c6d31', '#7b4173', '#3182bd', '#e6550d', '#31a354', '#756bb1', '#636363'];
  var BLOCK_BG = '#ececec';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // Strings handed to Plotly are read as a small HTML subset: escape so they show as typed.
  function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function fmt(v) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '—';
    if (typeof v !== 'number') return String(v);
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 1) return v.toFixed(3);
    if (a >= 0.001) return v.toFixed(4);
    return v.toExponential(2);
  }
  function fmtP(p) {
    if (p === null || p === undefined) return '—';
    return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
  }
  function fmtCI(ci) { return ci ? '[' + fmt(ci[0]) + ', ' + fmt(ci[1]) + ']' : '—'; }
  var b64cache = {};
  function bytes(s) {
    if (b64cache[s]) return b64cache[s];
    var bin = atob(s), n = bin.length, u = new Uint8Array(n);
    for (var i = 0; i < n; i++) u[i] = bin.charCodeAt(i);
    b64cache[s] = u;
    return u;
  }
  function bit(u, i) { return (u[i >> 3] >> (i & 7)) & 1; }

  // Colours by group name, shared by every run of the page.
  var groupColour = {};
  var nColours = 0;
  RUNS.forEach(function (r) {
    var gs = (r.scatter ? r.scatter.groups : []).concat(r.wanda ? r.wanda.groups : []);
    gs.forEach(function (g) { if (!(g in groupColour)) groupColour[g] = PALETTE[nColours++ % PALETTE.length]; });
  });

  function table(head, rows, cls) {
    var t = el('table', cls || 'metrics');
    var tr = el('tr');
    head.forEach(function (h) { tr.appendChild(el('th', null, h)); });
    var th = el('thead'); th.appendChild(tr); t.appendChild(th);
    var tb = el('tbody');
    rows.forEach(function (row) {
      var r = el('tr');
      row.forEach(function (c) {
        var td = el('td', typeof c === 'number' ? 'num' : null, typeof c === 'number' ? fmt(c) : c);
        r.appendChild(td);
      });
      tb.appendChild(r);
    });
    t.appendChild(tb);
    return t;
  }
  function section(title, id) {
    var s = el('section');
    if (id) s.id = id;
    s.appendChild(el('h2', null, title));
    document.getElementById('app').appendChild(s);
    return s;
  }
  function columns(parent) {
    var c = el('div', 'cols');
    c.style.gridTemplateColumns = 'repeat(' + RUNS.length + ', minmax(0, 1fr))';
    parent.appendChild(c);
    return c;
  }

  // ---------- figures ----------
  var FIGS = {};   // id -> {build: function(): {data, layout}, div: element or null}

  function scatterFigure(run) {
    var s = run.scatter;
    var traces = s.groups.map(function (g, gi) {
      var x = [], y = [], t = [];
      for (var i = 0; i < s.g.length; i++) if (s.g[i] === gi) { x.push(s.x[i]); y.push(s.y[i]); t.push(s.hover[i]); }
      return {
        // SVG at every size: the inlined cartesian bundle has no WebGL traces (docs/report.md, "Plotly").
        type: 'scatter', mode: 'markers', name: esc(g) + ' (' + x.length + ')',
        x: x, y: y, text: t, hovertemplate: '%{text}<extra></extra>',
        marker: { size: s.g.length > 20000 ? 3 : s.g.length > 3000 ? 4 : 6, opacity: 0.8, color: groupColour[g] }
      };
    });
    return {
      data: traces,
      layout: {
        title: { text: esc(run.name) + ': t-SNE of ' + esc(run.cluster && run.cluster.settings ? run.cluster.settings.point : 'representations') + ', coloured by ' + esc(s.by) },
        xaxis: { title: { text: 't-SNE 1' }, zeroline: false }, yaxis: { title: { text: 't-SNE 2' }, zeroline: false },
        legend: { itemsizing: 'constant' }, hovermode: 'closest', margin: { t: 50, r: 10 }, height: 520
      }
    };
  }

  function sweepFigure(runs) {
    return {
      data: runs.map(function (run) {
        var sw = run.cluster.metrics.sweep;
        return { type: 'scatter', mode: 'lines+markers', name: esc(run.name), x: sw.map(function (s) { return esc(s.point); }),
          y: sw.map(function (s) { return s.probeAccuracy; }),
          error_y: { type: 'data', symmetric: false, array: sw.map(function (s) { return s.ci95 ? s.ci95[1] - s.probeAccuracy : 0; }),
            arrayminus: sw.map(function (s) { return s.ci95 ? s.probeAccuracy - s.ci95[0] : 0; }) } };
      }),
      layout: { title: { text: 'Linear-probe accuracy per capture point' }, yaxis: { title: { text: 'accuracy' }, range: [0, 1] }, height: 360, margin: { t: 50 } }
    };
  }

  // Heatmaps of one pair of one run: rows gate / up / down, columns A∖B | B∖A (layers x blocks).
  // Lowest importance percentile shown among the difference blocks of one run's pair (1 when unshaded).
  function pairMin(run, pi) {
    var w = run.wanda, p = w.pairs[pi];
    if (!(w.pct && w.pct[p.a] && w.pct[p.b])) return 1;
    var lo = 255;
    [[p.ab, p.a], [p.ba, p.b]].forEach(function (d) {
      var bits = bytes(d[0]), pct = bytes(w.pct[d[1]]);
      for (var j = 0; j < bits.length; j++) {
        if (!bits[j]) continue;
        for (var t = 0; t < 8; t++) if ((bits[j] >> t) & 1) { var v = pct[j * 8 + t]; if (v < lo) lo = v; }
      }
    });
    return lo / 255;
  }
  function pairFigure(run, pi, cmin) {
    var w = run.wanda, p = w.pairs[pi];
    var nP = w.projs.length, nL = w.layers.length;
    var present = bytes(w.present);
    var shaded = !!(w.pct && w.pct[p.a] && w.pct[p.b]);
    var dirs = [{ bits: bytes(p.ab), g: p.a, label: esc(p.a) + ' ∖ ' + esc(p.b), n: p.nAB },
                { bits: bytes(p.ba), g: p.b, label: esc(p.b) + ' ∖ ' + esc(p.a), n: p.nBA }];
    var rowPx = Math.max(90, Math.min(260, nL * 4)), gapPx = 70;
    var plotPx = nP * rowPx + (nP - 1) * gapPx;
    cmin = Math.max(0, Math.min(cmin, 0.99));
    var data = [], ann = [], layout = {
      title: { text: esc(run.name) + ': ' + esc(p.a) + ' vs ' + esc(p.b) + ' (' + esc(w.by) + ')' },
      height: plotPx + 130, margin: { t: 80, l: 60, r: 20, b: 50 },
      plot_bgcolor: BLOCK_BG, annotations: ann, showlegend: false,
      coloraxis: shaded ? { cmin: cmin, cmax: 1, colorscale: 'Viridis', colorbar: { title: { text: 'importance<br>percentile' }, len: 0.6 } }
                        : { cmin: 0, cmax: 1, colorscale: [[0, '#3b5b92'], [1, '#3b5b92']], showscale: false }
    };
    var gapX = 0.07, gapY = gapPx / plotPx;
    var cw = (1 - gapX) / 2, rh = rowPx / plotPx;
    for (var r = 0; r < nP; r++) {
      var gr = w.grid[r];
      for (var c = 0; c < 2; c++) {
        var d = dirs[c], k = r * 2 + c + 1, ax = k === 1 ? '' : String(k);
        var pct = shaded ? bytes(w.pct[d.g]) : null;
        var z = new Array(nL), shown = 0;
        for (var li = 0; li < nL; li++) {
          var row = new Array(gr.blocks);
          var has = bit(present, r * nL + li);
          var base = gr.offset + li * gr.blocks;
          for (var b = 0; b < gr.blocks; b++) {
            var i = base + b;
            if (has && bit(d.bits, i)) { row[b] = pct ? pct[i] / 255 : 1; shown++; } else row[b] = null;
          }
          z[li] = row;
        }
        data.push({ type: 'heatmap', z: z, y: w.layers, xaxis: 'x' + ax, yaxis: 'y' + ax, coloraxis: 'coloraxis',
          hovertemplate: 'layer %{y}<br>block %{x}' + (shaded ? '<br>importance percentile %{z:.2f}' : '') + '<extra>' + d.label + '</extra>',
          xgap: 0, ygap: 0, hoverongaps: false });
        var x0 = c * (cw + gapX), y1 = 1 - r * (rh + gapY);
        layout['xaxis' + ax] = { domain: [x0, x0 + cw], anchor: 'y' + ax, showgrid: false, zeroline: false,
          range: [-0.5, gr.blocks - 0.5], title: { text: esc(w.projs[r]) + ' block (' + gr.rowBlocks + '×' + gr.colBlocks + ', row-major)', font: { size: 11 }, standoff: 4 } };
        layout['yaxis' + ax] = { domain: [y1 - rh, y1], anchor: 'x' + ax, showgrid: false, zeroline: false,
          title: { text: 'layer', font: { size: 11 } }, autorange: 'reversed', tickformat: 'd', dtick: nL <= 12 ? 1 : undefined };
        ann.push({ text: '<b>' + d.label + '</b> · ' + esc(w.projs[r]) + ': ' + shown + ' blocks' + (r === 0 ? ' (' + d.n + ' in all)' : ''),
          xref: 'paper', yref: 'paper', x: x0 + cw / 2, y: y1 + 0.01, xanchor: 'center', yanchor: 'bottom', showarrow: false, font: { size: 12 } });
      }
    }
    return { data: data, layout: layout };
  }

  function registerFig(id, build) { FIGS[id] = { build: build, div: null }; return id; }
  function draw(id, div) {
    var f = FIGS[id], spec = f.build();
    f.div = div;
    div.setAttribute('data-figure', id);
    return Plotly.react(div, spec.data, spec.layout, { responsive: true, displaylogo: false });
  }

  // ---------- page ----------
  var compare = RUNS.length > 1;
  document.title = DATA.title;
  document.getElementById('title').textContent = DATA.title;
  var notes = document.getElementById('notes');
  RUNS.forEach(function (run) {
    if (run.randomModel) {
      notes.appendChild(el('p', 'warning', (compare ? run.name + ': ' : '') +
        'This run uses the built-in tiny model, whose weights are random. Its figures demonstrate the pipeline, not a finding about any language model.'));
    }
  });
  if (DATA.generatedBy) notes.appendChild(el('p', 'meta', DATA.generatedBy));

  var ready = [];

  // Scatter
  var sc = section('Representations: t-SNE', 'scatter');
  var scCols = columns(sc);
  RUNS.forEach(function (run, ri) {
    var cell = el('div');
    scCols.appendChild(cell);
    if (!run.scatter) { cell.appendChild(el('p', 'missing', run.name + ': no cluster results (run lobes cluster).')); return; }
    var id = registerFig((compare ? 'run' + (ri + 1) + '-' : '') + 'scatter', function () { return scatterFigure(run); });
    var div = el('div', 'fig'); cell.appendChild(div);
    ready.push(draw(id, div));
  });
  var sweepRuns = RUNS.filter(function (r) { return r.cluster && r.cluster.metrics && r.cluster.metrics.sweep && r.cluster.metrics.sweep.length; });
  if (sweepRuns.length) {
    var sd = el('div', 'fig'); sc.appendChild(sd);
    registerFig('sweep', function () { return sweepFigure(sweepRuns); });
    ready.push(draw('sweep', sd));
  }

  // Neuron regions: one pair at a time.
  var pairKeys = [], pairIndex = [];   // pairIndex[k][ri] = index of the pair in run ri (or -1)
  RUNS.forEach(function (run, ri) {
    if (!run.wanda) return;
    run.wanda.pairs.forEach(function (p, pi) {
      var key = p.a + '\u0000' + p.b, k = pairKeys.indexOf(key);
      if (k < 0) { k = pairKeys.push(key) - 1; pairIndex.push(RUNS.map(function () { return -1; })); }
      pairIndex[k][ri] = pi;
    });
  });
  var rg = section('Neuron regions: set differences per pair', 'regions');
  var regionDivs = [], metricDivs = [], current = -1;
  if (!pairKeys.length) {
    rg.appendChild(el('p', 'missing', 'No wanda results (run lobes wanda).'));
  } else {
    var bar = el('div', 'pairbar');
    bar.appendChild(el('label', null, 'Pair: '));
    var sel = el('select'); sel.id = 'pair-select';
    pairKeys.forEach(function (key, k) {
      var ab = key.split('\u0000');
      sel.appendChild(el('option', null, (k + 1) + '. ' + ab[0] + ' vs ' + ab[1])).value = String(k);
    });
    bar.appendChild(sel);
    bar.appendChild(el('span', 'hint', RUNS.some(function (r) { return r.wanda && r.wanda.pct; })
      ? 'Colour: the block\'s importance percentile within its matrix for the group on the left of ∖; grey: not in the difference.'
      : 'Coloured: block in the difference; grey: not in it.'));
    rg.appendChild(bar);
    var rgCols = columns(rg);
    RUNS.forEach(function () {
      var cell = el('div'); rgCols.appendChild(cell);
      var m = el('div', 'pairmetrics'); cell.appendChild(m); metricDivs.push(m);
      var d = el('div', 'fig'); cell.appendChild(d); regionDivs.push(d);
    });
    pairKeys.forEach(function (key, k) {
      RUNS.forEach(function (run, ri) {
        var pi = pairIndex[k][ri];
        if (pi >= 0) registerFig((compare ? 'run' + (ri + 1) + '-' : '') + 'pair-' + (k + 1), function () { return pairFigure(run, pi, pairRange(k)); });
      });
    });
    sel.addEventListener('change', function () { showPair(Number(sel.value)); });
  }
  // One colour range per pair, shared by every run of the page.
  var ranges = {};
  function pairRange(k) {
    if (!(k in ranges)) {
      var lo = 1;
      RUNS.forEach(function (run, ri) { var pi = pairIndex[k][ri]; if (pi >= 0) lo = Math.min(lo, pairMin(run, pi)); });
      ranges[k] = Math.floor(lo * 100) / 100;
    }
    return ranges[k];
  }
  function pairMetricsTable(run, p) {
    var m = p.metrics;
    if (!m) return el('p', 'missing', 'No metrics for this pair in wanda/metrics.json.');
    function row(name, t) { return [name, t.value, fmtP(t.p), t.percentile === null || t.percentile === undefined ? '—' : fmt(t.percentile), fmt(t.nullMean)]; }
    return table(['metric', 'value', 'p (permutation)', 'null percentile', 'null mean'], [
      row('Jaccard of regions', m.jaccard),
      row('isolation |A∖B| / |A|', m.isolationAB),
      row('isolation |B∖A| / |B|', m.isolationBA),
      row('density of A∖B', m.densityAminusB),
      row('density of B∖A', m.densityBminusA),
      ['size of A∖B / B∖A (blocks)', m.sizeAminusB + ' / ' + m.sizeBminusA, '', '', ''],
      ['components of A∖B / B∖A', m.componentsAminusB + ' / ' + m.componentsBminusA, '', '', '']
    ], 'metrics small');
  }
  function showPair(k) {
    if (k === current) return Promise.resolve();
    current = k;
    if (sel.value !== String(k)) sel.value = String(k);
    var jobs = [];
    RUNS.forEach(function (run, ri) {
      var pi = pairIndex[k][ri], md = metricDivs[ri], fd = regionDivs[ri];
      md.textContent = '';
      if (pi < 0) {
        md.appendChild(el('p', 'missing', run.name + ': this pair is not in the run.'));
        Plotly.purge(fd); fd.removeAttribute('data-figure');
        return;
      }
      var p = run.wanda.pairs[pi];
      md.appendChild(el('h3', null, (compare ? run.name + ': ' : '') + 'A = ' + p.a + ', B = ' + p.b));
      md.appendChild(pairMetricsTable(run, p));
      jobs.push(draw((compare ? 'run' + (ri + 1) + '-' : '') + 'pair-' + (k + 1), fd));
    });
    return Promise.all(jobs).then(function () {});
  }
  if (pairKeys.length) ready.push(showPair(0));

  // Metrics tables
  var mt = section('Metrics', 'metrics');
  if (DATA.comparison) {
    mt.appendChild(el('h3', null, 'Run 1 (' + RUNS[0].name + ') vs run 2 (' + RUNS[1].name + ')'));
    var head = ['section', 'metric', 'run 1', 'run 2', 'run 2 − run 1', '95% CI of difference', 'ahead', 'note'];
    var fmtRow = function (r) { return [r.section, r.metric, r.a, r.b, r.diff, r.ci ? fmtCI(r.ci) : '—', r.ahead, r.note || '']; };
    var cmpRows = DATA.comparison.rows;
    mt.appendChild(table(head, cmpRows.filter(function (r) { return !r.detail; }).map(fmtRow), 'metrics compare'));
    [['Per class', function (r) { return r.section.indexOf('separation') === 0; }], ['Per pair of groups', function (r) { return r.section.indexOf('separation') !== 0; }]].forEach(function (part) {
      var rows = cmpRows.filter(function (r) { return r.detail && part[1](r); });
      if (!rows.length) return;
      var det = el('details'); det.appendChild(el('summary', null, part[0] + ' (' + rows.length + ' rows)'));
      det.appendChild(table(head, rows.map(fmtRow), 'metrics compare'));
      mt.appendChild(det);
    });
    DATA.comparison.notes.forEach(function (n) { mt.appendChild(el('p', 'meta', n)); });
  }
  var mtCols = columns(mt);
  RUNS.forEach(function (run) {
    var cell = el('div'); mtCols.appendChild(cell);
    if (compare) cell.appendChild(el('h3', null, run.name));
    var cm = run.cluster && run.cluster.metrics;
    if (cm) {
      cell.appendChild(el('h4', null, 'Separation of ' + cm.classes.length + ' classes (' + cm.n + ' points, d = ' + cm.dim + ')'));
      cell.appendChild(table(['space', 'silhouette', '95% CI', 'p', 'kNN accuracy', '95% CI', 'p', 'probe accuracy', '95% CI', 'Davies–Bouldin', '95% CI'],
        cm.spaces.map(function (s) {
          return [s.space, s.silhouette.value, fmtCI(s.silhouette.ci95), fmtP(s.silhouette.p), s.knnAccuracy.value, fmtCI(s.knnAccuracy.ci95), fmtP(s.knnAccuracy.p),
            s.probeAccuracy ? s.probeAccuracy.value : '—', s.probeAccuracy ? fmtCI(s.probeAccuracy.ci95) : '—', s.daviesBouldin.value, fmtCI(s.daviesBouldin.ci95)];
        })));
      cell.appendChild(el('p', 'meta', 'PCA explained variance ' + fmt(cm.pcaExplainedVariance) + '; t-SNE KL divergence ' + fmt(cm.klDivergence) + '.'));
      cm.spaces.forEach(function (s) {
        if (!s.perClass || !s.perClass.length) return;
        var det = el('details'); det.appendChild(el('summary', null, 'Per class, ' + s.space));
        det.appendChild(table(['class', 'n', 'silhouette', 'kNN recall'], s.perClass.map(function (c) { return [c.label, c.n, c.silhouette, c.knnRecall]; }), 'metrics small'));
        if (s.confusion && s.confusion.length) {
          det.appendChild(el('p', 'meta', 'kNN confusion (rows: true class, columns: predicted, in the order above)'));
          det.appendChild(table([''].concat(cm.classes), s.confusion.map(function (row, i) { return [cm.classes[i]].concat(row); }), 'metrics small'));
        }
        cell.appendChild(det);
      });
    } else cell.appendChild(el('p', 'missing', 'No cluster metrics.'));
    var wm = run.wanda && run.wanda.metrics;
    if (wm) {
      cell.appendChild(el('h4', null, 'Neuron regions by ' + run.wanda.by));
      cell.appendChild(table(['group', 'n', 'region size (blocks)', 'density', 'components'],
        wm.groups.map(function (g) { return [g.group, g.n, g.regionSize, g.density, g.components]; }), 'metrics small'));
      cell.appendChild(table(['A', 'B', 'Jaccard', 'p', '|A∖B|/|A|', 'p', '|B∖A|/|B|', 'p', '|A∖B|', '|B∖A|', 'density A∖B', 'p', 'density B∖A', 'p'],
        wm.pairs.map(function (m) {
          return [m.a, m.b, m.jaccard.value, fmtP(m.jaccard.p), m.isolationAB.value, fmtP(m.isolationAB.p), m.isolationBA.value, fmtP(m.isolationBA.p),
            m.sizeAminusB, m.sizeBminusA, m.densityAminusB.value, fmtP(m.densityAminusB.p), m.densityBminusA.value, fmtP(m.densityBminusA.p)];
        })));
      cell.appendChild(el('p', 'meta', 'p: share of ' + run.wanda.settings.permutations + ' label permutations with a value at least as large (one-sided, +1 corrected).'));
    } else if (run.wanda) cell.appendChild(el('p', 'missing', 'wanda/metrics.json is missing.'));
  });

  // Provenance
  var pv = section('Provenance', 'provenance');
  var pvCols = columns(pv);
  RUNS.forEach(function (run) {
    var cell = el('div'); pvCols.appendChild(cell);
    if (compare) cell.appendChild(el('h3', null, run.name));
    cell.appendChild(table(['', ''], run.provenance, 'prov'));
  });

  function toImage(id, opts) {
    var f = FIGS[id];
    if (!f) return Promise.reject(new Error('no figure ' + id));
    var spec = f.build();
    var div = el('div');
    div.style.position = 'absolute'; div.style.left = '-20000px'; div.style.top = '0';
    div.style.width = opts.width + 'px'; div.style.height = opts.height + 'px';
    document.body.appendChild(div);
    var layout = Object.assign({}, spec.layout, { width: opts.width, height: opts.height });
    return Plotly.newPlot(div, spec.data, layout, { staticPlot: true }).then(function (gd) {
      return Plotly.toImage(gd, { format: opts.format, width: opts.width, height: opts.height, scale: 1 });
    }).then(function (url) { Plotly.purge(div); div.remove(); return url; });
  }

  window.lobesReport = {
    ready: false,
    startMs: START_MS,
    figureIds: function () { return Object.keys(FIGS); },
    figure: function (id) { return FIGS[id] ? FIGS[id].build() : null; },
    toImage: toImage,
    showPair: function (k) { return pairKeys.length ? showPair(k) : Promise.resolve(); },
    pairs: function () { return pairKeys.map(function (k) { return k.split('\u0000'); }); }
  };
  Promise.all(ready).then(function () {
    window.lobesReport.readyMs = performance.now();
    window.lobesReport.ready = true;
    document.documentElement.setAttribute('data-ready', '1');
  }, function (e) {
    document.documentElement.setAttribute('data-ready', 'error');
    throw e;
  });
})();
`;
