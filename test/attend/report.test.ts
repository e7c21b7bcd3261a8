/// <reference lib="dom" />
/**
 * The Attention section of the report: an attend folder's own page and a run's page with
 * RUN/attend, the payload against items.jsonl, contract errors, and the XSS discipline with
 * hostile prompts, ids, labels and part names (in headless Chromium when it is installed).
 */
import { loadRun } from '../../src/report/load.js';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cli } from '../runtime/helpers.js';
import { attendPayload, loadAttend, writeReport, launchChromium, chromiumProblem,
  type Browser } from '../../src/report/index.js';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { LobesError } from '../../src/util/errors.js';
import type { AttendItem } from '../../src/attend/types.js';

const TINY = resolve(import.meta.dirname, '../../models/tiny-llama');

/** Record the current items.jsonl and summary.json in attend.json (as if lobes attend had written them). */
function resign(dir: string): void {
  const mf = join(dir, 'attend.json');
  const m = JSON.parse(readFileSync(mf, 'utf8'));
  for (const k of ['items', 'summary']) {
    const b = readFileSync(join(dir, m.files[k].path));
    m.files[k] = { ...m.files[k], bytes: b.byteLength, sha256: createHash('sha256').update(b).digest('hex') };
  }
  writeFileSync(mf, JSON.stringify(m));
}
const EVIL = '<script>window.__pwned=1</script> and "><img src=x onerror="window.__pwned=2">';
const EVIL_ID = 'e"><img src=x onerror="window.__pwned=3">';
let tmp: string;
let attendDir: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'lobes-attend-report-'));
  const data = join(tmp, 'data.jsonl');
  const rows = [
    { id: EVIL_ID, text: `Mia said ${EVIL} to her friend.`, label: '<b>x</b>' },
    { id: 'plain', text: 'The cat sat on the mat, and 小李很开心。', label: 'y' },
  ];
  writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  attendDir = join(tmp, 'attend');
  const r = await cli(['attend', TINY, '--data', `jsonl:${data}?text=text&label=label&id=id`, '--out', attendDir,
    '--quiet']);
  expect(r.code, r.err).toBe(0);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('attention payload', () => {
  it('carries every word of every item with its weight, part and content flag, and the top words', () => {
    const a = loadAttend(attendDir);
    const p = attendPayload(a);
    expect(p.items.length).toBe(2);
    expect(p.omitted).toBe(0);
    a.items.forEach((it: AttendItem, i) => {
      const q = p.items[i]!;
      expect(q.prompt).toBe(it.prompt);
      expect(q.ws).toEqual(it.words.map((w) => w.start));
      expect(q.we).toEqual(it.words.map((w) => w.end));
      q.ww.forEach((w, k) =>
        expect(Math.abs(w - it.words[k]!.weight)).toBeLessThanOrEqual(Math.abs(it.words[k]!.weight) * 1e-3)
      );
      expect(q.wp.map((k) => p.partNames[k])).toEqual(it.words.map((w) => w.part));
      expect(q.top).toEqual(it.top);
    });
    expect(attendPayload(a, 1).omitted).toBe(1);
  });

  it('an edited items.jsonl is refused by its verified read; a broken one that attend.json lists is an error naming the file and line', () => {
    const bad = join(tmp, 'bad');
    cpSync(attendDir, bad, { recursive: true });
    const lines = readFileSync(join(bad, 'items.jsonl'), 'utf8').trim().split('\n');
    const it = JSON.parse(lines[1]!);
    it.words[0].end = it.prompt.length + 5;
    writeFileSync(join(bad, 'items.jsonl'), [lines[0], JSON.stringify(it)].join('\n') + '\n');
    expect(() => loadAttend(bad)).toThrow(LobesError);
    expect(() => loadAttend(bad)).toThrow(
      /items\.jsonl: was changed after it was written \(size or sha256 differ from attend\.json\)/,
    );
    resign(bad);
    expect(() => loadAttend(bad)).toThrow(/items\.jsonl: line 2: word 0/);
  });

  it("a run's RUN/attend from an older lobes (no attend.json) or unfinished is left out of its page with the reason", async () => {
    const run = writeSyntheticRun(join(tmp, 'run-old-attend'), { groups: ['A', 'B'], layers: 2, seed: 2 });
    cpSync(attendDir, join(run, 'attend'), { recursive: true });
    rmSync(join(run, 'attend', 'attend.json'));
    const old = await loadRun(run);
    expect(old.attend).toBeNull();
    expect(old.omitted.join('\n')).toMatch(
      /the attention results left out: .*attend results of an older lobes \(no attend\.json\)/,
    );
    cpSync(join(attendDir, 'attend.json'), join(run, 'attend', 'attend.json'));
    const m = JSON.parse(readFileSync(join(run, 'attend', 'attend.json'), 'utf8'));
    writeFileSync(join(run, 'attend', 'attend.json'), JSON.stringify({ ...m, complete: false }));
    expect((await loadRun(run)).omitted.join('\n')).toMatch(/the attention results left out: .*attend is incomplete/);
  });

  it('puts no prompt or id string into the page outside the JSON block', async () => {
    const file = await writeReport(attendDir, join(tmp, 'page.html'));
    const html = readFileSync(file, 'utf8');
    const start = html.indexOf('<script type="application/json" id="lobes-data">');
    const end = html.indexOf('</script>', start);
    const outside = html.slice(0, start) + html.slice(end);
    expect(outside).not.toContain('__pwned');
    expect(html.slice(start, end)).not.toContain('<script>window');
  });
});

