/**
 * t-SNE's exact neighbour search and affinities at 2,000 × 4,096: lobes (src/tsne/knn.ts
 * through the worker pool, conditionalP, jointP: what Tsne.create does) against scikit-learn's
 * TSNE front end (bench/knn-sklearn.py: NearestNeighbors + _joint_probabilities_nn), with the
 * same threads, repetitions interleaved (the side that goes first alternates), in one run.
 *
 *   npx tsx bench/knn-vs-sklearn.ts [--n 2000] [--d 4096] [--reps 3] [--threads 2] [--perplexity 30]
 *
 * Data: the 5c case of bench/tsne-vs-sklearn.py's shape (5 Gaussian clusters, centres
 * N(0, 0.3²) per coordinate, unit noise), seeded, float32, written once to .npy. lobes reads
 * the same file (float64 in memory, as lobes cluster holds it). Python's interpreter and imports
 * are outside its timing (it times inside the script). CPU seconds: every thread of each process
 * (process.cpuUsage, Python's time.process_time) over the same span as the wall time. Also reports the share of rows whose
 * neighbour lists agree exactly between the two.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeNpy, readNpy } from '../src/cluster/npy.js';
import { ClusterPool } from '../src/cluster/pool.js';
import { conditionalP, jointP, neighboursFor } from '../src/tsne/affinity.js';
import { knn } from '../src/tsne/knn.js';
import { Rng } from '../src/util/rng.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: o } = parseArgs({
  options: { n: { type: 'string', default: '2000' }, d: { type: 'string', default: '4096' },
    reps: { type: 'string', default: '3' }, threads: { type: 'string', default: '2' },
    perplexity: { type: 'string', default: '30' } },
});
const n = Number(o.n);
const d = Number(o.d);
const threads = Number(o.threads);
const perplexity = Number(o.perplexity);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-knn-bench-'));
const rng = new Rng(5);
const C = 5;
const centres = new Float64Array(C * d);
for (let i = 0; i < centres.length; i++) centres[i] = rng.normal() * 0.3;
const X32 = new Float32Array(n * d);
for (let i = 0; i < n; i++) {
  const c = rng.int(C);
  for (let j = 0; j < d; j++) X32[i * d + j] = centres[c * d + j]! + rng.normal();
}
const xFile = path.join(tmp, 'X.npy');
writeFileSync(xFile, encodeNpy(X32, [n, d]));
const X = Float64Array.from(readNpy(xFile).data);
const k = neighboursFor(perplexity, n);
const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;

async function lobes(): Promise<{ knn: number; p: number; cpu: number; indices: Int32Array }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const nn = pool ? await pool.knn(X, n, d, k) : knn(X, n, d, k);
  const t1 = performance.now();
  const Pc = pool ? await pool.conditionalP(nn, n, perplexity) : conditionalP(nn, n, perplexity).P;
  jointP(nn, Pc, n);
  const t2 = performance.now();
  const c = process.cpuUsage(c0);
  return { knn: (t1 - t0) / 1000, p: (t2 - t1) / 1000, cpu: (c.user + c.system) / 1e6, indices: nn.indices };
}
function sklearn(out?: string): { knn: number; p: number; total: number; cpu: number; dtype: string } {
  const r = spawnSync('/work/venv/bin/python', [path.join(ROOT, 'bench/knn-sklearn.py'), xFile, '--perplexity',
    String(perplexity), ...(out ? ['--out', out] : [])], { encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: String(threads), OPENBLAS_NUM_THREADS: String(threads),
      MKL_NUM_THREADS: String(threads) } });
  if (r.status !== 0) throw new Error(`knn-sklearn.py failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

try {
  // Warm-up (worker start, WebAssembly compile) on 200 rows; Python's imports are likewise outside its timing.
  if (pool) await pool.knn(X.subarray(0, 200 * d), 200, d, Math.min(k, 199));
  const rows: { lobes: number; lobesKnn: number; lobesCpu: number; sk: number; skKnn: number; skCpu: number;
    load: number }[] = [];
  let agree = 0;
  for (let r = 0; r < Number(o.reps); r++) {
    const load = os.loadavg()[0]!;
    let L: Awaited<ReturnType<typeof lobes>>;
    let S: ReturnType<typeof sklearn>;
    const idxFile = path.join(tmp, 'sk-idx.npy');
    if (r % 2 === 0) {
      L = await lobes();
      S = sklearn(r === 0 ? idxFile : undefined);
    } else {
      S = sklearn();
      L = await lobes();
    }
    if (r === 0) {
      const sk = readNpy(idxFile).data;
      for (let i = 0; i < n; i++) {
        // sklearn lists a row's neighbours by distance too; compare as sets (ties may order differently)
        const a = new Set(Array.from(L.indices.subarray(i * k, (i + 1) * k)));
        let same = true;
        for (let t = 0; t < k; t++) if (!a.has(sk[i * k + t]!)) same = false;
        if (same) agree++;
      }
    }
    rows.push({ lobes: L.knn + L.p, lobesKnn: L.knn, lobesCpu: L.cpu, sk: S.total, skKnn: S.knn, skCpu: S.cpu, load });
    console.error(
      `rep ${r}: lobes ${(L.knn + L.p).toFixed(2)} s (kNN ${L.knn.toFixed(2)}; CPU ${L.cpu.toFixed(2)} s), sklearn ${
        S.total.toFixed(2)
      } s (kNN ${S.knn.toFixed(2)}; CPU ${S.cpu.toFixed(2)} s, ${S.dtype}), load ${load.toFixed(1)}`,
    );
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `N ${n} × ${d}, k ${k}, threads ${threads}, ${o.reps} interleaved reps, load ${
      os.loadavg().map((x) => x.toFixed(1)).join(' ')
    }`,
  );
  console.log('| | kNN s | kNN + P s | kNN + P CPU s |');
  console.log('|---|---:|---:|---:|');
  console.log(
    `| lobes | ${med(rows.map((x) => x.lobesKnn)).toFixed(2)} | ${med(rows.map((x) => x.lobes)).toFixed(2)} | ${
      med(rows.map((x) => x.lobesCpu)).toFixed(2)
    } |`,
  );
  console.log(
    `| scikit-learn | ${med(rows.map((x) => x.skKnn)).toFixed(2)} | ${med(rows.map((x) => x.sk)).toFixed(2)} | ${
      med(rows.map((x) => x.skCpu)).toFixed(2)
    } |`,
  );
  console.log(
    `ratio lobes / sklearn (kNN + P, medians): wall ${
      (med(rows.map((x) => x.lobes)) / med(rows.map((x) => x.sk))).toFixed(2)
    }×, CPU ${(med(rows.map((x) => x.lobesCpu)) / med(rows.map((x) => x.skCpu))).toFixed(2)}×; per repetition (wall): ${
      rows.map((x) => (x.lobes / x.sk).toFixed(2)).join(', ')
    }; rows with the same neighbour set: ${agree} of ${n}`,
  );
} finally {
  await pool?.close();
  rmSync(tmp, { recursive: true, force: true });
}
