/**
 * Bad input to lobes eval: world trees without what the evaluation needs, multiple-choice
 * items with fewer than 2 options, a model without an lm_head. Each is a one-line error
 * naming the file and the place, with a non-zero exit, and no output folder is left behind.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runEval } from '../../src/eval/run.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { discover } from '../../src/runtime/discover.js';
import { encodeModel, loadModel } from '../../src/onnx/index.js';
import { cli, expectLobesError } from '../runtime/helpers.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const REAL = path.join(DATA, '[1,-1]_en_example_0.json');

describe('bad input to lobes eval', () => {
  let root: string;
  let model: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-bad-'));
    model = ensureGeneratedModel('tiny-llama');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const tree = (name: string, doc: unknown) => {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, '[1,1]_en_example_0.json'), JSON.stringify(doc));
    return dir;
  };

  it.skipIf(!existsSync(REAL))('a world tree without predefined_profiles, or without its beginning node', async () => {
    const doc = JSON.parse(readFileSync(REAL, 'utf8'));
    const noProfiles = tree('no-profiles', { ...doc, predefined_profiles: undefined });
    const out = path.join(root, 'out1');
    let e = await expectLobesError(runEval({ model, data: `socialeval:${noProfiles}`, out, quiet: true }));
    expect(e.message).toMatch(
      /cannot be evaluated: 1 problem; first: .*\[1,1\]_en_example_0\.json: predefined_profiles: missing field "predefined_profiles" \(the protagonist is its first entry\)/,
    );
    expect(existsSync(out)).toBe(false);
    const noStart = tree('no-start', { ...doc,
      interactive_plot: doc.interactive_plot.filter((n: { cid: number }) => n.cid !== 0) });
    e = await expectLobesError(runEval({ model, data: `socialeval:${noStart}`, out, task: 'gae', quiet: true }));
    expect(e.message).toMatch(/interactive_plot: no beginning node \(cid 0\)/);
    expect(existsSync(out)).toBe(false);
    const noName = tree('no-name', { ...doc, predefined_profiles: [{ identity: 'Protagonist' }] });
    e = await expectLobesError(runEval({ model, data: `socialeval:${noName}`, out, task: 'gae', quiet: true }));
    expect(e.message).toMatch(/predefined_profiles\[0\]: the protagonist has no "name"/);
    // Through the CLI: exit code 1, one line on stderr, nothing written.
    const r = await cli(['eval', model, '--data', `socialeval:${noProfiles}`, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/^lobes eval: dataset socialeval:.* cannot be evaluated/);
    expect(existsSync(out)).toBe(false);
  });

  it('a multiple-choice item with fewer than 2 options, an answer that is not an option', async () => {
    const file = path.join(root, 'items.jsonl');
    writeFileSync(
      file,
      [
        JSON.stringify({ q: 'Which?', opts: ['a', 'b', 'c'], ans: 1 }),
        JSON.stringify({ q: 'Only one?', opts: ['a'], ans: 0 }),
        JSON.stringify({ q: 'Where?', opts: ['x', 'y'], ans: 'z' }),
      ].join('\n') + '\n',
    );
    const out = path.join(root, 'out2');
    const e = await expectLobesError(
      runEval({ model, data: `jsonl:${file}?question=q&options=opts&answer=ans`, out, quiet: true }),
    );
    expect(e.message).toMatch(
      /has invalid items: 2 problems; first: .*items\.jsonl: line 2: the item has 1 option; multiple choice needs at least 2/,
    );
    expect(existsSync(out)).toBe(false);
    const r = await cli(['eval', model, '--data', `jsonl:${file}?question=q&options=opts&answer=ans`, '--out', out,
      '--skip-invalid', '--quiet']);
    expect(r.code).toBe(0);
    expect(readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('a model without an lm_head', async () => {
    const src = ensureGeneratedModel('tiny-llama');
    const m = loadModel(src);
    const lm = discover(m).lmHead;
    const g = m.model.graph!;
    const dir = path.join(root, 'headless');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'model.onnx'),
      encodeModel({ ...m.model,
        graph: { ...g, node: g.node.filter((n) => n !== lm.node), output: [{ ...g.output[0]!, name: lm.x }] } }));
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'config.json'])
      copyFileSync(path.join(src, f), path.join(dir, f));
    const items = path.join(root, 'ok.jsonl');
    writeFileSync(items, JSON.stringify({ q: 'Which?', opts: ['a', 'b'], ans: 0 }) + '\n');
    const out = path.join(root, 'out3');
    const e = await expectLobesError(
      runEval({ model: dir, data: `jsonl:${items}?question=q&options=opts&answer=ans`, out, quiet: true }),
    );
    expect(e.message).toMatch(
      /headless\/model\.onnx: unsupported graph: no lm_head: no projection of width 64 after the last layer feeds a graph output/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('usage errors: --task gae with jsonl items, a bad --task, a folder that is not an evaluation', async () => {
    const items = path.join(root, 'ok2.jsonl');
    writeFileSync(items, JSON.stringify({ q: 'Which?', opts: ['a', 'b'], ans: 0 }) + '\n');
    let r = await cli(['eval', model, '--data', `jsonl:${items}?question=q&options=opts&answer=ans`, '--out',
      path.join(root, 'o4'), '--task', 'gae']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--task gae needs a socialeval: spec/);
    r = await cli(['eval', model, '--data', 'x', '--out', path.join(root, 'o4'), '--task', 'all']);
    expect(r.code).toBe(2);
    const junk = path.join(root, 'junk');
    mkdirSync(junk);
    writeFileSync(path.join(junk, 'note.txt'), 'x');
    r = await cli(['eval', model, '--data', `jsonl:${items}?question=q&options=opts&answer=ans`, '--out', junk]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/output folder exists and is not a lobes evaluation/);
  });
});
