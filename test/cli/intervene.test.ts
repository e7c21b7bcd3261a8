/**
 * `--intervene` on `lobes extract` and `lobes eval` (src/cli/intervene.ts): a steering direction
 * computed from a plain run (the mean layers.0.resid_out of one label minus another's, as
 * docs/intervene.md does) added back at that hook; the edit recorded in the manifest and part of
 * the job's identity, so that a rerun with other edits (or none) is refused; bad specs refused
 * in one line.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cli } from '../runtime/helpers.js';
import { openRun } from '../../src/store/index.js';
import { encodeNpy } from '../../src/cluster/npy.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { parseInterventionSpec } from '../../src/cli/intervene.js';
import { scopedEnv } from '../env.js';
import { runAblate } from '../../src/ablate/run.js';
import { GOLD, writeAblateRun, writeGoldenItems } from '../ablate/fixture.js';

let root: string;
let texts: string;
let items: string;
const env = scopedEnv();
const MODEL = ensureGeneratedModel('tiny-llama');
const HOOK = 'layers.0.resid_out';
const LABELS = ['self', 'altruism', 'self', 'altruism', 'self', 'altruism'];
const json = (f: string) => JSON.parse(readFileSync(f, 'utf8'));
const extract = (out: string, extra: string[] = []) =>
  cli(['extract', '--model', MODEL, '--data', `jsonl:${texts}?text=text&label=orientation&id=id`, '--capture',
    'resid,final', '--dtype', 'fp32', '--out', out, '--quiet', ...extra]);

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-intervene-'));
  env.set({ LOBES_HASH_CACHE: path.join(root, 'file-sha256.json') });
  texts = path.join(root, 'texts.jsonl');
  const words = ['I finish my own work first.', 'I help my friend move house.', 'My plan comes before theirs.',
    'She shares her lunch with him.', 'I keep the prize for myself.', 'They give their time to others.'];
  writeFileSync(texts,
    words.map((t, i) => JSON.stringify({ id: `t${i}`, text: t, orientation: LABELS[i] })).join('\n') + '\n');
  items = path.join(root, 'items.jsonl');
  const qs = [
    { id: 'a', q: 'What is the capital of France?', o: ['Berlin', 'Paris', 'Rome'], a: 1 },
    { id: 'b', q: 'Which number is even?', o: ['3', '8', '5'], a: 1 },
  ];
  writeFileSync(items, qs.map((x) => JSON.stringify(x)).join('\n') + '\n');
});
afterAll(() => {
  env.restore();
  rmSync(root, { recursive: true, force: true });
});

/** The mean of `hook` over the rows labelled a minus the mean over those labelled b. */
async function direction(run: string, hook: string, a: string, b: string): Promise<Float32Array> {
  const r = await openRun(run);
  const dim = r.hooks().find((h) => h.name === hook)!.dim;
  const x = await r.read(hook);
  const d = new Float64Array(dim);
  const n = { [a]: 0, [b]: 0 } as Record<string, number>;
  r.samples.forEach((s) => n[s.labels.orientation!]!++);
  r.samples.forEach((s, i) => {
    const w = s.labels.orientation === a ? 1 / n[a]! : -1 / n[b]!;
    for (let j = 0; j < dim; j++) d[j]! += w * x[i * dim + j]!;
  });
  return Float32Array.from(d);
}

