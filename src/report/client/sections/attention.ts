/**
 * "Attention": `lobes attend` results (SocialEval App. C.4). Per run: the share of attention per
 * prompt part (or option role) for all, right and wrong items with 95% bootstrap intervals and
 * wrong − right, as a table and a dot plot; the top keywords per group; and one item at a time,
 * its prompt with every word shaded by its attention (hover: the weight and the part) and its top
 * words. Every string reaches the page through textContent or the title property.
 */
import type { AttendItemPayload, AttendPayload, RunPayload } from '../../types.js';
import type { MeanCI, ShareTable } from '../../../attend/types.js';
import type { Page } from '../page.js';
import type { Section } from '../section.js';
import { el, table, columns, type Cell } from '../dom.js';
import { esc, fmt, fmtCI, wrapTitle } from '../format.js';

const SHADE = '214, 39, 40';

function ci(m: MeanCI | undefined): string {
  if (!m || m.mean === null || m.mean === undefined) return '—';
  return fmt(m.mean) + (m.ci95 ? ' ' + fmtCI(m.ci95) : '');
}

/** The share table: one row per part, all / right / wrong / wrong − right. */
function shareRows(t: ShareTable): Cell[][] {
  return t.parts.map((p) => {
    const d = t.wrongMinusRight[p];
    return [p, ci(t.all[p]), ci(t.right[p]), ci(t.wrong[p]),
      d && d.diff !== null ? fmt(d.diff) + (d.ci95 ? ' ' + fmtCI(d.ci95) : '') : '—'];
  });
}

/** Dot plot of the shares of each part, right and wrong (or all items when unscored), with intervals. */
function sharesFigure(run: RunPayload, a: AttendPayload, t: ShareTable): PlotlyFigure {
  const groups: ['all' | 'right' | 'wrong', string, string][] = a.counts.right && a.counts.wrong
    ? [['right', 'right items', '#2ca02c'], ['wrong', 'wrong items', '#d62728']]
    : [['all', 'all items', '#1f77b4']];
  const data: PlotlyTrace[] = groups.map(([g, name, colour]) => {
    const ms = t.parts.map((p) => t[g][p]);
    return {
      type: 'scatter',
      mode: 'markers',
      name: esc(name),
      x: t.parts.map(esc),
      y: ms.map((m) => (m && m.mean !== null ? m.mean : null)),
      marker: { size: 10, color: colour },
      error_y: { type: 'data', symmetric: false,
        array: ms.map((m) => (m && m.ci95 && m.mean !== null ? m.ci95[1] - m.mean : 0)),
        arrayminus: ms.map((m) => (m && m.ci95 && m.mean !== null ? m.mean - m.ci95[0] : 0)) },
    };
  });
  const title = wrapTitle(esc(run.name) + ': share of attention per prompt part (95% bootstrap CI)', 52);
  return {
    data,
    layout: {
      title: title.title,
      yaxis: { title: { text: 'share of content attention' }, rangemode: 'tozero' },
      height: 360 + title.top,
      margin: { t: title.top },
    },
  };
}

function keywordTable(a: AttendPayload, group: 'all' | 'right' | 'wrong'): HTMLTableElement {
  const rows: Cell[][] = a.keywords[group].map((k, i) => [i + 1, k.word, k.weight, k.inTop, k.items, k.part]);
  return table(['#', 'word', 'mean weight per item', 'items with it in their top ' + a.top, 'items with it', 'part'],
    rows);
}

/** The prompt with every word shaded by weight (relative to the item's heaviest content word). */
function promptView(a: AttendPayload, it: AttendItemPayload): HTMLElement {
  const box = el('div', 'attn-text');
  let max = 0;
  for (let k = 0; k < it.ww.length; k++) if (it.wc[k] && it.ww[k]! > max) max = it.ww[k]!;
  const starts = new Map<number, number>();
  it.ws.forEach((s, k) => starts.set(s, k));
  const partAt = new Map<number, number>();
  it.parts.forEach(([pi, s]) => partAt.set(s, pi));
  const text = it.prompt;
  let i = 0;
  let plain = '';
  const flush = () => {
    if (plain) box.appendChild(document.createTextNode(plain));
    plain = '';
  };
  while (i < text.length) {
    const pi = partAt.get(i);
    if (pi !== undefined && a.partNames[pi] !== 'template') {
      flush();
      box.appendChild(el('span', 'attn-part', a.partNames[pi]));
    }
    const k = starts.get(i);
    if (k === undefined || it.we[k]! <= i) {
      plain += text[i];
      i++;
      continue;
    }
    flush();
    const w = el('span', it.wc[k] ? 'attn-w' : 'attn-w attn-tmpl', text.slice(i, it.we[k]!));
    const alpha = max > 0 && it.wc[k] ? Math.min(1, it.ww[k]! / max) : 0;
    if (alpha > 0) w.style.backgroundColor = 'rgba(' + SHADE + ', ' + (0.85 * alpha).toFixed(3) + ')';
    w.title = text.slice(i, it.we[k]!) + ': ' + fmt(it.ww[k]!) + ' (' + a.partNames[it.wp[k]!] +
      (it.wc[k] ? '' : ', not content') + ')';
    box.appendChild(w);
    i = it.we[k]!;
  }
  flush();
  return box;
}

