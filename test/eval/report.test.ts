/// <reference lib="dom" />
/**
 * The report's "Evaluation" section and the eval deltas of lobes compare: an evaluation inside
 * a run (RUN/eval) reaches the page payload; evaluation folders alone make a report and a
 * comparison whose rows are the two summaries' numbers and their difference; in Chromium the
 * section shows every accuracy with its CI and chance, the paper's rows only as labelled
 * references, and label text as text.
 */
import { createHash } from 'node:crypto';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { loadRun, runPayload, compareRuns, writeReport, writeCompare, launchChromium,
  chromiumProblem } from '../../src/report/index.js';
import { fakeEvalDeps, oneHot } from './fakes.js';
import { cli } from '../runtime/helpers.js';

const MODEL = path.resolve(__dirname, '../../models/tiny-llama');
const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const EVIL = '<img src=x onerror="window.__pwned=1">';

describe('evaluation in the report and in compare', () => {
  let root: string;
  let evA: string;
  let evB: string;
  let evS: string | null = null;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-report-'));
    const file = path.join(root, 'items.jsonl');
    const items = Array.from({ length: 40 },
      (_, i) => ({ q: `Question ${i}?`, opts: ['right', `wrong ${i}`, `other ${i}`], ans: 0,
        topic: i % 2 ? 'warmth' : EVIL }));
    writeFileSync(file, items.map((x) => JSON.stringify(x)).join('\n') + '\n');
    const spec = `jsonl:${file}?question=q&options=opts&answer=ans&label=topic`;
    evA = path.join(root, 'evalA');
    evB = path.join(root, 'evalB');
    // Model A always answers right; model B always picks slot A.
    await runEval({ model: MODEL, data: spec, out: evA, quiet: true, bootstrap: 200,
      deps: fakeEvalDeps((p) => oneHot(p.k, ['A', 'B', 'C'].findIndex((L) => p.text.includes(`\n${L}. right\n`)))) });
    await runEval({ model: MODEL, data: spec, out: evB, quiet: true, bootstrap: 200,
      deps: fakeEvalDeps((p) => oneHot(p.k, 0)) });
    if (existsSync(DATA)) {
      evS = path.join(root, 'evalS');
      await runEval({ model: MODEL, data: `socialeval:${DATA}?lang=en`, out: evS, limit: 14, quiet: true,
        bootstrap: 100, deps: fakeEvalDeps((p) => oneHot(p.k, 0)) });
    }
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('an evaluation inside a run reaches the payload; evaluation folders compare by their accuracies', async () => {
    const run = writeSyntheticRun(path.join(root, 'run'), { groups: ['a', 'b'], layers: 2, seed: 1 });
    cpSync(evA, path.join(run, 'eval'), { recursive: true });
    // An evaluation of another model and other items is left out of the run's page, with a note.
    const foreign = await loadRun(run);
    expect(foreign.eval).toBeNull();
    expect(foreign.omitted.join('\n')).toMatch(
      /the evaluation left out: .*eval\.json: the evaluation scored another model/,
    );
    // Made the run's own: its model, and records that are its samples (eval.json records their new sha256).
    const ej = path.join(run, 'eval', 'eval.json');
    const em = JSON.parse(readFileSync(ej, 'utf8'));
    em.model.graphSha256 = JSON.parse(readFileSync(path.join(run, 'manifest.json'), 'utf8')).model.graphSha256;
    const ids = readFileSync(path.join(run, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) =>
      JSON.parse(l).id as string
    );
    const recs = readFileSync(path.join(run, 'eval', 'records.jsonl'), 'utf8').trim().split('\n').map((l, i) =>
      JSON.stringify({ ...JSON.parse(l), id: ids[i % ids.length] })
    );
    const text = recs.join('\n') + '\n';
    writeFileSync(path.join(run, 'eval', 'records.jsonl'), text);
    em.files.records = { path: 'records.jsonl', bytes: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex') };
    writeFileSync(ej, JSON.stringify(em));
    const m = await loadRun(run);
    expect(m.omitted).toEqual([]);
    const p = runPayload(m);
    expect(p.eval!.summary.mcq!.overall.accuracy).toBe(1);
    expect(p.eval!.reference.rows.length).toBe(4);
    // Records edited after the evaluation (a `correct` flipped by hand, same size) are left out with the reason.
    writeFileSync(path.join(run, 'eval', 'records.jsonl'), text.replace('"correct":true', '"correct":null'));
    const edited = await loadRun(run);
    expect(edited.eval).toBeNull();
    expect(edited.omitted.join('\n')).toMatch(
      /the evaluation left out: .*records\.jsonl: was changed after it was written \(size or sha256 differ from eval\.json\)/,
    );
    const a = await loadRun(evA);
    const b = await loadRun(evB);
    expect(runPayload(a).scatter).toBeNull();
    const cmp = compareRuns(a, b);
    const sa = readEvalResults(evA).summary.mcq!;
    const sb = readEvalResults(evB).summary.mcq!;
    const overall = cmp.rows.find((r) =>
      r.section === 'evaluation (MCQ)' && r.metric === 'accuracy, every item once (voted)'
    )!;
    expect(overall.a).toBe(sa.overall.accuracy);
    expect(overall.b).toBe(sb.overall.accuracy);
    expect(overall.diff).toBeCloseTo(sb.overall.accuracy - sa.overall.accuracy, 12);
    expect(overall.ahead).toMatch(/^A( |$)/); // runs are A and B in the order given
    const warmth = cmp.rows.find((r) => r.metric === 'accuracy, label:topic = warmth')!;
    expect(warmth.detail).toBe(true);
    expect(warmth.b).toBe(sb.tables[0]!.rows.find((r) => r.key === 'warmth')!.accuracy);
    // The CLI: lobes report EVAL_DIR and lobes compare EVAL_A EVAL_B.
    expect((await cli(['report', evA, '--out', path.join(root, 'r.html')])).code).toBe(0);
    expect((await cli(['compare', evA, evB, '--out', path.join(root, 'c.html')])).code).toBe(0);
  });

  const problem = chromiumProblem();
  it.skipIf(!!problem)('the Evaluation section in Chromium: CIs, chance, references, text as text', async () => {
    const file = await writeCompare(evA, evB, path.join(root, 'compare.html'));
    const single = await writeReport(evB, path.join(root, 'single.html'));
    expect(readFileSync(single, 'utf8')).toContain('lobes-data');
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e: Error) => errors.push(e.message));
      await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
      await page.waitForFunction(() => (globalThis as any).lobesReport?.ready === true, null, { timeout: 60_000 });
      const got = await page.evaluate(() => {
        const sec = document.getElementById('evaluation')!;
        const tables = Array.from(sec.querySelectorAll('table')).map((t) =>
          Array.from(t.querySelectorAll('tr')).map((r) => Array.from(r.children).map((c) => c.textContent))
        );
        return { text: sec.textContent, tables, pwned: (globalThis as any).__pwned ?? null,
          figs: (globalThis as any).lobesReport.figureIds(), imgs: sec.querySelectorAll('img').length };
      });
      expect(errors).toEqual([]);
      expect(got.pwned).toBeNull();
      expect(got.imgs).toBe(0);
      expect(got.text).toContain(EVIL);
      // Generic items have no aspect or world category, so no accuracy figure.
      expect(got.figs.filter((f: string) => f.includes('eval'))).toEqual([]);
      const overallRows = got.tables.flat().filter((r: (string | null)[]) => r[0] === 'overall (voted)');
      expect(overallRows.map((r: (string | null)[]) => r[1])).toEqual(['40', '40']);
      expect(overallRows[0]![2]).toBe('100.0');
      expect(overallRows[0]![4]).toBe('33.3');
      expect(overallRows[1]![3]).toMatch(/^\[\d+\.\d, \d+\.\d\]$/);
      // The paper's rows belong to SocialEval, not to generic items.
      expect(got.text).not.toContain('Reference: published results');
      if (evS) {
        const f2 = await writeReport(evS, path.join(root, 'socialeval.html'));
        await page.goto(pathToFileURL(f2).href, { waitUntil: 'load' });
        await page.waitForFunction(() => (globalThis as any).lobesReport?.ready === true, null, { timeout: 60_000 });
        const s2 = await page.evaluate(() => {
          const sec = document.getElementById('evaluation')!;
          const ref = sec.querySelector('details.reference')!;
          return { ref: ref.textContent, figs: (globalThis as any).lobesReport.figureIds(),
            bars: (globalThis as any).lobesReport.figure('eval-accuracy').data.map((t: any) => [t.type, t.x.length]) };
        });
        expect(s2.ref).toContain('Reference: published results (not measured here)');
        expect(s2.ref).toContain('Llama-3.1-8B-Instruct');
        expect(s2.ref).toContain('56.79');
        expect(s2.figs).toContain('eval-accuracy');
        expect(s2.bars).toEqual([['bar', 5], ['scatter', 5], ['bar', 7], ['scatter', 7]]);
      }
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 300_000);
});
