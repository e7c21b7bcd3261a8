/** Layer selections (`--layers`): which decoder layers a command reads. */
import { UsageError } from '../util/errors.js';

/** Parse a layer selection: `all`, `last:N`, or a comma list of layers and ranges (`3,5-7`); 0-based. */
export function parseLayerSelection(spec: string, layers: number): number[] {
  const s = spec.trim();
  if (s === 'all') return Array.from({ length: layers }, (_, i) => i);
  const m = /^last:(\d+)$/.exec(s);
  if (m) {
    const n = Number(m[1]);
    if (n < 1) throw new UsageError(`--layers last:${n} selects no layer`);
    return Array.from({ length: Math.min(n, layers) }, (_, i) => layers - Math.min(n, layers) + i);
  }
  const out = new Set<number>();
  for (const part of s.split(',')) {
    const r = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!r) throw new UsageError(`--layers: cannot read ${JSON.stringify(part)} (use all, last:N, or layers like 0,3,10-19)`);
    const a = Number(r[1]);
    const b = r[2] === undefined ? a : Number(r[2]);
    if (b < a) throw new UsageError(`--layers: range ${part} runs backwards`);
    for (let l = a; l <= b; l++) {
      if (l >= layers) throw new UsageError(`--layers: layer ${l} does not exist (the model has layers 0..${layers - 1})`);
      out.add(l);
    }
  }
  if (out.size === 0) throw new UsageError('--layers selects no layer');
  return [...out].sort((x, y) => x - y);
}
