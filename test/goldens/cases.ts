/**
 * The cases of a golden list, refusing an empty or missing one: a loop over no goldens
 * passes while checking nothing (a regenerated file that lost a section, a renamed key).
 */
export function cases<T = any>(goldens: Record<string, unknown>, key: string, min = 1): T[] {
  const v = goldens[key];
  if (!Array.isArray(v))
    throw new Error(`goldens have no list ${JSON.stringify(key)} (keys: ${Object.keys(goldens).join(', ')})`);
  if (v.length < min)
    throw new Error(
      `goldens list ${JSON.stringify(key)} has ${v.length} case${v.length === 1 ? '' : 's'}, at least ${min} expected`,
    );
  return v as T[];
}
