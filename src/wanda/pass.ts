/**
 * The one streaming pass over the weights: C[bi, j] = Σ_{i∈bi} |W_ij| for every matrix,
 * spread over worker threads. A job is a matrix or a row slice of whole row blocks of one;
 * each job streams its rows in 1 MiB reads, so memory holds one read buffer and one C per
 * thread besides the results. Every group, regrouping and permutation afterwards needs only C.
 */
import { startWorker, defaultThreads } from '../util/worker.js';
import { LobesError } from '../util/errors.js';
import { columnBlockSums, expectedBytes, rowSlice, type MatrixRef } from './kernel.js';
import type { Worker } from 'node:worker_threads';

export interface WeightPassOptions {
  /** Row-block height. */
  rowBlock: number;
  /** Worker threads (default: all cores). 0 or 1 with small inputs computes on the calling thread. */
  threads?: number;
  chunkBytes?: number;
  /** Called after each piece of work with the weight bytes it covered. */
  onMatrix?: (m: MatrixRef, bytes: number) => void;
  /** Called with each matrix's column sums as soon as they are complete (the permutation null can start on them). */
  onColsums?: (name: string, C: Float32Array) => void;
}

/** Below this many weight bytes in total the pass runs on the calling thread (worker start-up costs more). */
const INLINE_BYTES = 16 << 20;

/** One piece of the pass: matrix `m` (index), or a slice of its rows starting at row block `bi0`. */
interface Job {
  m: number;
  ref: MatrixRef;
  bi0: number;
}

/**
 * Column sums of |W| per row block for every matrix (name -> C [rowBlocks, d_in]), on worker
 * threads, or on the calling thread for one thread or small inputs.
 */
export async function weightPass(matrices: MatrixRef[], opts: WeightPassOptions): Promise<Map<string, Float32Array>> {
  const total = matrices.reduce((a, m) => a + expectedBytes(m), 0);
  const threads = Math.max(1, opts.threads ?? (await defaultThreads()));
  if (threads <= 1 || (opts.threads === undefined && total < INLINE_BYTES)) return inlinePass(matrices, opts);
  const out = new Map<string, Float32Array>();
  // About 4 jobs per thread over all bytes, so that threads stay busy to the end.
  const jobs = planJobs(matrices, opts.rowBlock, Math.max(1, Math.ceil(total / (threads * 4))));
  if (jobs.length === 0) return out;
  await runJobs(jobs, new Assembler(matrices, jobs, opts, out), threads, opts);
  for (const m of matrices) if (!out.has(m.name)) throw new Error(`weight pass: no result for ${m.name}`);
  return out;
}

/** The whole pass on the calling thread, matrix by matrix. */
function inlinePass(matrices: MatrixRef[], opts: WeightPassOptions): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const m of matrices) {
    const C = columnBlockSums(m, { rowBlock: opts.rowBlock, chunkBytes: opts.chunkBytes });
    out.set(m.name, C);
    opts.onMatrix?.(m, expectedBytes(m));
    opts.onColsums?.(m.name, C);
  }
  return out;
}

/** Jobs: row slices of whole row blocks of about `target` bytes; matrices stored [d_in, d_out] are one job each. */
function planJobs(matrices: MatrixRef[], rb: number, target: number): Job[] {
  const jobs: Job[] = [];
  matrices.forEach((m, k) => {
    const bytes = expectedBytes(m);
    const blocks = Math.ceil(m.dOut / rb);
    const sliceable = m.source.kind !== 'dense' || m.source.layout === 'out_in';
    const parts = sliceable ? Math.min(blocks, Math.max(1, Math.round(bytes / target))) : 1;
    for (let p = 0; p < parts; p++) {
      const b0 = Math.floor((p * blocks) / parts);
      const b1 = Math.floor(((p + 1) * blocks) / parts);
      if (b1 <= b0) continue;
      const ref = parts === 1 ? m : rowSlice(m, b0 * rb, Math.min(m.dOut, b1 * rb));
      jobs.push({ m: k, ref, bi0: b0 });
    }
  });
  return jobs;
}

/** Puts each job's C into its matrix's C; a matrix goes to `out` when its last job is in. */
class Assembler {
  completed = 0;
  private readonly partial: Float32Array[];
  private readonly remaining: number[];

  constructor(
    private readonly matrices: MatrixRef[],
    private readonly jobs: Job[],
    private readonly opts: WeightPassOptions,
    private readonly out: Map<string, Float32Array>,
  ) {
    this.partial = matrices.map((m) => new Float32Array(Math.ceil(m.dOut / opts.rowBlock) * m.dIn));
    this.remaining = matrices.map((_, k) => jobs.filter((j) => j.m === k).length);
  }

  /** Record job `id`'s column sums. */
  finish(id: number, C: Float32Array): void {
    const job = this.jobs[id];
    const m = this.matrices[job.m];
    this.partial[job.m].set(C, job.bi0 * m.dIn);
    this.opts.onMatrix?.(m, expectedBytes(job.ref));
    if (--this.remaining[job.m] === 0) {
      this.out.set(m.name, this.partial[job.m]);
      this.opts.onColsums?.(m.name, this.partial[job.m]);
    }
    this.completed++;
  }
}

/**
 * Run the jobs on up to `threads` workers, each taking the next job when it is done. While
 * the workers start (thread, module load, WebAssembly compile), this thread takes jobs itself;
 * it stops as soon as one worker is ready. The first error ends the pass.
 */
async function runJobs(jobs: Job[], done: Assembler, threads: number, opts: WeightPassOptions): Promise<void> {
  const workers: Worker[] = [];
  let next = 0;
  let anyReady = false;
  let failed: Error | null = null;
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (e: Error) => {
        if (!failed) {
          failed = e;
          reject(e);
        }
      };
      const dispatch = (w: Worker) => {
        if (failed) return;
        if (done.completed === jobs.length) return resolve();
        if (next >= jobs.length) return;
        const id = next++;
        w.postMessage({ id, matrix: jobs[id].ref, rowBlock: opts.rowBlock, chunkBytes: opts.chunkBytes,
          bi0: jobs[id].bi0 });
      };
      for (let t = 0; t < Math.min(threads, jobs.length); t++) {
        const w = startColsumWorker();
        workers.push(w);
        w.on('message', (msg: any) => {
          if (msg.ready) {
            anyReady = true;
            return dispatch(w);
          }
          if (msg.error)
            return fail(
              msg.error.lobes
                ? new LobesError(msg.error.message, { exitCode: msg.error.exitCode })
                : new Error(msg.error.message),
            );
          done.finish(msg.id, msg.C as Float32Array);
          dispatch(w);
        });
        w.on('error', fail);
      }
      const inline = async () => {
        while (!anyReady && !failed && next < jobs.length) {
          const id = next++;
          try {
            done.finish(id,
              columnBlockSums(jobs[id].ref, { rowBlock: opts.rowBlock, chunkBytes: opts.chunkBytes,
                rowBlockOffset: jobs[id].bi0 }));
          } catch (e) {
            return fail(e as Error);
          }
          if (done.completed === jobs.length) return resolve();
          await new Promise((r) => setImmediate(r));
        }
      };
      void inline();
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

function startColsumWorker(): Worker {
  return startWorker(new URL('./colsum.worker.js', import.meta.url));
}
