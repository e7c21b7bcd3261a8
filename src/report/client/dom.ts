/**
 * Building page elements. Every string from the payload reaches the page through textContent,
 * never as HTML: nothing here (or anywhere in the page script) parses markup.
 */
import { fmt } from './format.js';
import type { VerdictTable } from '../types.js';

/** A new element with an optional class and text (set as textContent). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null,
  text?: unknown): HTMLElementTagNameMap[K]
{
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/** A table cell: numbers are formatted and right-aligned, null leaves the cell empty. */
export type Cell = string | number | null;

/** A table with one header row. */
export function table(head: string[], rows: Cell[][], cls?: string): HTMLTableElement {
  const t = el('table', cls || 'metrics');
  const tr = el('tr');
  head.forEach((h) => tr.appendChild(el('th', null, h)));
  const th = el('thead');
  th.appendChild(tr);
  t.appendChild(th);
  const tb = el('tbody');
  rows.forEach((row) => {
    const r = el('tr');
    row.forEach((c) =>
      r.appendChild(el('td', typeof c === 'number' ? 'num' : null, typeof c === 'number' ? fmt(c) : c))
    );
    tb.appendChild(r);
  });
  t.appendChild(tb);
  return t;
}

/** A titled <section> appended to the page's main element. */
export function addSection(title: string, id?: string): HTMLElement {
  const s = el('section');
  if (id) s.id = id;
  s.appendChild(el('h2', null, title));
  document.getElementById('app')!.appendChild(s);
  return s;
}

/** A grid of `n` equal columns (one per run) appended to `parent`. */
export function columns(parent: HTMLElement, n: number): HTMLDivElement {
  const c = el('div', 'cols');
  c.style.gridTemplateColumns = 'repeat(' + n + ', minmax(0, 1fr))';
  parent.appendChild(c);
  return c;
}

/** A verdict table (src/report/verdict.ts): each question links to its section, the verdict cell carries its status as a class. */
export function verdictTable(t: VerdictTable, caption: string): HTMLElement {
  const box = el('div', 'verdicts');
  const tab = el('table', 'verdict');
  tab.setAttribute('data-axis', t.axis);
  tab.appendChild(el('caption', null, caption));
  const head = el('tr');
  ['Question (analysis)', 'Value [95% CI]', 'Chance', 'Null mean [95% band]', 'Adjusted p (family)', 'Verdict'].forEach(
    (h) => head.appendChild(el('th', null, h)),
  );
  const th = el('thead');
  th.appendChild(head);
  tab.appendChild(th);
  const tb = el('tbody');
  t.rows.forEach((r) => {
    const tr = el('tr');
    const q = el('td');
    const a = el('a', null, r.question);
    a.href = '#' + r.anchor;
    q.appendChild(a);
    tr.appendChild(q);
    [r.value, r.chance, r.nul, r.p].forEach((c) => tr.appendChild(el('td', null, c)));
    tr.appendChild(el('td', 'v-' + r.status, r.verdict));
    tb.appendChild(tr);
  });
  tab.appendChild(tb);
  box.appendChild(tab);
  return box;
}

/**
 * The verdict tables of two runs on one axis as one table, rows matched by question (A's order,
 * then B's own): per run its value, its null and adjusted p, and its verdict, A before B.
 */
export function compareVerdictTable(a: VerdictTable | null, b: VerdictTable | null, names: [string, string],
  caption: string): HTMLElement
{
  const box = el('div', 'verdicts');
  const tab = el('table', 'verdict compare');
  tab.setAttribute('data-axis', (a || b)!.axis);
  tab.appendChild(el('caption', null, caption));
  const head = el('tr');
  ['Question (analysis)', 'Chance', 'A: value [95% CI]', 'A: null; adjusted p', 'A', 'B: value [95% CI]',
    'B: null; adjusted p', 'B'].forEach((h, i) => {
      const c = el('th', null, h);
      if (i === 4 || i === 7) c.title = names[i === 4 ? 0 : 1];
      head.appendChild(c);
    });
  const th = el('thead');
  th.appendChild(head);
  tab.appendChild(th);
  const tb = el('tbody');
  const qs: string[] = [];
  [a, b].forEach((t) =>
    (t ? t.rows : []).forEach((r) => {
      if (!qs.includes(r.question)) qs.push(r.question);
    })
  );
  qs.forEach((q) => {
    const ra = a ? a.rows.find((r) => r.question === q) : undefined;
    const rb = b ? b.rows.find((r) => r.question === q) : undefined;
    const tr = el('tr');
    const qc = el('td');
    const link = el('a', null, q);
    link.href = '#' + (ra || rb)!.anchor;
    qc.appendChild(link);
    tr.appendChild(qc);
    tr.appendChild(el('td', null, (ra || rb)!.chance));
    [ra, rb].forEach((r) => {
      tr.appendChild(el('td', null, r ? r.value : '(not in this run)'));
      tr.appendChild(el('td', null, r ? [r.nul && 'null ' + r.nul, r.p && 'p ' + r.p].filter(Boolean).join('; ') : ''));
      tr.appendChild(el('td', r ? 'v v-' + r.status : 'v', r ? r.verdict : ''));
    });
    tb.appendChild(tr);
  });
  tab.appendChild(tb);
  box.appendChild(tab);
  return box;
}
