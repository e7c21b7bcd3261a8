/**
 * The item groups of a wanda analysis (each sample's world tree, `--group`): which axis holds
 * them, their codes, and how the label null shuffled within them, as settings.json records it.
 * The null itself shuffles in src/wanda/analyze.ts (labellingDesign).
 */
import { UsageError, opt } from '../util/errors.js';
import { GROUP_AXIS } from '../data/generic.js';
import type { RunReader } from '../store/types.js';
import type { WandaSettings } from './types.js';
import { labellingDesign } from './analyze.js';

/**
 * The axis of the item groups (`group`; by default item_group when the run has it and it is not
 * `by`; null: none) and each sample's group, numbered in order of first appearance.
 */
export function itemGroupsOf(reader: RunReader, by: string,
  group: string | null | undefined): { axis: string | undefined; itemGroups: Int32Array | null }
{
  const axes = reader.labelAxes();
  const axis = group === null
    ? undefined
    : group ?? (axes.includes(GROUP_AXIS) && by !== GROUP_AXIS ? GROUP_AXIS : undefined);
  if (axis === undefined) return { axis, itemGroups: null };
  if (!axes.includes(axis))
    throw new UsageError(
      `${opt('group', axis)}: the run has no label axis ${JSON.stringify(axis)} (axes: ${axes.join(', ')})`,
      "name the axis that holds each item's group",
    );
  if (axis === by)
    throw new UsageError(`${opt('group', axis)}: the groups cannot be the labels compared`, 'group by another axis');
  const index = new Map<string, number>();
  return { axis,
    itemGroups: Int32Array.from(reader.labels(axis),
      (g) => index.get(g) ?? (index.set(g, index.size), index.size - 1)) };
}

/** The item grouping of the label null as settings.json records it (the used samples only: a label ''). */
export function groupSettings(axis: string, labels: string[],
  itemGroups: Int32Array): NonNullable<WandaSettings['group']>
{
  const used = labels.flatMap((l, i) => (l === '' ? [] : [i]));
  const codes = new Map<string, number>();
  const y = Int32Array.from(used, (i) => codes.get(labels[i]!) ?? (codes.set(labels[i]!, codes.size), codes.size - 1));
  const g = Int32Array.from(used, (i) => itemGroups[i]!);
  const d = labellingDesign(y, g);
  return { axis, groups: new Set(g).size, null: 'within-groups',
    exchangeable: d.kind === 'within-groups' ? d.exchangeable : used.length };
}
