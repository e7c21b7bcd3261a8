import { it, expect } from 'vitest';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/write.js';
import { openLoglikEngine } from '../../src/runtime/loglik.js';
import { referenceForward, cachedParams } from '../models/reference-forward.js';

it('smoke', async () => {
  for (const name of ['tiny-llama', 'tiny-llama-past', 'tiny-llama-fp16', 'tiny-llama-q4', 'tiny-llama-opaque']) {
    const p = cachedParams(name, generatedModelParams);
    const V = p.opts.vocab;
    const ctx = [509, 17, 40, 301, 99];
    const conts = [[7, 250, 12], [5], [300, 301, 302], [44, 45, 46]];
    for (const cache of ['auto', 'off'] as const) {
      const e = await openLoglikEngine(ensureGeneratedModel(name), { device: 'cpu', cache });
      const r = await e.score([{ context: ctx, continuations: conts }]);
      conts.forEach((c, k) => {
        const ids = [...ctx, ...c].slice(0, -1);
        const f = referenceForward(p, ids);
        let s = 0;
        c.forEach((t, j) => {
          const row = f.logits.subarray((ctx.length - 1 + j) * V, (ctx.length + j) * V);
          let m = -Infinity; for (const x of row) m = Math.max(m, x);
          let z = 0; for (const x of row) z += Math.exp(x - m);
          s += row[t]! - m - Math.log(z);
        });
        console.log(name, cache, e.usesCache, k, r[0]![k]!.logprob, s);
        expect(Math.abs(r[0]![k]!.logprob - s)).toBeLessThan(name.includes('fp16') || name.includes('q4') ? 0.5 : 1e-3);
      });
      await e.close();
    }
  }
}, 120000);
