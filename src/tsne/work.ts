/**
 * The t-SNE stages' jobs on a worker thread (TsnePool, src/tsne/pool.ts): one message = one range
 * of one computation. tsneTask runs a message it knows; serveTasks is the worker's message loop,
 * shared with src/cluster/pool.worker.ts, whose worker takes these jobs and the command's own.
 */
import { parentPort } from 'node:worker_threads';
import { knnRows } from './knn.js';
import { screenRows } from './knn-screen.js';
import { prunedBlocks } from './knn-prune.js';
import { approxRows } from './knn-approx.js';
import { conditionalRows } from './affinity.js';
import { repulsion } from './quadtree.js';
import { attraction } from './attraction.js';
import { stepRange } from './step.js';
import { interpWork } from './interp.js';

/** Run message `m` if it is one of the t-SNE stages' jobs; false when it is not. */
export function tsneTask(m: any): boolean {
  if (m.cmd === 'knn') {
    knnRows(m.X, m.n, m.d, m.k, m.start, m.end, m.indices, m.dist2);
  } else if (m.cmd === 'knnp') {
    prunedBlocks(m.job, m.b0, m.b1);
  } else if (m.cmd === 'approx') {
    m.changed[m.slot] = approxRows(m.job, m.pass, m.start, m.end);
  } else if (m.cmd === 'screen') {
    screenRows(m.job, m.start, m.end);
  } else if (m.cmd === 'condp') {
    conditionalRows(m.dist2, m.k, m.perplexity, m.start, m.end, m.P, m.betas);
  } else if (m.cmd === 'interp') {
    const g = m.g;
    if (m.phase === 'weights') {
      interpWork.weights(g, m.Y, m.a, m.b);
      interpWork.zeroPanels(g, m.za, m.zb);
      if (m.kb > m.ka) interpWork.kernelColumns(g, m.ka, m.kb);
    } else if (m.phase === 'spread') {
      interpWork.spreadRows(g, m.Y, m.a, m.b);
      if (m.kb > m.ka) interpWork.kernelRows(g, m.ka, m.kb);
    } else if (m.phase === 'pass1') interpWork.pass1(g, m.a, m.b);
    else if (m.phase === 'middle') interpWork.middle(g, m.a, m.b);
    else if (m.phase === 'pass2') interpWork.pass2(g, m.a, m.b);
    else if (m.phase === 'points') {
      interpWork.interpolate(g, m.Y, m.a, m.b, m.F, m.Zi);
      attraction(m.P, m.Y, m.ex, m.A, m.a, m.b);
    }
  } else if (m.cmd === 'grad') {
    repulsion(m.tree, m.Y, m.g0, m.g1, m.theta, m.F, m.Zi);
  } else if (m.cmd === 'attr') {
    attraction(m.P, m.Y, m.ex, m.A, m.start, m.end);
  } else if (m.cmd === 'step') {
    stepRange(m.Y, m.update, m.gains, m.A, m.F, m.sp, m.i0, m.i1);
  } else return false;
  return true;
}

/**
 * The worker's message loop: each message goes to `run` and is answered { ok } or { error };
 * a message sent with `noReply` reports its error with the next reply.
 */
export function serveTasks(run: (m: any) => void): void {
  /** The error of a message sent without a reply, until the next reply carries it. */
  let held: string | null = null;
  parentPort!.on('message', (m: any) => {
    try {
      run(m);
      if (m.noReply) return;
      parentPort!.postMessage(held ? { error: held } : { ok: true });
      held = null;
    } catch (e: any) {
      const msg = String(e?.message ?? e);
      if (m.noReply) held ??= msg;
      else {
        parentPort!.postMessage({ error: held ?? msg });
        held = null;
      }
    }
  });
}
