/**
 * Per-iteration cost of the t-SNE repulsion, one thread: FFT interpolation by phase
 * (src/tsne/interp.ts) against the Barnes–Hut group walk (src/tsne/quadtree.ts), on a
 * t-SNE embedding read from .npy (or Gaussian points), after warm-up, as CPU milliseconds
 * (process.cpuUsage, less sensitive to a shared machine than wall time). The kernel's spectrum
 * (computed again only when the grid's size or box width changes: every iteration early, rarely late)
 * is timed apart, as spectrumMs.
 *
 *   node --import tsx bench/tsne-interp.ts [EMBEDDING.npy] [--n 20000] [--scale 25] [--reps 10]
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { InterpRepulsion, interpWork } from '../src/tsne/interp.js';
import { blockCount } from '../src/tsne/fft-block.js';
import { QuadTree, repulsionAll } from '../src/tsne/quadtree.js';
import { Rng } from '../src/util/rng.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { n: { type: 'string', default: '20000' }, scale: { type: 'string', default: '25' },
    reps: { type: 'string', default: '10' } },
});
let Y: Float64Array;
let n: number;
if (positionals[0]) {
  const m = readNpy(positionals[0]);
  n = m.rows;
  Y = Float64Array.from(m.data);
} else {
  n = Number(values.n);
  const rng = new Rng(1);
  Y = new Float64Array(2 * n).map(() => rng.normal() * Number(values.scale));
}
const reps = Number(values.reps);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const F = new Float64Array(2 * n);
const Zi = new Float64Array(n);
const rep = new InterpRepulsion(n);
const phases: Record<string, number> = { size: 0, spread: 0, pass1: 0, middle: 0, pass2: 0, interpolate: 0 };
let spectrum = 0;
for (let r = -2; r < reps; r++) {
  let t = cpu();
  const lap = (k: string) => {
    const u = cpu();
    if (r >= 0) phases[k] += (u - t) / reps;
    t = u;
  };
  const g = rep.size(Y);
  lap('size');
  rep.spread(Y);
  lap('spread');
  interpWork.pass1(g, 0, blockCount(g.M));
  lap('pass1');
  interpWork.middle(g, 0, blockCount(g.L));
  lap('middle');
  interpWork.pass2(g, 0, blockCount(g.M));
  lap('pass2');
  interpWork.interpolate(g, Y, 0, n, F, Zi);
  lap('interpolate');
  interpWork.kernelSpectrum(g);
  if (r >= 0) spectrum += (cpu() - t) / reps;
}
const tree = new QuadTree(n);
let bh = 0;
for (let r = -2; r < reps; r++) {
  const t = cpu();
  tree.build(Y, n);
  repulsionAll(tree, Y, 0.5, F, Zi);
  if (r >= 0) bh += (cpu() - t) / reps;
}
let lo = Infinity;
let hi = -Infinity;
for (const v of Y) {
  lo = Math.min(lo, v);
  hi = Math.max(hi, v);
}
const fft = Object.values(phases).reduce((a, b) => a + b, 0);
const f = (v: number) => Math.round(v * 10) / 10;
process.stdout.write(
  JSON.stringify({ n, span: f(hi - lo), boxes: rep.g.nb, fftSize: rep.g.L, fftMs: f(fft), spectrumMs: f(spectrum),
    phasesMs: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, f(v)])), barnesHutMs: f(bh),
    fftOverBh: f(fft / bh) }) + '\n',
);
