/** Worker thread for the weight pass: column sums of |W| per row block, one job (a matrix or a row slice of one) at a time. */
import { parentPort } from 'node:worker_threads';
import { columnBlockSums, type MatrixRef } from './kernel.js';
import { LobesError } from '../util/errors.js';

interface Job {
  id: number;
  matrix: MatrixRef;
  rowBlock: number;
  chunkBytes?: number;
  bi0?: number;
}

parentPort!.on('message', (job: Job) => {
  run(job);
});
// Loaded and listening: the main thread stops doing jobs itself and sends them here.
parentPort!.postMessage({ ready: true });

function run(job: Job): void {
  try {
    const C = columnBlockSums(job.matrix, { rowBlock: job.rowBlock, chunkBytes: job.chunkBytes,
      rowBlockOffset: job.bi0 });
    parentPort!.postMessage({ id: job.id, C }, [C.buffer as ArrayBuffer]);
  } catch (e: any) {
    parentPort!.postMessage({
      id: job.id,
      error: { message: String(e?.message ?? e), lobes: e instanceof LobesError, exitCode: e?.exitCode ?? 1 },
    });
  }
}
