import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';

/**
 * Start a worker thread from a module next to the caller, in both the built package
 * (dist/*.js) and the TypeScript sources under test (src/*.ts, loaded through tsx).
 *
 *   const w = startWorker(new URL('./pool.worker.js', import.meta.url), { workerData })
 *
 * Always name the `.js` file; when only the `.ts` source exists, it is used with tsx.
 */
export function startWorker(url: URL, options: WorkerOptions = {}): Worker {
  const file = fileURLToPath(url);
  if (existsSync(file)) return new Worker(file, options);
  const ts = file.replace(/\.js$/, '.ts');
  if (!existsSync(ts)) throw new Error(`worker module not found: ${file}`);
  return new Worker(ts, { ...options, execArgv: [...(options.execArgv ?? []), '--import', 'tsx'] });
}

/** Number of worker threads to use by default: all cores, at least one. */
export async function defaultThreads(): Promise<number> {
  const os = await import('node:os');
  const n = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(1, n);
}
