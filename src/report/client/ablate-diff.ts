/**
 * B − A of two ablations' effect matrices (no DOM: the page script and the tests share it).
 * A cell's effect is its `excess`, delta − mean null delta; the difference is taken on the
 * regions and labels both ablations have, in A's order, and is null where either lacks the cell.
 */
import type { AblatePayload } from '../types.js';

export interface AblateDiff {
  regions: string[];
  labels: string[];
  /** z[region][label] = excess(B) − excess(A), or null. */
  z: (number | null)[][];
}

export function ablateDifference(a: AblatePayload, b: AblatePayload): AblateDiff | null {
  const regions = a.regions.filter((r) => b.regions.includes(r));
  const labels = a.labels.filter((l) => b.labels.includes(l));
  if (!regions.length || !labels.length) return null;
  const cell = (p: AblatePayload, r: string, l: string) => p.cells.find((c) => c.region === r && c.label === l);
  const z = regions.map((r) =>
    labels.map((l) => {
      const ca = cell(a, r, l);
      const cb = cell(b, r, l);
      return ca && cb ? cb.excess - ca.excess : null;
    })
  );
  return { regions, labels, z };
}

/** The matrix of one ablation: z[region][label] = excess, or null for a cell not measured. */
export function excessMatrix(p: AblatePayload): (number | null)[][] {
  return p.regions.map((r) =>
    p.labels.map((l) => p.cells.find((c) => c.region === r && c.label === l)?.excess ?? null)
  );
}
