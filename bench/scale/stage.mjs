// Run one lobes command in this process (the built CLI, dist/) and record what it cost:
//
//   node bench/scale/stage.mjs RESULT.json lobes-args...
//
// RESULT.json: { code, seconds, peakRssMB, io: /proc/self/io counters, majorFaults }. Peak RSS is
// getrusage's maxrss of this process (every thread: worker threads and ONNX Runtime included).
// rchar counts bytes returned by read() calls (page cache included); read_bytes counts bytes
// fetched from storage (reads and page faults of mapped files).
import { readFileSync, writeFileSync } from 'node:fs';

const [out, ...args] = process.argv.slice(2);
const { main } = await import('../../dist/cli/main.js');
const t0 = performance.now();
let code = 70;
try {
  code = await main(args);
} finally {
  const seconds = (performance.now() - t0) / 1000;
  let io = {};
  try {
    io = Object.fromEntries(readFileSync('/proc/self/io', 'utf8').trim().split('\n').map((l) => { const [k, v] = l.split(':'); return [k.trim(), Number(v)]; }));
  } catch {
    // not Linux
  }
  const ru = process.resourceUsage();
  writeFileSync(out, JSON.stringify({ code, seconds, peakRssMB: Math.round(ru.maxRSS / 1024), io, majorFaults: ru.majorPageFault, userSeconds: ru.userCPUTime / 1e6, systemSeconds: ru.systemCPUTime / 1e6 }) + '\n');
}
process.exit(code);
