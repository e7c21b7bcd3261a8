/**
 * The plan of an ablation's families (src/util/families.ts), fixed from the regions and the
 * items' labels before any test runs (src/ablate/stats.ts): which cells and specificity rows
 * there will be, the member ids of each family, and the adjustment of rows through their
 * declared members by name.
 */
import { declareFamily, type Family } from '../util/families.js';

/** The family of every cell (region × label with items). */
export function cellFamily(cells: readonly { region: string; minus: string | null; label: string }[]): Family {
  return declareFamily({ name: 'cells',
    claim: "zeroing a region costs a label's items more than random regions do (every region × label cell)",
    members: cells.map(cellId) });
}

/** The family of the specificity rows' t tests and ratios (every region with a target). */
export function specFamily(spec: readonly { region: string; minus: string | null }[]): Family {
  return declareFamily({ name: 'specificity',
    claim: "zeroing a region costs its own label's items more than the others' (every region)",
    members: spec.map(specId) });
}

/**
 * The adjusted p of each row, through the family's members by name (Family.adjustBy): a row the
 * plan did not declare, or a declared member without its row, throws.
 */
export function adjustRows<T>(fam: Family, rows: readonly T[], id: (r: T) => string,
  p: (r: T) => number | null | undefined): (number | null)[]
{
  const adj = fam.adjustBy(new Map(rows.map((r) => [id(r), p(r) ?? null])));
  if (rows.length !== fam.members.length)
    throw new Error(`family ${fam.name}: ${rows.length} rows for ${fam.members.length} declared members`);
  return rows.map((r) => adj.get(id(r))!);
}

/**
 * An ablation's plan (what ablationStats will test, from the regions and the items' labels
 * alone, before any test runs): a cell for every region × label with items; a specificity row
 * for every region whose target (its name) is a label with items and some item of another label.
 */
export function ablationPlan(
  x: { labels: readonly string[]; labelOf: Int32Array; regions: readonly { name: string; minus: string | null }[] },
): { cells: { region: string; minus: string | null; label: string }[];
  spec: { region: string; minus: string | null }[] }
{
  const count = x.labels.map(() => 0);
  for (const l of x.labelOf) if (l >= 0 && l < count.length) count[l]!++;
  const N = x.labelOf.length;
  const cells = x.regions.flatMap((r) =>
    x.labels.flatMap((label, l) => (count[l]! ? [{ region: r.name, minus: r.minus, label }] : []))
  );
  const spec = x.regions.filter((r) => {
    const t = x.labels.indexOf(r.name);
    return t >= 0 && count[t]! > 0 && N - count[t]! > 0;
  }).map((r) => ({ region: r.name, minus: r.minus }));
  return { cells, spec };
}

/** A cell's member id in its family: `REGION on LABEL` (`REGION ∖ MINUS` for a set difference). */
export function cellId(c: { region: string; minus: string | null; label: string }): string {
  return `${specId(c)} on ${c.label}`;
}

/** A region's member id in its family: `REGION`, or `REGION ∖ MINUS` for a set difference. */
export function specId(s: { region: string; minus: string | null }): string {
  return s.minus ? `${s.region} ∖ ${s.minus}` : s.region;
}
