// The round trip of one ClusterPool call (a tiny PCA product on one worker), 5,000 calls after 500
// of warm-up: the wall per call and this process's CPU per call. DIR is a checkout with dist/ built.
//
//   node bench/pool-roundtrip.mjs DIR
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
const dir = process.argv[2] ?? '.';
const { ClusterPool } = await import(pathToFileURL(resolve(dir, 'dist/cluster/pool.js')).href);
const pool = await ClusterPool.start(1);
const X = new Float32Array(new SharedArrayBuffer(64 * 8 * 4)).fill(1);
const B = new Float64Array(8 * 4).fill(1);
for (let i = 0; i < 500; i++) await pool.matmul({ op: 'xb', X, n: 64, d: 8, B, l: 4 });
const cpu0 = process.cpuUsage(); const t0 = performance.now();
for (let i = 0; i < 5000; i++) await pool.matmul({ op: 'xb', X, n: 64, d: 8, B, l: 4 });
const c = process.cpuUsage(cpu0);
console.log(dir, 'round trip us', ((performance.now() - t0) / 5000 * 1000).toFixed(1), 'cpu us', ((c.user + c.system) / 5000).toFixed(1));
await pool.close();