describe('lobes extract --intervene', () => {
  it('adds a steering direction computed from a plain run, records it, and refuses a rerun with other edits', async () => {
    const plain = path.join(root, 'plain');
    expect((await extract(plain)).code).toBe(0);
    const dir = await direction(plain, HOOK, 'self', 'altruism');
    const npy = path.join(root, 'direction.npy');
    writeFileSync(npy, encodeNpy(dir, [dir.length]));
    const steered = path.join(root, 'steered');
    const r = await extract(steered, ['--intervene', `${HOOK}:add:${npy}`]);
    expect(r.code, r.err).toBe(0);
    // recorded with its vector, and part of the run's identity
    const m = json(path.join(steered, 'manifest.json'));
    expect(m.capture.interventions).toHaveLength(1);
    expect(m.capture.interventions[0]).toMatchObject({ hook: HOOK, op: 'add', positions: 'all' });
    expect(Float32Array.from(m.capture.interventions[0].value)).toEqual(dir);
    expect(m.identity).not.toBe(json(path.join(plain, 'manifest.json')).identity);
    expect(json(path.join(plain, 'manifest.json')).capture.interventions).toBeUndefined();
    // the stored value at the hook is the plain one plus the direction; the final state moved
    const [p, s] = [await openRun(plain), await openRun(steered)];
    const [xp, xs] = [await p.read(HOOK), await s.read(HOOK)];
    for (let i = 0; i < xp.length; i++) expect(xs[i]! - xp[i]!).toBeCloseTo(dir[i % dir.length]!, 4);
    const [fp, fs] = [await p.read('final.hidden'), await s.read('final.hidden')];
    expect(fp.some((v, i) => Math.abs(v - fs[i]!) > 1e-3)).toBe(true);
    // the same command again: complete, nothing to do
    const again = await extract(steered, ['--intervene', `${HOOK}:add:${npy}`]);
    expect(again.code, again.err).toBe(0);
    // without the edit, with another value, or on the plain run with one: refused in one line
    for (const [out, extra] of [[steered, []], [steered, ['--intervene', `${HOOK}:add:0.5`]], [plain, ['--intervene',
      `${HOOK}:add:${npy}`]]] as [string, string[]][])
    {
      const x = await extract(out, extra);
      expect(x.code).toBe(1);
      expect(x.err.trim().split('\n')).toHaveLength(1);
      expect(x.err).toMatch(/different settings: interventions \(--intervene\) is/);
    }
  });

  it("docs/intervene.md's direction script computes the same direction from the run", async () => {
    const page = readFileSync(path.resolve(__dirname, '../../docs/intervene.md'), 'utf8');
    const script = /```js\n(\/\/ direction\.mjs[\s\S]*?)```/.exec(page)![1]!.replace("from 'lobes'",
      `from ${JSON.stringify(path.resolve(__dirname, '../../src/index.ts'))}`);
    const cwd = path.join(root, 'docs-page');
    cpSync(path.join(root, 'plain'), path.join(cwd, 'runs', 'plain'), { recursive: true });
    writeFileSync(path.join(cwd, 'direction.mts'), script);
    const r = spawnSync(process.execPath, ['--import',
      path.resolve(__dirname, '../../node_modules/tsx/dist/loader.mjs'), 'direction.mts'], { cwd, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const got = Float32Array.from(json(path.join(cwd, 'direction.json')) as number[]);
    const want = await direction(path.join(root, 'plain'), HOOK, 'self', 'altruism');
    got.forEach((x, j) => expect(x).toBeCloseTo(want[j]!, 6));
  });

  it("a scale of 1 stores the plain run's values exactly (the edit is recorded all the same)", async () => {
    const one = path.join(root, 'scale1');
    expect((await extract(one, ['--intervene', `${HOOK}:scale:1`])).code).toBe(0);
    const [p, s] = [await openRun(path.join(root, 'plain')), await openRun(one)];
    for (const h of ['layers.0.resid_out', 'layers.1.resid_out', 'final.hidden'])
      expect(await s.read(h)).toEqual(await p.read(h));
    expect(s.manifest.capture.interventions).toEqual([{ hook: HOOK, op: 'scale', value: 1, positions: 'all' }]);
  });

  it('refuses bad specs and vectors in one line', async () => {
    const bad = path.join(root, 'bad.json');
    writeFileSync(bad, JSON.stringify([1, 2, 3]));
    const cases: [string, number, RegExp][] = [
      [`${HOOK}:add`, 2, /add needs a value/],
      [`${HOOK}:push:1`, 2, /unknown operation "push"/],
      [`${HOOK}:zero:1`, 2, /zero takes no value/],
      [`${HOOK}:scale:half`, 2, /neither a number nor a \.npy or \.json file/],
      [`${HOOK}:add:${path.join(root, 'nope.npy')}`, 1, /nope\.npy: intervention vector file not found/],
      [`${HOOK}:add:${bad}`, 1, /the vector has 3 numbers but layers\.0\.resid_out has width 64/],
      ['layers.0.resid:zero', 1, /unknown hook "layers\.0\.resid"/],
    ];
    for (const [spec, code, msg] of cases) {
      const r = await extract(path.join(root, 'never'), ['--intervene', spec]);
      expect(r.code, spec).toBe(code);
      expect(r.err.trim().split('\n'), spec).toHaveLength(1);
      expect(r.err, spec).toMatch(msg);
    }
  });

  it('parses HOOK:OP[:VALUE][:last]', () => {
    expect(parseInterventionSpec('layers.2.mlp.down_in:scale:0.5')).toEqual({ hook: 'layers.2.mlp.down_in', op: 'scale',
      value: 0.5, positions: 'all' });
    expect(parseInterventionSpec('final.hidden:zero:last')).toEqual({ hook: 'final.hidden', op: 'zero',
      positions: 'last' });
    expect(parseInterventionSpec('layers.0.resid_out:add:-2:last')).toEqual({ hook: 'layers.0.resid_out', op: 'add',
      value: -2, positions: 'last' });
  });
});

describe('lobes eval --intervene', () => {
  it('records the edits in eval.json, changes the scores, and refuses to resume without them', async () => {
    const args = (out: string,
      extra: string[] = []) => ['eval', '--model', MODEL, '--data',
      `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out', out, '--scoring', 'cloze', '--chat-template',
      'off', '--bootstrap', '0', '--quiet', ...extra];
    const plain = path.join(root, 'eval-plain');
    const zeroed = path.join(root, 'eval-zeroed');
    expect((await cli(args(plain))).code).toBe(0);
    const r = await cli(
      args(zeroed, ['--intervene', 'layers.1.mlp.down_in:zero', '--intervene', `${HOOK}:scale:0.5:last`]),
    );
    expect(r.code, r.err).toBe(0);
    const m = json(path.join(zeroed, 'eval.json'));
    expect(m.settings.interventions).toEqual([
      { hook: 'layers.1.mlp.down_in', op: 'zero', positions: 'all' },
      { hook: HOOK, op: 'scale', value: 0.5, positions: 'last' },
    ]);
    expect(json(path.join(plain, 'eval.json')).settings.interventions).toBeUndefined();
    const records = (d: string) => readFileSync(path.join(d, 'records.jsonl'), 'utf8');
    expect(records(zeroed)).not.toBe(records(plain));
    const on = await cli(
      args(path.join(root, 'eval-never'), ['--share-prefix', 'on', '--intervene', `${HOOK}:add:1:last`]),
    );
    expect(on.code).toBe(2);
    expect(on.err).toMatch(/--share-prefix on cannot go with an --intervene at :last/);
    const x = await cli(args(zeroed));
    expect(x.code).toBe(1);
    expect(x.err.trim().split('\n')).toHaveLength(1);
    expect(x.err).toMatch(
      /different settings: --intervene is .*layers\.1\.mlp\.down_in:zero.* in .* but "none" in this command/,
    );
  });
});

describe('lobes attend --intervene', () => {
  it('reads the weights under the edit, records it, and refuses to resume without it', async () => {
    const args = (out: string,
      extra: string[] = []) => ['attend', '--model', MODEL, '--data',
      `jsonl:${texts}?text=text&label=orientation&id=id`, '--position', 'last', '--layers', 'all', '--bootstrap', '0',
      '--out', out, '--quiet', ...extra];
    const plain = path.join(root, 'attend-plain');
    const steered = path.join(root, 'attend-steered');
    expect((await cli(args(plain))).code).toBe(0);
    const r = await cli(args(steered, ['--intervene', `${HOOK}:add:0.75`]));
    expect(r.code, r.err).toBe(0);
    const m = json(path.join(steered, 'attend.json'));
    expect(m.facts.settings.interventions).toEqual([{ hook: HOOK, op: 'add', value: 0.75, positions: 'all' }]);
    expect(m.identity['--intervene']).toBe(`${HOOK}:add:0.75`);
    expect(json(path.join(plain, 'attend.json')).identity['--intervene']).toBeUndefined();
    // layer 1 reads the edited stream: its weights moved
    const items = (d: string) => readFileSync(path.join(d, 'items.jsonl'), 'utf8');
    expect(items(steered)).not.toBe(items(plain));
    const x = await cli(args(steered));
    expect(x.code).toBe(1);
    expect(x.err.trim().split('\n')).toHaveLength(1);
    expect(x.err).toMatch(/--intervene is "layers\.0\.resid_out:add:0\.75" in .* but absent in this command/);
  });
});

describe('lobes ablate --intervene', () => {
  it('scores before and after ablating under the edit, records it, and refuses to resume without it', async () => {
    const dir = path.join(root, 'ablate');
    const run = writeAblateRun(path.join(dir, 'run'), MODEL, GOLD.regions, GOLD.block);
    const spec = writeGoldenItems(dir);
    const plain = path.join(dir, 'plain');
    const edited = path.join(dir, 'edited');
    await runAblate({ run, region: 'A', data: spec, out: plain, random: 1, quiet: true });
    const r = await cli(['ablate', run, '--region', 'A', '--data', spec, '--out', edited, '--random', '1', '--quiet',
      '--intervene', 'layers.1.mlp.down_in:zero']);
    expect(r.code, r.err).toBe(0);
    const job = json(path.join(edited, 'job.json'));
    expect(job.settings.interventions).toEqual([{ hook: 'layers.1.mlp.down_in', op: 'zero', positions: 'all' }]);
    expect(json(path.join(plain, 'job.json')).settings.interventions).toBeUndefined();
    // the log-likelihoods before ablating are those of the edited model
    const before = (d: string) =>
      readFileSync(path.join(d, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).before as number);
    const [bp, be] = [before(plain), before(edited)];
    bp.forEach((b, i) => expect(Math.abs(b - GOLD.before[i]!)).toBeLessThan(1e-3));
    expect(be.some((b, i) => Math.abs(b - bp[i]!) > 1e-2)).toBe(true);
    const x = await cli(['ablate', run, '--region', 'A', '--data', spec, '--out', edited, '--random', '1', '--quiet']);
    expect(x.code).toBe(1);
    expect(x.err.trim().split('\n')).toHaveLength(1);
    expect(x.err).toMatch(/made with other settings, data, run or model \(settings differs\)/);
  }, 120_000);
});
