/** Holm's adjustment written out for the tests, independent of src/util/stats.ts (test/util/families-declared.test.ts, test/ablate/dose.test.ts). */
/** Holm step-down, written out: sort the m finite p's, multiply the k-th smallest by m − k, keep the running maximum, cap at 1. */
export function holmRef(p: readonly (number | null | undefined)[]): (number | null)[] {
  const idx = p.map((v, i) => [v, i] as const).filter(([v]) => v !== null && v !== undefined && Number.isFinite(v)) as [
    number,
    number,
  ][];
  idx.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const m = idx.length;
  const out: (number | null)[] = p.map(() => null);
  let run = 0;
  idx.forEach(([v, i], k) => {
    run = Math.max(run, Math.min(1, (m - k) * v));
    out[i] = run;
  });
  return out;
}
