/** Worker thread for the weight pass: computes C = column sums of |W| per row block for one matrix at a time. */
import { parentPort } from 'node:worker_threads';
import { columnBlockSums, type MatrixRef } from './kernel.js';
import { LobesError } from '../util/errors.js';

interface Job {
  id: number;
  matrix: MatrixRef;
  rowBlock: number;
  chunkBytes?: number;
}

parentPort!.on('message', (job: Job) => {
  try {
    const C = columnBlockSums(job.matrix, { rowBlock: job.rowBlock, chunkBytes: job.chunkBytes });
    parentPort!.postMessage({ id: job.id, C }, [C.buffer as ArrayBuffer]);
  } catch (e: any) {
    parentPort!.postMessage({
      id: job.id,
      error: { message: String(e?.message ?? e), lobes: e instanceof LobesError, exitCode: e?.exitCode ?? 1 },
    });
  }
});
