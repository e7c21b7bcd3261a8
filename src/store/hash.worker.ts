/** Worker thread: the sha256 of one file (src/store/filehash.ts hashFilesInBackground), so that hashing overlaps other work. */
import { parentPort, workerData } from 'node:worker_threads';
import { sha256Stream } from './filehash.js';
import { LobesError } from '../util/errors.js';

const { file, what } = workerData as { file: string; what: string };
try {
  parentPort!.postMessage({ hash: sha256Stream(file, undefined, what) });
} catch (e: any) {
  parentPort!.postMessage({
    error: { message: String(e?.message ?? e), lobes: e instanceof LobesError, exitCode: e?.exitCode ?? 1 },
  });
}
