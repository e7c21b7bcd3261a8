import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Start a worker thread from a module next to the caller, in both the built package
 * (dist/*.js) and the TypeScript sources under test (src/*.ts):
 *
 *   const w = startWorker(new URL('./pool.worker.js', import.meta.url), { workerData })
 *
 * Always name the `.js` file. When only the `.ts` source exists, the worker starts from a
 * small ESM bootstrap that registers tsx's loader inside the worker and then imports the
 * source (`--import tsx` in a worker's execArgv does not apply to its entry module on Node 20).
 */
export function startWorker(url: URL, options: WorkerOptions = {}): Worker {
  const file = fileURLToPath(url);
  if (existsSync(file)) return new Worker(file, options);
  const ts = file.replace(/\.js$/, '.ts');
  if (!existsSync(ts)) throw new Error(`worker module not found: ${file}`);
  const req = createRequire(import.meta.url);
  const api = pathToFileURL(req.resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${
    JSON.stringify(pathToFileURL(ts).href)
  }); });`;
  return new Worker(code, { ...options, eval: true });
}

/** Number of worker threads to use by default: all cores, at least one. */
export async function defaultThreads(): Promise<number> {
  const os = await import('node:os');
  const n = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(1, n);
}

/** A float64 copy of `a` on a SharedArrayBuffer (what worker threads read without a copy of their own). */
export function sharedF64(a: ArrayLike<number>): Float64Array {
  const out = new Float64Array(new SharedArrayBuffer(a.length * 8));
  out.set(a);
  return out;
}

/** An int32 copy of `a` on a SharedArrayBuffer. */
export function sharedI32(a: ArrayLike<number>): Int32Array {
  const out = new Int32Array(new SharedArrayBuffer(a.length * 4));
  out.set(a);
  return out;
}
