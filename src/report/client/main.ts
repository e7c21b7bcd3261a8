/**
 * The script of a report page, bundled by esbuild into one inline <script> (../client-bundle.ts).
 * It reads the JSON payload from <script type="application/json" id="lobes-data"> (shape:
 * ../types.ts), builds every table with textContent (never innerHTML), draws figures with the
 * inlined Plotly, and exposes `window.lobesReport` (api.ts) for figure export and tests.
 *
 * Sections: each is a module in sections/ exporting a Section (section.ts): a title, an anchor
 * id and a render(page, root) that fills its <section>. Their order is the analysis registry's
 * (src/analysis/registry.ts): an analysis declares its sections, and sections.gen.ts, generated
 * from the registry (`npx tsx src/analysis/generate.ts`), lists them in page order. A section registers its figures in page.figures (they become exportable by id) and pushes
 * the promise of every figure drawn at load onto page.ready.
 */
import type { PagePayload } from '../types.js';
import type { LobesReportApi } from './api.js';
import { createPage } from './page.js';
import { addSection, compareVerdictTable, el, verdictTable } from './dom.js';
import { contentsBar, enhanceTables } from './tables.js';
import { SECTIONS } from './sections.gen.js';

const START_MS = performance.now();
const data = JSON.parse(document.getElementById('lobes-data')!.textContent!) as PagePayload;
const page = createPage(data);

document.title = data.title;
document.getElementById('title')!.textContent = data.title;
const notes = document.getElementById('notes')!;
// First lines: in plain words, what beats chance and by how much (src/report/verdict.ts, compare.ts).
const cmp = data.comparison;
if (cmp && cmp.headline && cmp.headline.length) {
  const box = el('div', 'summary headline');
  box.appendChild(el('h3', null, 'A = ' + cmp.runs[0] + ', B = ' + cmp.runs[1] + ': the clearest differences'));
  cmp.headline.forEach((line) => box.appendChild(el('p', null, line)));
  notes.appendChild(box);
}
page.runs.forEach((run) => {
  if (run.randomModel) {
    notes.appendChild(el('p', 'warning', (page.compare ? run.name + ': ' : '') +
      'This run uses the built-in tiny model, whose weights are random. Its figures demonstrate the pipeline, not a finding about any language model.'));
  }
  if (run.control) notes.appendChild(el('p', 'warning', (page.compare ? run.name + ': ' : '') + run.control));
});
// The verdict tables first (one per label axis, the run's own first; on a comparison page one
// table of both runs per axis), the sentences behind them folded.
if (page.compare) {
  const axes: string[] = [];
  page.runs.forEach((run) =>
    (run.verdicts || []).forEach((t) => {
      if (!axes.includes(t.axis)) axes.push(t.axis);
    })
  );
  axes.forEach((axis, i) => {
    const [a, b] = page.runs.map((run) => (run.verdicts || []).find((t) => t.axis === axis) || null);
    notes.appendChild(
      compareVerdictTable(a!, b!, [page.runs[0]!.name, page.runs[1]!.name],
        (i === 0 ? 'Verdicts' : 'Other label axis') + ' for "' + axis + '", A then B'),
    );
  });
} else {
  (page.runs[0]!.verdicts || []).forEach((t, i) =>
    notes.appendChild(verdictTable(t, (i === 0 ? 'Verdicts' : 'Other label axis') + ' for "' + t.axis + '"'))
  );
}
if (cmp && cmp.summary && cmp.summary.length) {
  const fold = el('details', 'summary');
  fold.appendChild(el('summary', null, 'B against A in words (' + cmp.summary.length + ' lines)'));
  cmp.summary.forEach((line) => fold.appendChild(el('p', null, line)));
  notes.appendChild(fold);
}
page.runs.forEach((run) => {
  if (run.summary && run.summary.length) {
    const fold = el('details', 'summary');
    const has = !!(run.verdicts && run.verdicts.length);
    fold.open = !has;
    fold.appendChild(
      el('summary', null,
        (page.compare ? run.name + ': ' : '') +
          (has ? 'The verdicts in words (' + run.summary.length + ' lines)' : 'Summary')),
    );
    run.summary.forEach((line) => fold.appendChild(el('p', null, line)));
    notes.appendChild(fold);
  }
});
if (data.generatedBy) notes.appendChild(el('p', 'meta', data.generatedBy));

for (const s of SECTIONS) {
  if ((data.sections && !data.sections.includes(s.id)) || (s.visible && !s.visible(page))) continue;
  s.render(page, addSection(s.title, s.id));
}
const app = document.getElementById('app')!;
const toc = document.getElementById('toc');
if (toc) contentsBar(toc, app);
enhanceTables(app);

const api: LobesReportApi = {
  ready: false,
  startMs: START_MS,
  figureIds: () => page.figures.ids(),
  figure: (id) => page.figures.spec(id),
  toImage: (id, opts) => page.figures.toImage(id, opts),
  showPair: (k) => page.hooks.showPair(k),
  pairs: () => page.hooks.pairs(),
};
window.lobesReport = api;
Promise.all(page.ready).then(() => {
  api.readyMs = performance.now();
  api.ready = true;
  document.documentElement.setAttribute('data-ready', '1');
}, (e) => {
  document.documentElement.setAttribute('data-ready', 'error');
  throw e;
});
