/** Number and text formatting shared by every table and figure of the page. */

/** Escape a string handed to Plotly, which reads a small HTML subset, so it shows as typed. */
export function esc(s: unknown): string {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * A figure title broken at spaces into lines of at most `max` characters (Plotly does not wrap
 * titles), and the top margin that leaves them room. `text` is already escaped for Plotly.
 */
export function wrapTitle(text: string, max: number): { title: Record<string, unknown>; top: number } {
  const wrapped = wrapWords(text, max);
  const lines = wrapped.split('<br>').length;
  // Anchored to the top of the figure, so extra lines grow into the margin, never into the plot.
  return { title: { text: wrapped, y: 1, yref: 'container', yanchor: 'top', pad: { t: 22 } }, top: 40 + 21 * lines };
}

/** Words joined into lines of at most `max` characters with Plotly's <br> (a longer word keeps a line of its own). */
export function wrapWords(text: string, max: number): string {
  const lines: string[] = [];
  let line = '';
  for (const w of text.split(' ')) {
    if (line && line.length + 1 + w.length > max) {
      lines.push(line);
      line = w;
    } else line = line ? line + ' ' + w : w;
  }
  if (line) lines.push(line);
  return lines.join('<br>');
}

/** A metric value for a table cell: '—' when absent or not finite, integers as is, else 3 to 4 significant places. */
export function fmt(v: unknown): string {
  if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '—';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return v.toFixed(0);
  if (a >= 1) return v.toFixed(3);
  if (a >= 0.001) return v.toFixed(4);
  return v.toExponential(2);
}

/** A p-value: '—' when absent, exponent notation below 0.001. */
export function fmtP(p: number | null | undefined): string {
  if (p === null || p === undefined) return '—';
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

/** A permutation p, marked "(floor)" when it is the smallest p its R permutations can give, 1/(R+1). */
export function fmtPFloor(p: number | null | undefined, floor: number | null | undefined): string {
  const t = fmtP(p);
  return p !== null && p !== undefined && floor !== null && floor !== undefined && Math.abs(p - floor) < 1e-12
    ? t + ' (floor)'
    : t;
}

/** A confidence interval as [low, high], '—' when absent. */
export function fmtCI(ci: [number, number] | null | undefined): string {
  return ci ? '[' + fmt(ci[0]) + ', ' + fmt(ci[1]) + ']' : '—';
}

/**
 * A permutation test's p as the tables show it: "no p" for a null without spread, the floor
 * marked, z and its normal approximation (marked "≈ … normal") beside it, and the verdict within
 * its family when the metrics record one ("not testable at R = 50" rather than a bare p).
 */
export function fmtTest(
  m: { p: number | null; z?: number | null; pNormal?: number | null; atFloor?: boolean; permutations?: number;
    nullSd?: number | null; verdict?: { status: string; R: number } } | null | undefined,
): string {
  if (!m) return '—';
  if (m.nullSd === 0) return 'no p (the null has no spread)';
  if (m.p === null || m.p === undefined) return '—';
  let t = fmtP(m.p) + (m.atFloor ? ' (floor, R = ' + m.permutations + ')' : '');
  if (m.z !== null && m.z !== undefined)
    t += '; z ' + m.z.toFixed(1) +
      (m.pNormal !== null && m.pNormal !== undefined
        ? ', ≈ ' + (m.pNormal < 1e-16 ? '< 1e-16' : fmtP(m.pNormal)) + ' normal approx.'
        : '');
  const v = m.verdict;
  if (v)
    t += v.status === 'pass'
      ? '; passes'
      : v.status === 'fail'
      ? '; does not pass'
      : v.status === 'not-testable'
      ? '; not testable at R = ' + v.R
      : '';
  return t;
}
