/**
 * "Logit lens": per run, each layer's residual stream read through the final norm and lm_head
 * (lobes lens, src/lens/): one line per layer, the accuracy of the correct option's token over
 * the options against chance and its median rank where the items have answer options, the
 * entropy and the KL divergence to the final layer's distribution, and the most frequent top-1
 * token. The payload is the lens's own (src/lens/types.ts LensPayload, RunPayload.lens).
 */
import type { RunPayload } from '../../types.js';
import type { LensPayload } from '../../../lens/types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { esc, wrapTitle } from '../format.js';

/** The lens payload of a run (registered under the key `lens`), or null. */
function lensOf(run: RunPayload): LensPayload | null {
  return (run as RunPayload & { lens?: LensPayload }).lens ?? null;
}

const pct = (x: number | null): Cell => (x === null ? '—' : (x * 100).toFixed(1));

function figure(run: RunPayload, l: LensPayload): PlotlyFigure {
  const x = l.summary.map((s) => s.layer);
  const c = l.candidates;
  const acc = !!(c && c.items);
  const title = wrapTitle(
    esc(run.name) +
      (acc ? ': logit-lens accuracy over the options per layer, and chance' : ': KL to the final layer per layer'),
    60,
  );
  const data = acc
    ? [
      { type: 'scatter', mode: 'lines+markers', name: 'lens accuracy', x, y: l.summary.map((s) => s.accuracy) },
      { type: 'scatter', mode: 'lines', name: 'chance', x, y: x.map(() => c!.chance),
        line: { dash: 'dot', color: '#555' } },
    ]
    : [{ type: 'scatter', mode: 'lines+markers', name: 'KL(final ‖ layer), nats', x, y: l.summary.map((s) => s.kl) }];
  return {
    data,
    layout: { title: title.title, xaxis: { title: { text: 'layer' } },
      yaxis: acc ? { title: { text: 'accuracy' }, range: [0, 1] } : { title: { text: 'nats' }, rangemode: 'tozero' },
      height: 340 + title.top, margin: { t: title.top } },
  } as PlotlyFigure;
}

export const lensSection: Section = {
  title: 'Logit lens',
  id: 'lens',
  visible: (page: Page) => page.runs.some((r) => !!lensOf(r)),
  render(page: Page, root: HTMLElement) {
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      const l = lensOf(run);
      if (!l) {
        cell.appendChild(el('p', 'missing', run.name + ': no logit lens.'));
        return;
      }
      const c = l.candidates;
      cell.appendChild(
        el('p', 'meta',
          "Every layer's residual stream at the last token, read through the model's final norm and lm_head, over " +
            l.items + ' items' +
            (c && c.items
              ? '; ' + c.items + ' with answer options (chance ' + (c.chance * 100).toFixed(1) + '%)'
              : '') +
            (c && c.skipped ? '; ' + c.skipped + ' without: ' + c.skippedWhy : '') + '.'),
      );
      const id = page.figures.register(page.figureId(ri, 'lens'), () => figure(run, l));
      const div = el('div', 'fig');
      cell.appendChild(div);
      page.ready.push(page.figures.draw(id, div));
      const withC = !!(c && c.items);
      const head = ['layer', 'entropy (nats)', 'KL to final',
        ...(withC ? ['accuracy %', 'chance %', 'median rank', 'p(correct) %'] : []), 'top-1 token (share %)'];
      const rows = l.summary.map((s, i): Cell[] => [s.layer, s.entropy.toFixed(2), s.kl.toFixed(3),
        ...(withC
          ? [pct(s.accuracy), pct(c!.chance), s.medianRank === null ? '—' : String(s.medianRank), pct(s.meanP)]
          : []), JSON.stringify(l.topToken[i]!.token) + ' (' + (l.topToken[i]!.share * 100).toFixed(0) + ')']
      );
      cell.appendChild(table(head, rows, 'metrics small'));
    });
  },
};
