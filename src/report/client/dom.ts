/**
 * Building page elements. Every string from the payload reaches the page through textContent,
 * never as HTML: nothing here (or anywhere in the page script) parses markup.
 */
import { fmt } from './format.js';

/** A new element with an optional class and text (set as textContent). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: unknown): HTMLElementTagNameMap[K] {
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
    row.forEach((c) => r.appendChild(el('td', typeof c === 'number' ? 'num' : null, typeof c === 'number' ? fmt(c) : c)));
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
