/** Worker side of ClusterPool (src/cluster/pool.ts): the t-SNE stages' jobs (src/tsne/work.ts) and the command's own. */
import { serveTasks, tsneTask } from '../tsne/work.js';
import { mulXBRows, mulXtBCols } from './pca.js';
import { probeNullScores } from './space.js';
import { cvFold, cvRun } from './probecv.js';
import { silhouetteMeans, gramRows } from './metrics.js';

serveTasks((m) => {
  if (tsneTask(m)) return;
  if (m.cmd === 'gram') {
    gramRows(m.X, m.n, m.d, m.G, m.start, m.end);
  } else if (m.cmd === 'sil') {
    m.out.set(silhouetteMeans(m.D, m.n, m.perms, m.nClasses), m.offset);
  } else if (m.cmd === 'probe') {
    m.res.set(probeNullScores(m.folds, m.n, [m.labels], m.nClasses, m.opts, m.seed));
  } else if (m.cmd === 'cv') {
    const run = cvRun(m.blocks, m.n, m.labels, m.nClasses, m.opts, m.seed);
    m.pred.set(run.pred);
    m.cs.set(run.chosenC);
    m.cs[m.cs.length - 1] = run.chosenC.length;
  } else if (m.cmd === 'cvfolds') {
    for (const [r, j] of m.tasks as [number, number][]) {
      const f = cvFold(m.blocks, m.labels, m.nClasses, m.opts, m.seed + r, j);
      f.fold.test.forEach((i: number, t: number) => (m.preds[r * m.n + i] = f.pred[t]));
      m.cs[r * m.F + j] = f.C;
    }
  } else if (m.cmd === 'mul') {
    if (m.op === 'xb') mulXBRows(m.X, m.d, m.B, m.l, m.out, m.start, m.end);
    else mulXtBCols(m.X, m.n, m.d, m.B, m.l, m.out, m.start, m.end);
  }
});
