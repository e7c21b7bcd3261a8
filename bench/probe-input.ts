/**
 * The input of the probe benches (bench/probe-inner-fits.ts, bench/probe-warm-start.ts): the
 * labels file's classes as ids, and the rows of an .npy matrix (mode 'orig') or of a cluster
 * coords.csv's two map columns (any other mode).
 */
import { readFileSync } from 'node:fs';
import { readNpy } from '../src/cluster/npy.js';

export function probeInput(file: string, labelsFile: string,
  mode: string): { X: Float64Array; n: number; d: number; y: Int32Array; K: number }
{
  const names = readFileSync(labelsFile, 'utf8').split('\n').filter((s) => s.length);
  const classes = [...new Set(names)].sort();
  const y = Int32Array.from(names, (s) => classes.indexOf(s));
  if (mode === 'orig') {
    const M = readNpy(file);
    return { X: Float64Array.from(M.data), n: M.rows, d: M.cols, y, K: classes.length };
  }
  const rows = readFileSync(file, 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
  return { X: Float64Array.from(rows.flatMap((r) => [Number(r[2]), Number(r[3])])), n: rows.length, d: 2, y,
    K: classes.length };
}