const problem = chromiumProblem();
if (problem) console.log(`attention report browser tests skipped: ${problem}`);

describe.skipIf(!!problem)('attention section in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  async function open(file: string) {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('console', (m: any) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e: Error) => problems.push(e.message));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    await page.waitForFunction(
      () =>
        (globalThis as any).lobesReport?.ready === true ||
        document.documentElement.getAttribute('data-ready') === 'error',
      null,
      { timeout: 60_000 },
    );
    return { page, problems };
  }

  it('an attend folder: shaded words with their weight on hover, hostile strings as text only', async () => {
    const file = await writeReport(attendDir, join(tmp, 'attend.html'));
    const { page, problems } = await open(file);
    const sections = await page.evaluate(() =>
      Array.from(document.querySelectorAll('main > section')).map((s) => s.id)
    );
    expect(sections).toEqual(['attention', 'provenance']);
    expect(await page.evaluate(() => (globalThis as any).lobesReport.figureIds())).toEqual(['attention-shares']);
    const view = await page.evaluate(() => document.querySelector('.attn-text')!.textContent);
    expect(view).toContain(EVIL);
    const words = await page.evaluate(() =>
      Array.from(document.querySelectorAll('.attn-text .attn-w')).map((w) => ({ text: w.textContent,
        title: (w as HTMLElement).title, bg: (w as HTMLElement).style.backgroundColor })
      )
    );
    const items = readFileSync(join(attendDir, 'items.jsonl'), 'utf8').trim().split('\n').map((l) =>
      JSON.parse(l) as AttendItem
    );
    expect(words.map((w: { text: string | null }) => w.text)).toEqual(items[0]!.words.map((w) => w.text));
    // The heaviest content word is fully shaded; hover shows its weight and part.
    const heaviest = items[0]!.top[0]!;
    expect(words[heaviest]!.bg).toBe('rgba(214, 39, 40, 0.85)');
    expect(words[heaviest]!.title).toMatch(new RegExp(`: [0-9.e-]+ \\(text\\)$`));
    const options = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#attention select option')).map((o) => o.textContent)
    );
    expect(options[0]).toBe(EVIL_ID);
    // Switch to the second item: its Chinese characters are words of their own.
    await page.evaluate(() => {
      const sel = document.querySelector('#attention .attn-text')!.parentElement!
        .previousElementSibling as HTMLSelectElement;
      sel.value = '1';
      sel.dispatchEvent(new Event('change'));
    });
    const second = await page.evaluate(() =>
      Array.from(document.querySelectorAll('.attn-text .attn-w')).map((w) => w.textContent)
    );
    expect(second).toEqual(expect.arrayContaining(['小', '李', '很', '开', '心']));
    expect(await page.evaluate(() => document.querySelectorAll('img').length)).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a run with RUN/attend shows the section after the metrics; a run without it has none', async () => {
    const run = writeSyntheticRun(join(tmp, 'run'), { groups: ['A', 'B'], layers: 2, seed: 1 });
    const bare = await writeReport(run, join(tmp, 'bare.html'));
    const first = await open(bare);
    expect(await first.page.evaluate(() => Array.from(document.querySelectorAll('main > section')).map((s) => s.id)))
      .not.toContain('attention');
    expect(first.problems).toEqual([]);
    await first.page.close();
    cpSync(attendDir, join(run, 'attend'), { recursive: true });
    // Attention read from another model, on other items: left out of the run's page, with a note.
    const foreign = await loadRun(run);
    expect(foreign.attend).toBeNull();
    expect(foreign.omitted.join('\n')).toMatch(
      /the attention results left out: .*summary\.json: the attention was read from another model/,
    );
    // The run's own attention results (its model, its samples) are shown.
    const manifest = JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8'));
    const sf = join(run, 'attend', 'summary.json');
    writeFileSync(sf,
      JSON.stringify({ ...JSON.parse(readFileSync(sf, 'utf8')),
        model: { ...JSON.parse(readFileSync(sf, 'utf8')).model, graphSha256: manifest.model.graphSha256 } }));
    const sample0 = JSON.parse(readFileSync(join(run, 'samples.jsonl'), 'utf8').split('\n')[0]!).id;
    const itf = join(run, 'attend', 'items.jsonl');
    const lines = readFileSync(itf, 'utf8').trim().split('\n');
    lines[0] = JSON.stringify({ ...JSON.parse(lines[0]!), id: sample0 });
    writeFileSync(itf, lines.join('\n') + '\n');
    // Edited by hand: the verified read refuses the files, and the page leaves the section out with the reason.
    const edited = await loadRun(run);
    expect(edited.attend).toBeNull();
    expect(edited.omitted.join('\n')).toMatch(
      /the attention results left out: .*was changed after it was written \(size or sha256 differ from attend\.json\)/,
    );
    // As lobes attend would have written them for this run: shown.
    resign(join(run, 'attend'));
    const withAttend = await writeReport(run, join(tmp, 'with.html'));
    const { page, problems } = await open(withAttend);
    const ids = await page.evaluate(() => Array.from(document.querySelectorAll('main > section')).map((s) => s.id));
    expect(ids.slice(-2)).toEqual(['attention', 'provenance']);
    expect(await page.evaluate(() => (globalThis as any).lobesReport.figureIds())).toContain('attention-shares');
    expect(problems).toEqual([]);
    await page.close();
  });
});
