/** Writing CSV (RFC 4180): comma-separated fields, quoted when they hold a comma, quote or line break. */

/** One field: empty for null/undefined; quoted, with quotes doubled, when needed. */
export function csvField(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
