/**
 * MatMulNBits with float zero points on the CPU, before and after the session rewrite
 * (src/runtime/nbits-zp.ts), in one run: SmolLM2-135M-Instruct (Q4_1 GGUF, lobes' genai
 * conversion: every projection is MatMulNBits with float zero points), eval's scorer opened
 * with the rewrite off (LOBES_NBITS_REWRITE=0, ONNX Runtime's own kernel) and on, alternately.
 * Per repetition and variant: a prefill of P tokens, then D greedy decoding steps; prints the
 * medians, the ratios, and the largest difference between the two variants' logits.
 *
 *   node --import tsx bench/nbits-zp.ts [--gguf FILE] [--prefill 1000] [--steps 20] [--reps 3] [--threads 2]
 */
import { parseArgs } from 'node:util';
import { openScorer } from '../src/eval/engine.js';
import type { Scorer } from '../src/runtime/scorer.js';
import { resolveModel } from '../src/convert/cache.js';

const { values: v } = parseArgs({
  options: { gguf: { type: 'string' }, prefill: { type: 'string' }, steps: { type: 'string' }, reps: { type: 'string' },
    threads: { type: 'string' } },
});
const gguf = v.gguf ?? '../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf';
const P = Number(v.prefill ?? 1000);
const D = Number(v.steps ?? 20);
const reps = Number(v.reps ?? 3);
const threads = Number(v.threads ?? 2);
const dir = (await resolveModel(gguf, { layout: 'genai', log: () => {} })).dir;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function open(rewrite: boolean): Promise<Scorer> {
  process.env.LOBES_NBITS_REWRITE = rewrite ? '1' : '0';
  return openScorer(dir, { device: 'cpu', generation: true, threads });
}
const ids = Array.from({ length: P }, (_, i) => 200 + ((i * 7919) % 20000));
const res = { before: { prefill: [] as number[], step: [] as number[] },
  after: { prefill: [] as number[], step: [] as number[] } };
const first: Record<string, Float32Array> = {};
for (let r = 0; r < reps; r++) {
  for (const variant of r % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const)) {
    const sc = await open(variant === 'after');
    const t0 = performance.now();
    let x = await sc.prefill(ids, [1, 2, 3]);
    res[variant].prefill.push(performance.now() - t0);
    first[variant] ??= x.out.cand.slice();
    for (let i = 0; i < D; i++) {
      const t = performance.now();
      x = await sc.extend(x.state, [x.out.top[0]!], [1, 2, 3]);
      res[variant].step.push(performance.now() - t);
    }
    await sc.close();
  }
}
const b = res.before;
const a = res.after;
const diff = Math.max(...Array.from(first.before!, (y, i) => Math.abs(y - first.after![i]!)));
console.log(JSON.stringify({
  model: dir,
  prefillTokens: P,
  steps: D,
  reps,
  threads,
  prefillMs: { before: median(b.prefill), after: median(a.prefill) },
  stepMs: { before: median(b.step), after: median(a.step) },
  ratio: { prefill: median(b.prefill) / median(a.prefill), step: median(b.step) / median(a.step) },
  maxLogitDiff: diff,
  load: (await import('node:os')).loadavg()[0],
}));
