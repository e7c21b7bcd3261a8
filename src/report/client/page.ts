/**
 * What every section of the page shares: the payload, the figure registry, group colours, the
 * promises the page waits for before it is ready, and the hooks a section can give
 * `window.lobesReport`.
 */
import type { PagePayload, RunPayload } from '../types.js';
import { Figures } from './figures.js';

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf',
  '#bcbd22', '#7f7f7f', '#393b79', '#ad494a', '#637939', '#8c6d31', '#7b4173', '#3182bd', '#e6550d', '#31a354',
  '#756bb1', '#636363'];

/** Hooks for `window.lobesReport` that a section may replace (the defaults do nothing). */
export interface PageHooks {
  /** Select pair k (0-based) of the page's group pairs. */
  showPair(k: number): Promise<void>;
  /** The page's group pairs, [a, b] each. */
  pairs(): string[][];
}

export interface Page {
  data: PagePayload;
  runs: RunPayload[];
  /** Two runs side by side (figure ids get a `runN-` prefix). */
  compare: boolean;
  figures: Figures;
  /** Colour of a group, the same in every run of the page. */
  colour(group: string): string;
  /** Figure id for run index ri: `name` alone on a one-run page, `run{ri+1}-name` when comparing. */
  figureId(ri: number, name: string): string;
  /** Promises that must settle before the page counts as ready (initial figures drawn). */
  ready: Promise<unknown>[];
  hooks: PageHooks;
}

/** The shared state of a page showing `data`. */
export function createPage(data: PagePayload): Page {
  const runs = data.runs;
  const compare = runs.length > 1;
  // Colours by group name in order of first appearance (scatter groups, then wanda groups, run by run).
  const colours = new Map<string, string>();
  runs.forEach((r) => {
    const gs = (r.scatter ? r.scatter.groups : []).concat(r.wanda ? r.wanda.groups : []);
    gs.forEach((g) => {
      if (!colours.has(g)) colours.set(g, PALETTE[colours.size % PALETTE.length]!);
    });
  });
  return {
    data,
    runs,
    compare,
    figures: new Figures(),
    colour: (g) => colours.get(g)!,
    figureId: (ri, name) => (compare ? 'run' + (ri + 1) + '-' : '') + name,
    ready: [],
    hooks: {
      showPair: () => Promise.resolve(),
      pairs: () => [],
    },
  };
}
