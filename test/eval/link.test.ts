/**
 * From answers to neurons: an extraction of SocialEval items and an evaluation of the same
 * items share ids; `lobes eval label` writes the axis "correct" into the run, which the run
 * reader then offers to every analysis (lobes cluster / wanda --by correct).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runExtract } from '../../src/extract/run.js';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { loadSocialEvalBench } from '../../src/data/socialeval-eval.js';
import { labelRunFromEval } from '../../src/eval/link.js';
import { openRun } from '../../src/store/index.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runCluster } from '../../src/cluster/run.js';
import { fakeEvalDeps, oneHot } from './fakes.js';
import { hash32 } from '../../src/eval/score.js';
import { cli } from '../runtime/helpers.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const have = existsSync(DATA);
if (!have) console.warn(`test/eval/link: skipped: ${DATA} is absent`);

describe.skipIf(!have)('lobes eval label: the correct axis of a run', () => {
  let root: string;
  beforeAll(() => void (root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-link-'))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('joins by item id, labels unevaluated samples, and cluster splits the run by it', async () => {
    const spec = `socialeval:${DATA}?lang=en&aspect=Cooperation`;
    const model = ensureGeneratedModel('tiny-llama');
    const run = path.join(root, 'run');
    await runExtract({ model, data: spec, out: run, capture: ['final'], quiet: true });
    // The "model" answers an item right when the hash of its id is even; 20 items evaluated.
    const right = (id: string) => hash32(id) % 2 === 0;
    const ev = path.join(root, 'eval');
    await runEval({ model, data: spec, out: ev, task: 'iae', limit: 20, quiet: true, bootstrap: 50,
      deps: fakeEvalDeps((p) => oneHot(p.k, right(p.id) ? slotOfAnswer(p) : (slotOfAnswer(p) + 1) % p.k)) });
    const r = await labelRunFromEval(run, ev);
    const reader = await openRun(run);
    expect(reader.labelAxes()).toContain('correct');
    const labels = reader.labels('correct');
    const evaluated = labels.filter((l) => l !== 'unevaluated').length;
    // The evaluation includes composite items (as run_iae.py does), the extraction does not.
    const evalIds = new Set(readEvalResults(ev).records.map((x) => x.id));
    expect(evaluated).toBe(reader.samples.filter((x) => evalIds.has(x.id)).length);
    expect(evaluated).toBeGreaterThan(10);
    reader.samples.forEach((s, i) => {
      if (labels[i] !== 'unevaluated') expect(labels[i], s.id).toBe(right(s.id) ? 'correct' : 'wrong');
    });
    expect(r.counts.correct + r.counts.wrong).toBe(evaluated);
    expect(r.counts.correct + r.counts.wrong + r.counts.unevaluated).toBe(reader.samples.length);
    const c = await runCluster(run, { input: { by: 'correct' }, execution: { quiet: true },
      tsne: { perplexity: 5, iterations: 250 }, metrics: { bootstrap: 20, permutations: 20 } });
    // beside the run's aspect analysis, not over it
    expect(path.basename(c.outDir!)).toBe('cluster.by-correct');
    // The CLI says what it wrote.
    const out = await cli(['eval', 'label', run, ev]);
    expect(out.code).toBe(0);
    expect(out.err).toMatch(
      /correct\.json: \d+ correct, \d+ wrong, \d+ unevaluated of \d+ samples \(lobes cluster .* --by correct\)/,
    );
    // A user's own overlay of that name is never replaced: one line, exit 1, the file as it was.
    const mine = path.join(run, 'labels', 'mine.json');
    const own = JSON.stringify({ axis: 'mine', labels: reader.samples.map(() => 'x') }) + '\n';
    writeFileSync(mine, own);
    const refused = await cli(['eval', 'label', run, ev, '--axis', 'mine']);
    expect(refused.code).toBe(1);
    expect(refused.err.trim().split('\n')).toHaveLength(1);
    expect(refused.err).toMatch(
      /labels\/mine\.json: a label overlay "mine" exists and was not written by lobes; it is not replaced/,
    );
    expect(readFileSync(mine, 'utf8')).toBe(own);
    // lobes' own overlay is rewritten as before
    expect((await cli(['eval', 'label', run, ev])).code).toBe(0);
  }, 600_000);
});

/** The slot of the correct option (options[0] of an IAE item) in a fake-scored prompt. */
let bench: Map<string, string> | null = null;
function slotOfAnswer(p: { text: string; id: string; k: number }): number {
  if (!bench) {
    bench = new Map(
      loadSocialEvalBench(`socialeval:${DATA}?lang=en&aspect=Cooperation`, { iae: true, gae: false }).iae.map((
        x,
      ) => [x.id, x.options[0]!]),
    );
  }
  const ans = bench.get(p.id)!;
  for (let i = 0; i < p.k; i++) if (p.text.includes(`\n${String.fromCharCode(65 + i)}. ${ans}\n`)) return i;
  throw new Error('answer not in prompt');
}
