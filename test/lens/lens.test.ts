/// <reference lib="dom" />
/**
 * `lobes lens` on a generated tiny model (src/models), fp32:
 *
 *   - the head: the final norm applied to the last layer's captured residual is the captured
 *     final.hidden (ONNX Runtime's own final norm), so the norm weight and epsilon are the
 *     model's (planted: all-ones weight, a wrong epsilon, the last-but-one layer: each far off);
 *   - answer options from the labels `answer` and `options`: each letter's token is the one
 *     lobes eval scores after the text, `hit` is whether it wins among the options, and the
 *     summary's accuracy and chance follow from the items;
 *   - RUN/lens is written whole with its marker and lineage, and the report shows it (the Logit
 *     lens section's payload) only while it belongs to the run: results of another run named by
 *     --lens-dir are an error, found in a run they are left out with the reason, and an edited
 *     lens.json is refused;
 *   - the page draws the section (Chromium, when present) after the analyses', before provenance;
 *   - the refusals: a run without resid_out points, an output folder of another kind, a folder
 *     whose config.json gives another epsilon than its graph.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runExtract } from '../../src/extract/run.js';
import { openRun } from '../../src/store/index.js';
import { readLensHead } from '../../src/lens/head.js';
import { lensLogProbs, rmsNorm } from '../../src/lens/compute.js';
import { runLens } from '../../src/lens/run.js';
import { loadEvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { loadRun, runPayload } from '../../src/report/index.js';
import { readOutputMarker } from '../../src/util/output.js';
import type { RunReader } from '../../src/store/types.js';
import { writeReport, launchChromium, chromiumProblem } from '../../src/report/index.js';
import { openReportPage } from '../report/page.js';

const noChromium = chromiumProblem();

const ITEMS = [
  { id: 'q1', text: 'Question: Which is a fruit? A. stone B. apple C. chair\nAnswer:', answer: 'B', options: '3' },
  { id: 'q2', text: 'Question: Which is a colour? A. red B. dog C. table D. cup\nAnswer:', answer: 'A', options: '4' },
  { id: 'q3', text: 'Question: Which can fly? A. rock B. car C. bird\nAnswer:', answer: 'C', options: '3' },
  { id: 't1', text: 'A sentence without options.', answer: '-', options: '-' },
];

function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

describe('the logit lens on a generated model', () => {
  let tmp: string;
  let model: string;
  let runDir: string;
  let otherDir: string;
  let run: RunReader;
  beforeAll(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-lens-'));
    model = ensureGeneratedModel('tiny-llama');
    const data = path.join(tmp, 'items.jsonl');
    writeFileSync(data, ITEMS.map((x) => JSON.stringify(x)).join('\n') + '\n');
    runDir = path.join(tmp, 'run');
    otherDir = path.join(tmp, 'other');
    const spec = `jsonl:${data}?text=text&label=answer,options&id=id`;
    await runExtract({ model, data: spec, out: runDir, capture: ['final', 'resid'], dtype: 'fp32', quiet: true });
    const other = path.join(tmp, 'other.jsonl');
    writeFileSync(other, ITEMS.slice(0, 3).map((x) => JSON.stringify(x)).join('\n') + '\n');
    await runExtract({ model, data: `jsonl:${other}?text=text&label=answer,options&id=id`, out: otherDir,
      capture: ['final', 'resid'], dtype: 'fp32', quiet: true });
    run = await openRun(runDir);
  }, 300_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("the final norm of the last layer's residual is the captured final.hidden (and planted heads are not)", async () => {
    const head = readLensHead(model);
    const L = run.manifest.model.arch.layers;
    const resid = await run.read(`layers.${L - 1}.resid_out`);
    const before = await run.read(`layers.${L - 2}.resid_out`);
    const fin = await run.read('final.hidden');
    const H = head.hidden;
    const worst = (x: Float32Array, w: ArrayLike<number>, eps: number) =>
      Math.max(
        ...ITEMS.map((_, i) =>
          relErr(rmsNorm(x.subarray(i * H, (i + 1) * H), w, eps), fin.subarray(i * H, (i + 1) * H))
        ),
      );
    expect(worst(resid, head.normWeight, head.eps)).toBeLessThan(1e-5);
    expect(worst(resid, new Float32Array(H).fill(1), head.eps), 'the norm weight left out').toBeGreaterThan(1e-2);
    expect(worst(before, head.normWeight, head.eps), 'the last-but-one layer').toBeGreaterThan(1e-2);
    // eps matters where the residual is small: scaled down, a tenfold eps is seen
    const small = resid.map((v) => v * 1e-3);
    const ms = (() => {
      let s = 0;
      for (let h = 0; h < H; h++) s += small[h]! ** 2;
      return s / H;
    })();
    expect(
      relErr(rmsNorm(small.subarray(0, H), head.normWeight, head.eps * 10),
        rmsNorm(small.subarray(0, H), head.normWeight, head.eps)),
      `mean square ${ms}`,
    ).toBeGreaterThan(1e-3);
  });

  it("answer options: the evaluation's letter tokens, hits among them, accuracy and chance", async () => {
    const { result, outDir } = await runLens(runDir, { quiet: true, topK: 3 });
    expect(outDir).toBe(path.join(runDir, 'lens'));
    const tok = await loadEvalTokenizer(model, { chatTemplate: 'off' });
    const head = readLensHead(model);
    const withOptions = result.items.filter((it) => it.answer);
    expect(withOptions.map((it) => it.id)).toEqual(['q1', 'q2', 'q3']);
    expect(result.candidates).toMatchObject({ items: 3, skipped: 0 });
    expect(result.candidates!.chance).toBeCloseTo((1 / 3 + 1 / 4 + 1 / 3) / 3, 12);
    const H = head.hidden;
    for (const it of withOptions) {
      const i = ITEMS.findIndex((x) => x.id === it.id);
      const src = ITEMS[i]!;
      expect(it.answer!.letters).toHaveLength(Number(src.options));
      expect(it.answer!.tokens).toEqual(tok.answerSlot(src.text, it.answer!.letters, src.id).candidates);
      for (const [l, p] of result.layers.entries()) {
        const lp = lensLogProbs((await run.read(p.point)).subarray(i * H, (i + 1) * H), head);
        const want = it.answer!.tokens[it.answer!.letters.indexOf(src.answer)]!;
        const best = it.answer!.tokens.reduce((b, t) => (lp[t]! > lp[b]! ? t : b));
        expect(it.layers[l]!.correct!.hit).toBe(best === want);
        expect(it.layers[l]!.correct!.p).toBeCloseTo(Math.exp(lp[want]!), 12);
        expect(it.layers[l]!.top[0]!.p).toBeCloseTo(Math.exp(Math.max(...lp)), 12);
      }
    }
    result.summary.forEach((s, l) =>
      expect(s.accuracy).toBeCloseTo(withOptions.filter((it) => it.layers[l]!.correct!.hit).length / 3, 12)
    );
    expect(result.summary.at(-1)!.kl).toBe(0);
    expect(result.items.find((it) => it.id === 't1')!.layers[0]!.correct).toBeUndefined();
    // the folder: marker of kind lens, with the run, its chunks and the model as inputs
    const marker = readOutputMarker(outDir!)!;
    expect(marker.kind).toBe('lens');
    expect(Object.keys(marker.outputs!).sort()).toEqual(['lens.json', 'settings.json']);
    expect(marker.inputs!.map((x) => x.name)).toEqual(
      expect.arrayContaining(
        ['run', 'samples.jsonl', 'model', `layers.0.resid_out`].map((
          n,
        ) => (n.startsWith('layers') ? `activations/${n}` : n)),
      ),
    );
  }, 300_000);

  it('the report shows the lens of this run only', async () => {
    await runLens(runDir, { quiet: true });
    const own = runPayload(await loadRun(runDir)) as ReturnType<typeof runPayload> & {
      lens?: { summary: unknown[]; candidates: unknown };
    };
    expect(own.lens!.summary).toHaveLength(run.manifest.model.arch.layers);
    // another run's lens named by --lens-dir: an error; found inside the run: left out with the reason
    await expect(loadRun(otherDir, { lensDir: path.join(runDir, 'lens') })).rejects.toThrow(/another run/);
    cpSync(path.join(runDir, 'lens'), path.join(otherDir, 'lens'), { recursive: true });
    const other = await loadRun(otherDir);
    expect(other.lens).toBeNull();
    expect(other.omitted.join('\n')).toMatch(/the logit lens left out: .*another run/);
    // an edited lens.json is refused
    const f = path.join(runDir, 'lens', 'lens.json');
    writeFileSync(f, readFileSync(f, 'utf8').replace('"topK":5', '"topK":6'));
    const edited = await loadRun(runDir);
    expect(edited.lens).toBeNull();
    expect(edited.omitted.join('\n')).toMatch(/the logit lens left out: .*was changed after lobes lens wrote it/);
  }, 300_000);

  it.skipIf(!!noChromium)('the page draws the Logit lens section: one row per layer, the accuracy against chance',
    async () => {
      await runLens(runDir, { quiet: true });
      const file = await writeReport(runDir, path.join(tmp, 'report.html'));
      const browser = await launchChromium();
      try {
        const { page, problems } = await openReportPage(browser, file);
        expect(problems).toEqual([]);
        const got = await page.evaluate(() => {
          const sec = document.getElementById('lens');
          const rows: (string | null)[][] = Array.from(sec ? sec.querySelectorAll('table tr') : []).map((tr) =>
            Array.from(tr.children).map((c) => c.textContent)
          );
          const gd: any = sec?.querySelector('[data-figure]');
          return { heading: sec?.querySelector('h2')?.textContent, rows,
            traces: gd ? gd.data.map((t: any) => ({ name: t.name, y: t.y })) : null,
            order: Array.from(document.querySelectorAll('section')).map((x) => x.id) };
        });
        const L = run.manifest.model.arch.layers;
        expect(got.heading).toBe('Logit lens');
        expect(got.rows).toHaveLength(L + 1);
        expect(got.rows[0]).toContain('accuracy %');
        expect(got.rows.slice(1).map((r: (string | null)[]) => r[4]), 'the chance column').toEqual(
          Array(L).fill((((1 / 3 + 1 / 4 + 1 / 3) / 3) * 100).toFixed(1)),
        );
        expect(got.traces!.map((t: { name: string }) => t.name)).toEqual(['lens accuracy', 'chance']);
        // the section sits where the registry puts it: after the analyses' sections, before the provenance
        expect(got.order.at(-1)).toBe('provenance');
        expect(got.order.at(-2)).toBe('lens');
      } finally {
        await browser.close();
      }
    }, 300_000);

  it('refuses a run without resid_out points, a folder of another kind and an epsilon config.json contradicts',
    async () => {
      const noResid = path.join(tmp, 'noresid');
      await runExtract({ model, data: `jsonl:${path.join(tmp, 'items.jsonl')}?text=text&label=answer&id=id`,
        out: noResid, capture: ['final'], dtype: 'fp32', quiet: true });
      await expect(runLens(noResid, { quiet: true })).rejects.toThrow(
        /holds no layers\.\{i\}\.resid_out capture points/,
      );
      await expect(runLens(runDir, { quiet: true, out: path.join(noResid, 'activations') })).rejects.toThrow(
        /run's own files/,
      );
      const copy = path.join(tmp, 'model-copy');
      cpSync(model, copy, { recursive: true });
      const cfgFile = path.join(copy, 'config.json');
      const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
      writeFileSync(cfgFile, JSON.stringify({ ...cfg, rms_norm_eps: (cfg.rms_norm_eps ?? 1e-5) * 10 }));
      expect(() => readLensHead(copy)).toThrow(/config\.json's rms_norm_eps|is neither in the graph/);
    }, 300_000);
});
