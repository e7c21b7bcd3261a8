/**
 * Hints name only what helps: the flags the command has, the options a spec accepts, the
 * skip flag only where skipping leaves items to use, a folder given as `.` by its full path,
 * and the ablation header's unit as measured.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatAblate } from '../../src/cli/ablate.js';
import { main } from '../../src/cli/main.js';
import { LobesError } from '../../src/util/errors.js';
import type { AblateSummary } from '../../src/ablate/store.js';
import { capture } from '../capture.js';
import { tree } from '../tree.js';

const TINY = path.resolve(__dirname, '../../models/tiny-llama');
const HAVE = existsSync(path.join(TINY, 'model.onnx'));

afterEach(() => vi.restoreAllMocks());

async function oneLine(argv: string[], code: number): Promise<string> {
  const c = capture();
  const rc = await main(argv);
  vi.restoreAllMocks();
  expect(rc).toBe(code);
  const lines = c.err().split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('hints', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lobes-hints-'));

  it('a spec that takes no options says what to write instead of "accepts " and nothing', async () => {
    const file = path.join(dir, 'a.jsonl');
    writeFileSync(file, '{"question":"hi","aspect":"A"}\n');
    const line = await oneLine(['data', 'inspect', `jsonl:${file}?question=q`], 2);
    expect(line).toBe(
      `lobes data: dataset spec "jsonl:${file}?question=q": unknown option "question" (jsonl:FILE without text= is a file in lobes' sample form and takes no options; name your fields with text=FIELD&label=FIELD, e.g. jsonl:FILE?text=question&label=aspect)`,
    );
    expect(line).not.toMatch(/accepts \)/);
  });

  it('--skip-invalid is offered only where skipping leaves items: not for an empty file or a pipe', async () => {
    const empty = path.join(dir, 'empty.jsonl');
    writeFileSync(empty, '');
    const fifo = path.join(dir, 'pipe.jsonl');
    execFileSync('mkfifo', [fifo]);
    const mixed = path.join(dir, 'mixed.jsonl');
    writeFileSync(mixed, '{"t":"a","l":"x"}\n{"t":5,"l":"y"}\n');
    const before = tree(dir);
    // data inspect lists the problems first; its refusal is the last line
    const inspect = async (f: string) => {
      const c = capture();
      expect(await main(['data', 'inspect', `jsonl:${f}?text=t&label=l`, '--quiet'])).toBe(1);
      vi.restoreAllMocks();
      return c.err().trim().split('\n').pop()!;
    };
    expect(await inspect(empty)).toMatch(/file is empty \(no JSON lines\) \(fix the input\)$/);
    expect(await inspect(fifo)).toMatch(/is not a regular file \(a pipe or device\); give a file \(fix the input\)$/);
    expect(await inspect(mixed)).toMatch(/\(fix the input, or pass --skip-invalid to leave those items out\)$/);
    const evalEmpty = await oneLine(['eval', TINY, '--data',
      `jsonl:${empty}?question=question&options=options&answer=answer`, '--out', path.join(dir, 'e'), '--quiet'], 1);
    expect(evalEmpty).toMatch(/file is empty \(no JSON lines\) \(fix the lines\)$/);
    expect(tree(dir)).toEqual(before);
  });

  it('the weights hints of wanda and ablate name --model, a flag both have (neither has --weights)', async () => {
    const run = path.join(dir, 'run');
    if (!HAVE) return;
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(
      await main(['extract', '--model', TINY, '--data', 'builtin:social', '--limit', '12', '--out', run, '--quiet']),
    ).toBe(0);
    vi.restoreAllMocks();
    const before = tree(run);
    const line = await oneLine(['wanda', run, '--model', path.join(dir, 'nowhere'), '--quiet'], 1);
    expect(line).toBe(
      `lobes wanda: ${
        path.join(dir, 'nowhere')
      }: weights folder or file not found (give --model with an ONNX model folder, a safetensors checkpoint or a GGUF file)`,
    );
    expect(tree(run)).toEqual(before);
  }, 30000);

  it('a folder given as . is named by its full path', async () => {
    expect(new LobesError('no .onnx file in the model folder', { file: '.' }).message).toBe(
      `${process.cwd()}: no .onnx file in the model folder`,
    );
    expect(new LobesError('x', { file: `${dir}/.` }).message).toBe(`${dir}: x`);
    expect(new LobesError('x', { file: 'a/b.json' }).message).toBe('a/b.json: x');
    expect(await oneLine(['inspect', `${dir}/.`], 1)).toBe(
      `lobes inspect: ${dir}: no .onnx file in the model folder (pass the .onnx file itself)`,
    );
  });

  it('the --task iae header says accuracy, the continuation header log-likelihood', () => {
    const base = { kind: 'ablate', version: 1, by: 'aspect', labels: ['A'], random: 5, regions: [], cells: [],
      specificity: [], pFloor: 1 / 6, scope: 'matrix', seed: 0, items: 10 } as unknown as AblateSummary;
    expect(formatAblate({ ...base, unit: 'nats' })).toBe(
      'mean change of log-likelihood (nats, after − before) per item, by aspect; p against 5 random regions (rank p floor 0.167; the t test heads a row only when its random regions pass Shapiro–Wilk at 0.05)',
    );
    const iae = formatAblate({ ...base, unit: 'accuracy', iae: { metric: 'acc' } as AblateSummary['iae'] });
    expect(iae).toBe(
      'mean change of accuracy (acc, share answered right, after − before) per item, by aspect; p against 5 random regions (rank p floor 0.167; the t test heads a row only when its random regions pass Shapiro–Wilk at 0.05)',
    );
    expect(iae).not.toContain('log-likelihood');
  });
});
