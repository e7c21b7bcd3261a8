/**
 * fp16 encoding throughput (src/util/half.ts floatArrayToHalf): the Float32Array fast path that
 * the activation store (extract --dtype fp16), the random-weights control and the Llama ONNX
 * writer now share, against the general per-value conversion the store and the control used
 * before (the same function given a plain array), side by side in one process, alternating.
 *
 *   npx tsx bench/half-convert.ts [--mib 64] [--reps 7]
 *
 * Input: float32 activations-like values (normal around 0 with a heavy tail, some subnormal
 * and overflowing values), --mib MiB of them. Prints the median time of each path, the ratio,
 * checks the outputs are bit-identical, and prints the load average.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { floatArrayToHalf, floatToHalf } from '../src/util/half.js';
import { Rng } from '../src/util/rng.js';

const { values } = parseArgs({ options: { mib: { type: 'string' }, reps: { type: 'string' } } });
const N = (Number(values.mib ?? 64) * 2 ** 20) / 4;
const REPS = Number(values.reps ?? 7);
const rng = new Rng(1);
const x = new Float32Array(N);
for (let i = 0; i < N; i++) {
  const r = rng.next();
  x[i] = r < 0.001
    ? 1e5 * (rng.next() - 0.5)
    : r < 0.002
    ? 1e-6 * rng.normal()
    : rng.normal() * Math.exp(2 * rng.normal());
}
const general = (src: Float32Array, out: Uint16Array) => {
  for (let i = 0; i < src.length; i++) out[i] = floatToHalf(src[i]!);
  return out;
};
const a = new Uint16Array(N);
const b = new Uint16Array(N);
const times: { fast: number[]; general: number[] } = { fast: [], general: [] };
for (let r = 0; r < REPS; r++) {
  let t = performance.now();
  floatArrayToHalf(x, a);
  times.fast.push(performance.now() - t);
  t = performance.now();
  general(x, b);
  times.general.push(performance.now() - t);
}
let diff = 0;
for (let i = 0; i < N; i++) if (a[i] !== b[i]) diff++;
const med = (v: number[]) => [...v].sort((p, q) => p - q)[Math.floor(v.length / 2)]!;
const mb = (N * 4) / 2 ** 20;
console.log(`| path | median ms (${REPS} runs, ${mb} MiB float32) | MiB/s |`);
console.log('|---|---|---|');
console.log(
  `| general (per value) | ${med(times.general).toFixed(1)} | ${(mb / (med(times.general) / 1000)).toFixed(0)} |`,
);
console.log(
  `| Float32Array fast path | ${med(times.fast).toFixed(1)} | ${(mb / (med(times.fast) / 1000)).toFixed(0)} |`,
);
console.log(
  `\nspeed-up ${(med(times.general) / med(times.fast)).toFixed(2)}x; outputs differing: ${diff}; load average ${
    loadavg().map((l) => l.toFixed(2)).join(' ')
  }`,
);
