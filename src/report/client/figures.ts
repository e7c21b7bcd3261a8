/**
 * Every figure of the page by id. A figure is registered with a function that builds its Plotly
 * spec, and built only when drawn or exported, so a page with many pairs draws only what is shown.
 */
import { el } from './dom.js';

interface Entry {
  build: () => PlotlyFigure;
  div: HTMLElement | null;
}

export interface ImageRequest {
  format: string;
  width: number;
  height: number;
}

export class Figures {
  private readonly figs = new Map<string, Entry>();

  /** Register figure `id` (ids keep their registration order); returns the id. */
  register(id: string, build: () => PlotlyFigure): string {
    this.figs.set(id, { build, div: null });
    return id;
  }

  /** Every registered id, drawn or not. */
  ids(): string[] {
    return [...this.figs.keys()];
  }

  /** The spec of figure `id`, or null when there is none. */
  spec(id: string): PlotlyFigure | null {
    const f = this.figs.get(id);
    return f ? f.build() : null;
  }

  /**
   * Draw figure `id` into `div` (marked data-figure=id). The div gets the figure's height as its
   * CSS height: Plotly's responsive resize (window resize, printing, a full-page capture) measures
   * the div, and a div sized only by its content would shrink to its CSS minimum. The width
   * follows the page.
   */
  draw(id: string, div: HTMLElement): Promise<HTMLElement> {
    const f = this.figs.get(id)!;
    const spec = f.build();
    f.div = div;
    div.setAttribute('data-figure', id);
    const h = spec.layout.height;
    if (typeof h === 'number') div.style.height = h + 'px';
    return Plotly.react(div, spec.data, spec.layout, { responsive: true, displaylogo: false });
  }

  /** Redraw every drawn figure at its div's present width (after the page's width changed, e.g. for printing). */
  resizeAll(): void {
    for (const f of this.figs.values())
      if (f.div && f.div.isConnected && f.div.getAttribute('data-figure')) Plotly.Plots.resize(f.div);
  }

  /** Render figure `id` off screen at the given size; resolves to the image's data URL. */
  toImage(id: string, opts: ImageRequest): Promise<string> {
    const f = this.figs.get(id);
    if (!f) return Promise.reject(new Error('no figure ' + id));
    const spec = f.build();
    const div = el('div');
    div.style.position = 'absolute';
    div.style.left = '-20000px';
    div.style.top = '0';
    div.style.width = opts.width + 'px';
    div.style.height = opts.height + 'px';
    document.body.appendChild(div);
    const layout = Object.assign({}, spec.layout, { width: opts.width, height: opts.height });
    return Plotly.newPlot(div, spec.data, layout, { staticPlot: true })
      .then((gd) => Plotly.toImage(gd, { format: opts.format, width: opts.width, height: opts.height, scale: 1 }))
      .then((url) => {
        Plotly.purge(div);
        div.remove();
        return url;
      });
  }
}
