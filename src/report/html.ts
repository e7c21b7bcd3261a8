/**
 * Assemble one self-contained report page: inlined Plotly, the data as a JSON block
 * (every `<` written as \u003c, so no string can close the block), and the page script
 * (client/, bundled: client-bundle.ts).
 * Nothing from a run is ever interpolated into HTML or JavaScript source.
 */
import { readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { LOBES_VERSION } from '../version.js';
import { clientScript } from './client-bundle.js';
import type { PagePayload } from './types.js';

export type { PagePayload } from './types.js';

/**
 * The Plotly build inlined into every page: Plotly's official "cartesian" partial bundle, minified.
 * It has every trace type a page draws (scatter, with error bars, and heatmap) at about 1.5 MB,
 * against about 10 MB for the unminified full bundle, so a page parses and starts much faster.
 */
export const PLOTLY_PACKAGE = 'plotly.js-cartesian-dist-min';
const PLOTLY_FILE = 'plotly-cartesian.min.js';

let plotlyCache: string | null = null;

/** The Plotly bundle's source, made safe to sit inside an inline <script> element. */
export function plotlySource(): string {
  if (plotlyCache !== null) return plotlyCache;
  const require = createRequire(import.meta.url);
  let file: string;
  try {
    file = path.join(path.dirname(require.resolve(`${PLOTLY_PACKAGE}/package.json`)), PLOTLY_FILE);
  } catch {
    throw new LobesError(`cannot find the ${PLOTLY_PACKAGE} package`, { hint: 'reinstall lobes (npm install)' });
  }
  if (!existsSync(file)) {
    throw new LobesError(`the ${PLOTLY_PACKAGE} package has no ${PLOTLY_FILE}`, { file,
      hint: 'reinstall lobes (npm install)' });
  }
  let src = readFileSync(file, 'utf8');
  // A literal "</script" or "<!--" would end or confuse the inline script element.
  src = src.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
  plotlyCache = src;
  return src;
}

/** JSON for a <script type="application/json"> block: safe against `</script>` and comment tricks. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const CSS = `
:root { --fg: #1d232b; --muted: #5b6572; --line: #d9dde3; --warn-bg: #fff4d6; --warn-line: #e0b44c; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0; background: #fafbfc; }
header { padding: 18px 28px 6px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 26px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 10px 0 6px; }
h4 { font-size: 14px; margin: 14px 0 6px; }
main { padding: 0 28px 40px; }
.cols { display: grid; gap: 18px; }
.fig { background: #fff; box-shadow: 0 0 0 1px var(--line); border-radius: 4px; margin: 1px 0 12px; }
@media print { .fig, table { break-inside: avoid; } header, main { padding-left: 0; padding-right: 0; } }
.warning { background: var(--warn-bg); border-left: 4px solid var(--warn-line); padding: 8px 12px; margin: 8px 0; }
.meta, .hint, .missing { color: var(--muted); }
.summary { background: #fff; border: 1px solid var(--line); border-left: 4px solid #4c7be0; padding: 6px 12px; margin: 8px 0; }
.summary p { margin: 4px 0; }
details.summary > summary { cursor: pointer; color: var(--muted); }
.verdicts { max-width: 100%; overflow-x: auto; }
table.verdict { width: 100%; table-layout: auto; }
table.verdict caption { text-align: left; font-weight: 600; padding: 2px 0 4px; }
table.verdict td { overflow-wrap: break-word; }
table.verdict td:first-child { min-width: 22ch; }
table.verdict td:last-child, table.verdict td.v { font-weight: 600; }
td.v-pass { color: #1a7f37; }
td.v-fail { color: var(--muted); }
td.v-not-testable, td.v-degenerate, td.v-untested { color: #9a6700; }
.hint { margin-left: 12px; font-size: 12px; }
.pairbar { margin: 6px 0 10px; }
select { font: inherit; padding: 3px 6px; max-width: 60ch; }
table { border-collapse: collapse; margin: 6px 0 10px; background: #fff; font-size: 13px; }
/* a table wider than its box scrolls inside it (on a comparison page, in its run's column) */
main table { display: block; width: max-content; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.prov td:first-child { color: var(--muted); white-space: nowrap; }
table.prov td { overflow-wrap: anywhere; }
table.prov thead { display: none; }
details { margin: 6px 0; }
/* the contents bar stays at the top while the page scrolls; anchors land below it */
nav#toc { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid var(--line); padding: 6px 28px; white-space: nowrap; overflow-x: auto; font-size: 13px; }
nav#toc a { color: var(--muted); text-decoration: none; margin-right: 16px; }
nav#toc a:hover, nav#toc a.current { color: var(--fg); text-decoration: underline; }
[id] { scroll-margin-top: 44px; }
@media print { nav#toc { display: none; } }
details.fold > summary { cursor: pointer; color: var(--muted); }
details.fold .filter { margin: 4px 0; }
details.fold .filter input { font: inherit; padding: 2px 6px; width: 24ch; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; font-size: 10px; }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; font-size: 10px; }
.cols > div { min-width: 0; overflow-x: auto; }
.attn-text { white-space: pre-wrap; background: #fff; border: 1px solid var(--line); padding: 10px 12px; line-height: 1.7; max-height: 60vh; overflow-y: auto; }
.attn-w { border-radius: 2px; }
.attn-tmpl { color: var(--muted); }
.attn-part { display: inline-block; font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; margin: 0 4px 0 0; }
`;

/** The whole page. */
export function renderPage(payload: PagePayload): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="generator" content="lobes ${LOBES_VERSION.replace(/[^0-9A-Za-z.+-]/g, '')}">`,
    '<title>lobes report</title>',
    `<style>${CSS}</style>`,
    `<script>${plotlySource()}</script>`,
    '</head><body>',
    '<header id="top"><h1 id="title"></h1><div id="notes"></div></header>',
    '<nav id="toc" aria-label="sections"></nav>',
    '<main id="app"></main>',
    `<script type="application/json" id="lobes-data">${jsonForScript(payload)}</script>`,
    `<script>${clientScript().replace(/<\/(script)/gi, '<\\/$1')}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
