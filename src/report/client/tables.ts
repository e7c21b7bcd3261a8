/**
 * Navigation of a long page: the contents bar, and tables that sort, filter and fold.
 *
 * - `contentsBar` fills the sticky <nav id="toc"> with one link per section the page shows (and
 *   one back to the verdicts); the link of the section being read is marked as the page scrolls.
 * - `enhanceTables` gives every data table of `root` sortable columns (click a header: ascending,
 *   again: descending; numbers compare as numbers, "—" and empty cells last), and folds a table
 *   of more than FOLD_ROWS rows into a closed <details> whose summary counts its rows, with a
 *   filter box over its rows (a table its section already folds gets the filter only). Tables drawn later (a section redraws one when its pair changes)
 *   get the same through a MutationObserver. The verdict tables (the first screen) are left as
 *   they are; the provenance key/value tables fold but keep their order.
 *
 * Everything is plain DOM, and text reaches the page through textContent only.
 */
import { el } from './dom.js';

/** Tables with more body rows than this are folded. */
export const FOLD_ROWS = 12;

/** The verdict tables are the first screen: never folded or reordered. */
const SKIP = ['verdict'];
/** Key/value tables: folded when long, but not sorted (their order is the reading order). */
const UNSORTED = ['prov'];

/** The sticky contents bar: a link per rendered section of `app`, and one to the top of the page. */
export function contentsBar(nav: HTMLElement, app: HTMLElement): void {
  const sections = Array.from(app.querySelectorAll<HTMLElement>(':scope > section[id]'));
  nav.replaceChildren();
  if (!sections.length) {
    nav.hidden = true;
    return;
  }
  const links = new Map<string, HTMLAnchorElement>();
  const top = el('a', 'toc-top', 'Verdicts');
  top.href = '#top';
  nav.appendChild(top);
  for (const s of sections) {
    const h = s.querySelector('h2');
    const a = el('a', null, h ? h.textContent : s.id);
    a.href = '#' + s.id;
    nav.appendChild(a);
    links.set(s.id, a);
  }
  // Mark the section whose top has most recently passed under the bar.
  const mark = () => {
    const y = nav.getBoundingClientRect().bottom + 60;
    let current: string | null = null;
    for (const s of sections) if (s.getBoundingClientRect().top <= y) current = s.id;
    links.forEach((a, id) => a.classList.toggle('current', id === current));
  };
  window.addEventListener('scroll', mark, { passive: true });
  mark();
}

/** Make every data table under `root` sortable, and fold the long ones; later tables too. */
export function enhanceTables(root: HTMLElement): void {
  const run = () => root.querySelectorAll('table').forEach((t) => enhanceTable(t));
  run();
  new MutationObserver(run).observe(root, { childList: true, subtree: true });
}

/** One table: sortable headers, and a fold with a filter when it is long. Idempotent. */
export function enhanceTable(t: HTMLTableElement): void {
  if (t.dataset.enhanced || SKIP.some((c) => t.classList.contains(c))) return;
  t.dataset.enhanced = '1';
  const body = t.tBodies[0];
  const head = t.tHead?.rows[0];
  if (!body || !head) return;
  const rows = body.rows.length;
  const merged = Array.from(body.rows).some((r) => Array.from(r.cells).some((c) => c.rowSpan > 1));
  if (rows > 1 && !merged && !UNSORTED.some((c) => t.classList.contains(c))) sortable(t, head, body);
  if (rows > FOLD_ROWS) fold(t, body, head);
}

/** The sort key of a cell's text: a number where the text starts with one (a value, a CI's point, a p), else the text. */
export function sortKey(text: string): number | string | null {
  const s = text.trim();
  if (!s || s === '—' || s === '-') return null;
  const m = /^[−+-]?(\d+\.?\d*|\.\d+)(e[−+-]?\d+)?%?/i.exec(s);
  if (m) return Number(m[0].replace(/−/g, '-').replace('%', ''));
  return s.toLowerCase();
}

/** Compare two keys: numbers before text, missing last (in either direction). */
function compareKeys(a: number | string | null, b: number | string | null, dir: number): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return (a - b) * dir;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a.localeCompare(b) * dir;
}

function sortable(t: HTMLTableElement, head: HTMLTableRowElement, body: HTMLTableSectionElement): void {
  t.classList.add('sortable');
  Array.from(head.cells).forEach((th, col) => {
    th.tabIndex = 0;
    th.title = 'sort by this column';
    const sort = () => {
      const dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
      Array.from(head.cells).forEach((c) => c.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
      const keyed = Array.from(body.rows).map((r, i) => ({ r, i, k: sortKey(r.cells[col]?.textContent ?? '') }));
      // stable: equal keys keep their order
      keyed.sort((x, y) => compareKeys(x.k, y.k, dir) || x.i - y.i);
      keyed.forEach(({ r }) => body.appendChild(r));
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        sort();
      }
    });
  });
}

function fold(t: HTMLTableElement, body: HTMLTableSectionElement, head: HTMLTableRowElement): void {
  const n = body.rows.length;
  const names = Array.from(head.cells).map((c) => (c.textContent ?? '').trim()).filter(Boolean);
  const cols = names.length ? ` (${names.slice(0, 3).join(', ')}${names.length > 3 ? ', …' : ''})` : '';
  const bar = el('div', 'filter');
  const input = el('input');
  input.type = 'search';
  input.placeholder = 'filter rows';
  input.setAttribute('aria-label', 'filter the rows of this table');
  const count = el('span', 'hint', `${n} rows`);
  bar.append(input, count);
  input.addEventListener('input', () => {
    const q = input.value.trim().toLowerCase();
    let shown = 0;
    Array.from(body.rows).forEach((r) => {
      const hit = !q || (r.textContent ?? '').toLowerCase().includes(q);
      r.hidden = !hit;
      if (hit) shown++;
    });
    count.textContent = q ? `${shown} of ${n} rows` : `${n} rows`;
  });
  // A table a section already folds (its own <details>) gets the filter, not a second fold.
  if (t.parentElement?.closest('details')) {
    t.before(bar);
    return;
  }
  const box = el('details', 'fold');
  const summary = el('summary', null, `Table of ${n} rows${cols}: show`);
  box.appendChild(summary);
  t.replaceWith(box);
  box.append(bar, t);
  box.addEventListener('toggle', () => {
    summary.textContent = `Table of ${n} rows${cols}: ${box.open ? 'hide' : 'show'}`;
  });
}
