/**
 * lobes never deletes or overwrites a file it did not write. Each case reproduces a data loss
 * seen by pointing an analysis's --out (or a report's --out/--png/--svg) where it does not
 * belong, as a hostile or careless user would, and asserts the exit code, the one-line
 * message, and that the run, its earlier results and the user's files are byte for byte
 * what they were.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TINY, lobes, snapshot } from './helpers.js';
import { OUTPUT_MARKER } from '../../src/util/output.js';

const HAVE = existsSync(path.join(TINY, 'model.onnx'));
if (!HAVE) console.log(`skipping the output-safety CLI tests: ${TINY}/model.onnx is missing`);

const CLUSTER = ['--iterations', '250', '--bootstrap', '20', '--permutations', '10', '--no-baselines', '--quiet'];
const WANDA = ['--block', '16', '--permutations', '5', '--quiet'];
const THESIS = '\\documentclass{article}\\begin{document}Four years of work.\\end{document}\n';

/** One line on stderr, `lobes CMD: ...`, and exit code 1. */
function refused(r: { code: number; stderr: string }, cmd: string, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]!.startsWith(`lobes ${cmd}: `), r.stderr).toBe(true);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/internal error/);
}

describe.skipIf(!HAVE)("analysis output folders: only lobes' own earlier result of the same kind is replaced", () => {
  let root: string;
  let run: string;
  let before: Record<string, string>;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-outsafe-'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'hash-cache.json');
    run = path.join(root, 'run');
    const x = await lobes(['extract', '--model', TINY, '--data', 'builtin:social', '--out', run, '--chunk-rows', '64',
      '--quiet']);
    expect(x.code, x.stderr).toBe(0);
    expect((await lobes(['cluster', run, '--by', 'aspect', ...CLUSTER])).code).toBe(0);
    expect((await lobes(['wanda', run, '--by', 'aspect', ...WANDA])).code).toBe(0);
    before = snapshot(run);
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('writes the marker of its kind into the folder', () => {
    for (const kind of ['cluster', 'wanda']) {
      const m = JSON.parse(readFileSync(path.join(run, kind, OUTPUT_MARKER), 'utf8'));
      expect(m).toMatchObject({ format: 'lobes-output', kind });
      expect(typeof m.lobesVersion).toBe('string');
      expect(Number.isFinite(Date.parse(m.createdAt))).toBe(true);
    }
  });

  it('cluster --out RUN/wanda is refused and the wanda results are untouched', async () => {
    const r = await lobes(['cluster', run, '--out', path.join(run, 'wanda'), ...CLUSTER]);
    refused(r, 'cluster',
      /\/wanda: folder holds lobes wanda results; lobes cluster does not replace them \(give a new or empty folder\)$/);
    expect(snapshot(run)).toEqual(before);
  });

  it("cluster --out on a folder of the user's files that holds a settings.json is refused; thesis.tex survives", async () => {
    const mine = path.join(root, 'thesis');
    mkdirSync(mine);
    writeFileSync(path.join(mine, 'thesis.tex'), THESIS);
    // even a settings.json that looks like lobes' own (copied from a result) does not make the folder lobes'
    cpSync(path.join(run, 'cluster', 'settings.json'), path.join(mine, 'settings.json'));
    const mineBefore = snapshot(mine);
    const r = await lobes(['cluster', run, '--out', mine, ...CLUSTER]);
    refused(r, 'cluster',
      /thesis: folder exists and was not written by lobes cluster \(it holds settings\.json, thesis\.tex\); it is not replaced/);
    expect(snapshot(mine)).toEqual(mineBefore);
    expect(readFileSync(path.join(mine, 'thesis.tex'), 'utf8')).toBe(THESIS);
    expect(snapshot(run)).toEqual(before);
  });

  it('cluster --out on the run itself, inside its activations, or inside another analysis folder is refused before any write', async () => {
    const cases: [string, RegExp][] = [
      [run, /folder is a lobes run \(manifest\.json\); it is not replaced/],
      [path.join(run, 'activations'), /output folder is among the run's own files \(.*\/activations\)/],
      [path.join(run, 'activations', 'new'), /output folder is among the run's own files/],
      [path.join(run, 'samples.jsonl'), /output folder is among the run's own files \(.*\/samples\.jsonl\)/],
      [path.join(run, 'wanda', 'sub'),
        /output folder is inside the lobes wanda folder .*\/wanda, which is replaced whole/],
    ];
    for (const [out, pattern] of cases) {
      const r = await lobes(['cluster', run, '--out', out, ...CLUSTER]);
      refused(r, 'cluster', pattern);
      expect(snapshot(run)).toEqual(before);
    }
  });

  it('cluster --out a symbolic link or a file is refused', async () => {
    const target = path.join(root, 'elsewhere');
    mkdirSync(target);
    writeFileSync(path.join(target, 'notes.txt'), 'mine\n');
    const link = path.join(root, 'link');
    symlinkSync(target, link);
    refused(await lobes(['cluster', run, '--out', link, ...CLUSTER]), 'cluster', /link: is a symbolic link/);
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'mine\n');
    refused(await lobes(['cluster', run, '--out', file, ...CLUSTER]), 'cluster', /a-file: exists and is not a folder/);
    expect(readFileSync(path.join(target, 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(readFileSync(file, 'utf8')).toBe('mine\n');
  });

  it('an earlier cluster result is replaced (marker), and so is one written before markers existed, but not once a user file sits in it', async () => {
    const out = path.join(root, 'cl');
    expect((await lobes(['cluster', run, '--out', out, ...CLUSTER])).code).toBe(0);
    expect((await lobes(['cluster', run, '--out', out, '--seed', '3', ...CLUSTER])).code).toBe(0);
    // the form an older lobes left: no marker
    rmSync(path.join(out, OUTPUT_MARKER));
    expect((await lobes(['cluster', run, '--out', out, '--seed', '4', ...CLUSTER])).code).toBe(0);
    expect(existsSync(path.join(out, OUTPUT_MARKER))).toBe(true);
    rmSync(path.join(out, OUTPUT_MARKER));
    writeFileSync(path.join(out, 'thesis.tex'), THESIS);
    const snap = snapshot(out);
    refused(await lobes(['cluster', run, '--out', out, ...CLUSTER]), 'cluster',
      /cl: folder exists and was not written by lobes cluster/);
    expect(snapshot(out)).toEqual(snap);
  });

  it('wanda refuses a RUN/wanda that is not its own, before the weight pass', async () => {
    const copy = path.join(root, 'copy');
    cpSync(run, copy, { recursive: true });
    rmSync(path.join(copy, 'wanda'), { recursive: true });
    mkdirSync(path.join(copy, 'wanda'));
    writeFileSync(path.join(copy, 'wanda', 'thesis.tex'), THESIS);
    writeFileSync(path.join(copy, 'wanda', 'settings.json'), '{"mine": true}\n');
    const snap = snapshot(copy);
    refused(await lobes(['wanda', copy, ...WANDA]), 'wanda',
      /\/wanda: folder exists and was not written by lobes wanda \(it holds settings\.json, thesis\.tex\)/);
    expect(snapshot(copy)).toEqual(snap);
    // a cluster result copied to RUN/wanda is not replaced by wanda either
    rmSync(path.join(copy, 'wanda'), { recursive: true });
    cpSync(path.join(copy, 'cluster'), path.join(copy, 'wanda'), { recursive: true });
    const snap2 = snapshot(copy);
    refused(await lobes(['wanda', copy, ...WANDA]), 'wanda',
      /\/wanda: folder holds lobes cluster results; lobes wanda does not replace them/);
    expect(snapshot(copy)).toEqual(snap2);
  });

  it('report --out RUN/manifest.json and compare --out A/samples.jsonl are refused and the run is untouched', async () => {
    refused(await lobes(['report', run, '--out', path.join(run, 'manifest.json')]), 'report',
      /manifest\.json: report file is among the run's own files/);
    refused(await lobes(['compare', run, run, '--out', path.join(run, 'samples.jsonl')]), 'compare',
      /samples\.jsonl: report file is among the run's own files/);
    refused(await lobes(['report', run, '--out', path.join(run, 'cluster', 'metrics.json')]), 'report',
      /report file is inside the lobes cluster folder/);
    refused(await lobes(['report', run, '--out', path.join(run, 'activations', 'page.html')]), 'report',
      /report file is among the run's own files/);
    expect(snapshot(run)).toEqual(before);
  });

  it('a report overwrites only a page lobes wrote', async () => {
    const page = path.join(root, 'page.html');
    expect((await lobes(['report', run, '--out', page])).code).toBe(0);
    expect((await lobes(['report', run, '--out', page])).code).toBe(0);
    const mine = path.join(root, 'notes.html');
    writeFileSync(mine, '<!doctype html><title>my notes</title>\n');
    refused(await lobes(['report', run, '--out', mine]), 'report',
      /notes\.html: report file exists and was not written by lobes; it is not overwritten/);
    refused(await lobes(['compare', run, run, '--out', mine]), 'compare',
      /notes\.html: report file exists and was not written by lobes/);
    expect(readFileSync(mine, 'utf8')).toBe('<!doctype html><title>my notes</title>\n');
  });

  it("report --png FILE and --svg into the run's own files fail before the page is written", async () => {
    const out = path.join(root, 'fig-page.html');
    const file = path.join(root, 'figures.png');
    writeFileSync(file, 'not a folder\n');
    refused(await lobes(['report', run, '--out', out, '--png', file]), 'report',
      /figures\.png: --png destination exists and is not a folder/);
    refused(await lobes(['report', run, '--out', out, '--svg', path.join(run, 'activations')]), 'report',
      /--svg folder is among the run's own files/);
    refused(await lobes(['compare', run, run, '--out', out, '--png', path.join(run, 'wanda', 'figs')]), 'compare',
      /--png folder is inside the lobes wanda folder/);
    expect(existsSync(out)).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('not a folder\n');
    expect(snapshot(run)).toEqual(before);
  });

  it('data export --out overwrites only an earlier export, never a user file or a run file', async () => {
    const out = path.join(root, 'social.jsonl');
    expect((await lobes(['data', 'export', 'builtin:social', '--out', out, '--quiet'])).code).toBe(0);
    expect((await lobes(['data', 'export', 'builtin:social', '--out', out, '--quiet'])).code).toBe(0);
    const thesis = path.join(root, 'thesis-export.tex');
    writeFileSync(thesis, THESIS);
    refused(await lobes(['data', 'export', 'builtin:social', '--out', thesis, '--quiet']), 'data',
      /thesis-export\.tex: export file exists and was not written by lobes; it is not overwritten/);
    expect(readFileSync(thesis, 'utf8')).toBe(THESIS);
    // samples.jsonl looks like an export line by line, but it is the run's own file
    refused(await lobes(['data', 'export', 'builtin:social', '--out', path.join(run, 'samples.jsonl'), '--quiet']),
      'data', /export file is among the run's own files/);
    expect(snapshot(run)).toEqual(before);
  });
});
