/** `window.lobesReport`: what figure export (../index.ts) and the browser tests call on a page. */
import type { ImageRequest } from './figures.js';

export interface LobesReportApi {
  /** True once the initial figures are drawn. */
  ready: boolean;
  /** performance.now() when the page script started. */
  startMs: number;
  /** performance.now() when the page became ready. */
  readyMs?: number;
  /** Every figure of the page, drawn or not, in page order. */
  figureIds(): string[];
  /** A figure's Plotly spec ({data, layout}), or null when there is no such figure. */
  figure(id: string): PlotlyFigure | null;
  /** Data URL of the figure rendered off screen at the requested size. */
  toImage(id: string, opts: ImageRequest): Promise<string>;
  /** Select pair k (0-based) of the neuron-region section. */
  showPair(k: number): Promise<void>;
  /** The page's pairs of groups, [a, b] each. */
  pairs(): string[][];
}

declare global {
  interface Window {
    lobesReport: LobesReportApi;
  }
}
