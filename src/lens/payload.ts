/** The report payload of a lens result (RunPayload.lens): the per-layer lines, and each layer's most frequent top-1 token. */
import type { LensPayload, LensResult } from './types.js';

export function lensPayload(r: LensResult): LensPayload {
  const topToken = r.layers.map((_, l) => {
    const counts = new Map<string, number>();
    for (const it of r.items) {
      const t = it.layers[l]?.top[0]?.token;
      if (t !== undefined) counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    let best = '';
    let n = 0;
    for (const [t, c] of counts) if (c > n) [best, n] = [t, c];
    return { token: best, share: r.items.length ? n / r.items.length : 0 };
  });
  return { topK: r.topK, items: r.items.length, summary: r.summary, candidates: r.candidates, topToken };
}
