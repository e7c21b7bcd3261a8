/**
 * The part of Plotly's API the page script uses. Plotly is not a module here: html.ts inlines
 * the cartesian bundle in a <script> before the page script, which defines the global `Plotly`.
 */

/** A trace. `type` lists every trace type the page draws: the inlined bundle must register each. */
interface PlotlyTrace {
  type: 'scatter' | 'heatmap' | 'bar';
  [key: string]: unknown;
}

type PlotlyLayout = Record<string, unknown>;

/** A figure as Plotly takes it. */
interface PlotlyFigure {
  data: PlotlyTrace[];
  layout: PlotlyLayout;
}

interface PlotlyImageOptions {
  format: string;
  width: number;
  height: number;
  scale?: number;
}

declare const Plotly: {
  react(div: HTMLElement, data: PlotlyTrace[], layout: PlotlyLayout,
    config?: Record<string, unknown>): Promise<HTMLElement>;
  newPlot(div: HTMLElement, data: PlotlyTrace[], layout: PlotlyLayout,
    config?: Record<string, unknown>): Promise<HTMLElement>;
  toImage(gd: HTMLElement, opts: PlotlyImageOptions): Promise<string>;
  purge(div: HTMLElement): void;
  Plots: { resize(div: HTMLElement): Promise<void> };
};
