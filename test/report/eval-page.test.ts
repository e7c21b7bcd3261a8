/// <reference lib="dom" />
/**
 * The evaluation's page and lines: a letter that takes over the picks is named (planted position
 * bias), a "no mean over …" note is printed once, the cloze table's legend defines only its own
 * columns, eval compare names the scoring it compares and states its result, and (in headless
 * Chromium, skipped when none is installed) an evaluation page shows only what its folder holds:
 * its headline first, no empty map, regions or metrics section.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { evalHeadline, omittedOnce, topLetter } from '../../src/eval/headline.js';
import { formatSummary } from '../../src/eval/format.js';
import { runEval } from '../../src/eval/run.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { loadRun } from '../../src/report/load.js';
import { compareRuns } from '../../src/report/compare.js';
import { writeReport, launchChromium, chromiumProblem } from '../../src/report/index.js';
import type { EvalSummary, ItemSummary } from '../../src/eval/summary-types.js';

const acc = (k: number, n: number, chance: number) => ({ n, correct: k, accuracy: k / n,
  ci95: [Math.max(0, k / n - 0.1), Math.min(1, k / n + 0.1)] as [number, number], chance, pChance: 0.4,
  pChanceHolm: null, ciMethod: 'exact' });
const items = (pickRate: number[], prompts = 32): ItemSummary =>
  ({
    task: 'iae',
    items: 32,
    skipped: [],
    overall: acc(8, 32, 0.25),
    macro: null,
    macroOmitted: null,
    macroByLanguage: {},
    unvoted: acc(8, 32, 0.25),
    tables: [],
    positionBias: [{ k: 4, prompts, pickRate, answerRate: [0.25, 0.25, 0.25, 0.25] }],
    letterMass: { mean: 0.9, min: 0.5 },
  }) as unknown as ItemSummary;
const summary = (iae: ItemSummary): EvalSummary => ({ format: 'lobes-eval-summary',
  bootstrap: { resamples: 0, seed: 0 }, iae });

describe('an evaluation in words', () => {
  it('a letter picked on over 90% of prompts is named; 85% is not', () => {
    const all = evalHeadline(summary(items([1, 0, 0, 0])));
    expect(all.warnings).toEqual([
      'IAE: letter accuracy means little here: the model picks A on 100.0% of 32 prompts, so its accuracy is about where the answer happens to sit.',
    ]);
    expect(all.headline[0]).toBe(
      "IAE: accuracy 25.0% [15.0, 35.0] vs chance 25.0% on 32 items, p vs chance 0.400; scoring: answer letter (the letter's logit, options shuffled, majority vote).",
    );
    expect(evalHeadline(summary(items([0.05, 0.85, 0.05, 0.05]))).warnings).toEqual([]);
    // over the prompts of every option count together
    const mixed = items([0.95, 0.05, 0, 0], 10);
    mixed.positionBias.push({ k: 2, prompts: 30, pickRate: [0.9, 0.1], answerRate: [0.5, 0.5] });
    expect(topLetter(mixed.positionBias)).toEqual({ letter: 'A', share: (9.5 + 27) / 40, prompts: 40 });
    expect(evalHeadline(summary(mixed)).warnings[0]).toContain('picks A on 91.3% of 40 prompts');
    // and the terminal's summary says it first
    expect(formatSummary(summary(items([1, 0, 0, 0]))).split('\n')[0]).toBe(
      '**IAE: letter accuracy means little here: the model picks A on 100.0% of 32 prompts, so its accuracy is about where the answer happens to sit.**',
    );
  });

  it('"no mean over abilities" once where a language repeats it', () => {
    expect(
      omittedOnce(
        'no mean over abilities: 28 have fewer than 10 items (a (1), b (2)); no mean over abilities (en): 28 have fewer than 10 items (a (1), b (2))',
      ),
    ).toBe('no mean over abilities: 28 have fewer than 10 items (a (1), b (2))');
    const two =
      'no mean over abilities: 28 have fewer than 10 items (a); no mean over abilities (en): 20 have fewer than 10 items (a); no mean over abilities (zh): 25 have fewer than 10 items (b)';
    expect(omittedOnce(two)).toBe(two);
    const s = items([0.25, 0.25, 0.25, 0.25]);
    s.macroOmitted =
      'no mean over abilities: 28 have fewer than 10 items (a); no mean over abilities (en): 28 have fewer than 10 items (a)';
    expect(formatSummary(summary(s)).match(/no mean over abilities/g)).toHaveLength(1);
  });
});

const problem = chromiumProblem();

describe('an evaluation folder on the page and in compare', () => {
  let root: string;
  let letters: string;
  let cloze: string;
  const model = ensureGeneratedModel('tiny-llama-past');
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-page-'));
    const file = path.join(root, 'items.jsonl');
    const rows = Array.from({ length: 6 },
      (_, i) => ({ id: `q${i}`, question: `Which one is item ${i}?`, options: ['the sun', 'ice', 'snow', 'rain'],
        answer: i % 4 }));
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    letters = path.join(root, 'letters');
    cloze = path.join(root, 'cloze');
    await runEval({ model, data: spec, out: letters, chatTemplate: 'off', quiet: true, bootstrap: 0, shuffles: 1 });
    await runEval({ model, data: spec, out: cloze, scoring: 'cloze', chatTemplate: 'off', quiet: true, bootstrap: 0 });
  }, 120_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("the cloze summary's legend defines no p or Holm column", async () => {
    const { readEvalResults } = await import('../../src/eval/run.js');
    const out = formatSummary(readEvalResults(cloze).summary);
    expect(out).toContain('scoring: cloze');
    expect(out).not.toMatch(/p vs chance|Holm/);
  });

  it('eval compare names the scoring of each side and states its result', async () => {
    const c = compareRuns(await loadRun(cloze, { name: 'c1' }), await loadRun(cloze, { name: 'c2' }));
    const line = c.headline!.find((l) => l.startsWith('Evaluation (MCQ)'))!;
    expect(line).toMatch(
      /^Evaluation \(MCQ\), scored by cloze \(acc: each option's summed log-likelihood as a continuation of the prompt\) in both: accuracy A (\d+\.\d)%.*, B \1%.*; B − A \+0\.0 points/,
    );
    const mixed = compareRuns(await loadRun(letters, { name: 'l' }), await loadRun(cloze, { name: 'c' }));
    expect(mixed.headline!.find((l) => l.startsWith('Evaluation (MCQ)'))).toMatch(
      /A scored by answer letter .*, B by cloze .*: not the same measurement/,
    );
  });

  it.skipIf(!!problem)('the page of an evaluation folder shows its headline first and no empty section', async () => {
    const html = await writeReport(cloze, path.join(root, 'cloze.html'));
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: 1200, height: 900 });
      await page.goto(pathToFileURL(html).href, { waitUntil: 'load' });
      await page.waitForFunction(
        () =>
          (globalThis as any).lobesReport?.ready === true ||
          document.documentElement.getAttribute('data-ready') === 'error',
        null,
        { timeout: 60_000 },
      );
      const r = await page.evaluate(() => ({
        sections: Array.from(document.querySelectorAll('main section')).map((s) => s.id),
        missing: Array.from(document.querySelectorAll('.missing')).map((e) => e.textContent),
        first: document.querySelector('#notes details[open] p')?.textContent ?? '',
        settings: Array.from(document.querySelectorAll('#evaluation p.meta')).map((e) => e.textContent ?? ''),
      }));
      expect(r.sections).toEqual(['evaluation', 'provenance']);
      expect(r.missing).toEqual([]);
      expect(r.first).toMatch(/^Multiple choice: accuracy \d+\.\d% \[\d+\.\d, \d+\.\d\] vs chance 25\.0% on 6 items/);
      expect(r.settings.join(' ')).not.toContain('answer letter scored directly');
    } finally {
      await browser.close();
    }
  }, 90_000);
});
