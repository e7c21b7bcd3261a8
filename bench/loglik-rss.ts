/**
 * Peak RSS of the log-likelihood engine (src/runtime/loglik.ts) over one call with N requests
 * shaped like IAE cloze items (a context of C random tokens, 4 continuations of 20 tokens),
 * through the KV cache when the model has one. Run it at two N: what the engine holds must not
 * grow with N.
 *
 *   npx tsx bench/loglik-rss.ts MODEL_DIR N [C]
 */
import { openLoglikEngine } from '../src/runtime/loglik.js';
const [model, nStr, ctxStr] = process.argv.slice(2);
const N = Number(nStr), C = Number(ctxStr ?? 900);
let seed = 1;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const tok = () => 100 + Math.floor(rnd() * 40000);
const reqs = Array.from({ length: N },
  () => ({ context: Array.from({ length: C }, tok),
    continuations: Array.from({ length: 4 }, () => Array.from({ length: 20 }, tok)) }));
const e = await openLoglikEngine(model, { device: 'cpu', cache: 'auto', batch: 8 });
let peak = 0;
const t = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 50);
const t0 = process.cpuUsage();
await e.score(reqs);
clearInterval(t);
const c = process.cpuUsage(t0);
console.log(
  JSON.stringify({ N, C, usesCache: e.usesCache, maxRSS_MB: Math.round(process.resourceUsage().maxRSS / 1024),
    cpu_s: (c.user + c.system) / 1e6 }),
);
await e.close();