function itemView(a: AttendPayload, it: AttendItemPayload, holder: HTMLElement): void {
  holder.textContent = '';
  const verdict = it.correct === null ? 'not scored' : it.correct ? 'right' : 'wrong';
  holder.appendChild(
    el('p', 'meta',
      it.id + ' (' + verdict + ')' +
        (it.roles ? '; options: ' + Object.entries(it.roles).map(([p, r]) => p + ' ' + r).join(', ') : '')),
  );
  holder.appendChild(table(['part', 'share'], Object.entries(it.share).map(([p, s]) => [p, s])));
  holder.appendChild(promptView(a, it));
  const tops = el('ol', 'attn-top');
  it.top.forEach((k) =>
    tops.appendChild(
      el('li', null,
        it.prompt.slice(it.ws[k]!, it.we[k]!) + ' — ' + fmt(it.ww[k]!) + ' (' + a.partNames[it.wp[k]!] + ')'),
    )
  );
  const det = el('details');
  det.appendChild(el('summary', null, 'Top ' + it.top.length + ' words of this item'));
  det.appendChild(tops);
  holder.appendChild(det);
}

function renderRun(page: Page, run: RunPayload, ri: number, cell: HTMLElement): void {
  const a = run.attend!;
  const ls = a.layers;
  const layerText = ls.length > 2 && ls[ls.length - 1]! - ls[0]! === ls.length - 1
    ? ls[0] + '–' + ls[ls.length - 1]
    : ls.join(', ');
  cell.appendChild(
    el('p', 'meta',
      a.attention + ' attention; layers ' + layerText + ' (' + ls.length + '), ' + (a.heads ?? '?') +
        ' heads each, averaged; position: ' + a.position +
        '; items: ' + a.counts.items + ' (right ' + a.counts.right + ', wrong ' + a.counts.wrong + ', not scored ' +
        a.counts.unscored + ')'),
  );
  cell.appendChild(
    el('p', 'meta',
      'Attention mass outside the content parts (chat template, answer prefix, special tokens such as BOS): ' +
        ci(a.nonContentMass) + '. Shares below are of the rest.'),
  );
  const t = a.roles ?? a.parts;
  cell.appendChild(el('h3', null, a.roles ? 'Share per prompt part, options by role' : 'Share per prompt part'));
  cell.appendChild(table(['part', 'all', 'right', 'wrong', 'wrong − right'], shareRows(t)));
  if (a.roles) {
    const det = el('details');
    det.appendChild(el('summary', null, 'By option letter'));
    det.appendChild(table(['part', 'all', 'right', 'wrong', 'wrong − right'], shareRows(a.parts)));
    cell.appendChild(det);
  }
  const id = page.figures.register(page.figureId(ri, 'attention-shares'), () => sharesFigure(run, a, t));
  const div = el('div', 'fig');
  cell.appendChild(div);
  page.ready.push(page.figures.draw(id, div));

  cell.appendChild(el('h3', null, 'Top ' + a.top + ' keywords'));
  const groups = (['wrong', 'right', 'all'] as const).filter((g) => a.keywords[g].length);
  const kwHolder = el('div');
  if (groups.length > 1) {
    const sel = el('select');
    groups.forEach((g) => {
      const o = el('option', null, g + ' items');
      o.value = g;
      sel.appendChild(o);
    });
    sel.addEventListener('change', () => {
      kwHolder.textContent = '';
      kwHolder.appendChild(keywordTable(a, sel.value as 'all' | 'right' | 'wrong'));
    });
    cell.appendChild(sel);
  }
  if (groups.length) kwHolder.appendChild(keywordTable(a, groups[0]!));
  cell.appendChild(kwHolder);

  cell.appendChild(el('h3', null, 'Items'));
  if (!a.items.length) {
    cell.appendChild(el('p', 'missing', 'no items'));
    return;
  }
  const sel = el('select');
  a.items.forEach((it, k) => {
    const o = el('option', null, it.id + (it.correct === null ? '' : it.correct ? ' (right)' : ' (wrong)'));
    o.value = String(k);
    sel.appendChild(o);
  });
  cell.appendChild(sel);
  if (a.omitted) cell.appendChild(el('span', 'hint', a.omitted + ' more items in ' + a.itemsFile));
  const holder = el('div', 'attn-item');
  cell.appendChild(holder);
  sel.addEventListener('change', () => itemView(a, a.items[Number(sel.value)]!, holder));
  itemView(a, a.items[0]!, holder);
}

export const attentionSection: Section = {
  title: 'Attention',
  id: 'attention',
  visible: (page) => page.runs.some((r) => !!r.attend),
  render(page, root) {
    root.appendChild(
      el('p', 'meta',
        'Attention of the answering position over the prompt, all heads of the chosen layers averaged, aggregated to words (lobes attend; SocialEval App. C.4).'),
    );
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run, ri) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      if (!run.attend)
        cell.appendChild(
          el('p', 'missing', run.name + ': no attention results (run lobes attend … --out RUN/attend).'),
        );
      else renderRun(page, run, ri, cell);
    });
  },
};
