/**
 * `--limit N --seed S` selects the same items in lobes extract, lobes eval and lobes attend for
 * the same data (the ids each command wrote are compared), stratified by language and aspect.
 * Inside a stratum an item's place depends only on its own id and the seed, so the sample does
 * not depend on the data's order, and lists that differ by a few items (eval reads SocialEval's
 * composite items, extract by default does not) share nearly all of their samples.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { limitItems } from '../../src/data/subset.js';
import { loadDataset } from '../../src/data/index.js';
import { loadEvalData } from '../../src/eval/units.js';
import { Rng } from '../../src/util/rng.js';

const TINY = path.resolve(__dirname, '../../models/tiny-llama');
const HAVE = existsSync(path.join(TINY, 'model.onnx'));

afterEach(() => vi.restoreAllMocks());

function ids(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).id as string);
}

describe.skipIf(!HAVE)('--limit across commands', () => {
  it('extract, eval and attend keep the same seeded stratified sample', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-limit-'));
    const file = path.join(dir, 'items.jsonl');
    const rows = Array.from({ length: 30 },
      (_, i) => ({ id: `q${String(i).padStart(2, '0')}`, question: `What does person ${i} do next in the story?`,
        options: ['help', 'leave', 'wait'], answer: i % 3, aspect: 'ABC'[i % 3],
        language: ['en', 'zh'][Math.floor(i / 3) % 2] }));
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const text = `jsonl:${file}?text=question&label=language,aspect&id=id`;
    const mcq = `jsonl:${file}?question=question&options=options&answer=answer&label=language,aspect&id=id`;
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const sample = async (seed: number) => {
      const o = path.join(dir, `seed${seed}`);
      const lim = ['--limit', '8', '--seed', String(seed), '--quiet'];
      expect(await main(['extract', '--model', TINY, '--data', text, '--out', `${o}-x`, '--capture', 'final', ...lim]))
        .toBe(0);
      expect(
        await main(['eval', '--model', TINY, '--data', mcq, '--out', `${o}-e`, '--shuffles', '1', '--bootstrap', '0',
          '--chat-template', 'off', ...lim]),
      ).toBe(0);
      expect(
        await main(['attend', '--model', TINY, '--data', text, '--out', `${o}-a`, '--layers', 'all', '--bootstrap', '0',
          ...lim]),
      ).toBe(0);
      const x = ids(path.join(`${o}-x`, 'samples.jsonl'));
      expect(ids(path.join(`${o}-e`, 'records.jsonl'))).toEqual(x);
      expect(ids(path.join(`${o}-a`, 'items.jsonl'))).toEqual(x);
      return x;
    };
    const a = await sample(5);
    expect(a.length).toBe(8);
    // stratified: 6 strata of 5 items; 8 = one from each and two more (largest remainders tie:
    // the first strata by name, en/A and en/B)
    const per = new Map<string, number>();
    for (const id of a) {
      const r = rows.find((x) => x.id === id)!;
      per.set(`${r.language}/${r.aspect}`, (per.get(`${r.language}/${r.aspect}`) ?? 0) + 1);
    }
    expect(Object.fromEntries([...per].sort())).toEqual({ 'en/A': 2, 'en/B': 2, 'en/C': 1, 'zh/A': 1, 'zh/B': 1,
      'zh/C': 1 });
    // seeded: another seed, another sample (the same in every command again)
    const b = await sample(6);
    expect(b).not.toEqual(a);
    // recorded in the run
    const m = JSON.parse(readFileSync(path.join(dir, 'seed5-x', 'manifest.json'), 'utf8'));
    expect(m.dataset.limit).toEqual({ limit: 8, by: ['language', 'aspect'], seed: 5, of: 30 });
  }, 180000);

  it('extract --layers stores the per-layer points of the chosen layers only', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-layers-'));
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const base = ['extract', '--model', TINY, '--data', 'builtin:social', '--capture', 'final,mlp,resid', '--limit',
      '6', '--quiet'];
    expect(await main([...base, '--out', path.join(dir, 'all')])).toBe(0);
    expect(await main([...base, '--out', path.join(dir, 'last'), '--layers', 'last:1'])).toBe(0);
    const points = (d: string) =>
      JSON.parse(readFileSync(path.join(dir, d, 'manifest.json'), 'utf8')).capture as { points: { name: string }[];
        selection: string[] };
    const all = points('all');
    const last = points('last');
    const layers = new Set(
      all.points.map((p) => /^layers\.(\d+)\./.exec(p.name)?.[1]).filter((x) => x !== undefined).map(Number),
    );
    expect(layers.size).toBeGreaterThan(1);
    const top = Math.max(...layers);
    const want = all.points.map((p) => p.name).filter((n) =>
      !n.startsWith('layers.') || n.startsWith(`layers.${top}.`)
    );
    expect(last.points.map((p) => p.name)).toEqual(want);
    expect(last.selection).toEqual(['final', 'mlp', 'resid', 'layers=last:1']);
    expect(all.selection).toEqual(['final', 'mlp', 'resid']);
    vi.restoreAllMocks();
    const c = { err: '' };
    vi.spyOn(process.stderr, 'write').mockImplementation((x: any) => ((c.err += String(x)), true));
    expect(await main([...base, '--out', path.join(dir, 'bad'), '--layers', '7'])).toBe(2);
    expect(c.err).toContain('--layers: layer 7 does not exist');
  }, 120000);
});

/** Labelled items: two languages, four aspects, ids that say nothing about their order. */
function labelled(n: number, prefix = 'item') {
  return Array.from({ length: n },
    (_, i) => ({ id: `${prefix}-${(i * 7919) % 10007}`,
      labels: { language: i % 3 === 0 ? 'zh' : 'en', aspect: ['A', 'B', 'C', 'D'][i % 4]! } }));
}
const stratum = (x: { labels: Record<string, string> }) => `${x.labels.language}/${x.labels.aspect}`;
const idSet = (xs: { id: string }[]) => new Set(xs.map((x) => x.id));

describe("--limit: an item's place depends only on its own id", () => {
  it('inside each stratum, the items kept are the ones with the smallest sha256(seed, NUL, id), computed here', () => {
    const xs = labelled(300);
    for (const seed of [0, 1, 4294967295]) {
      for (const n of [1, 13, 50, 299]) {
        const got = limitItems(xs, ['language', 'aspect'], { limit: n, seed }).items;
        expect(got.length).toBe(n);
        const rank = (id: string) => createHash('sha256').update(`${seed}\u0000${id}`, 'utf8').digest('hex');
        const per = new Map<string, number>();
        for (const x of got) per.set(stratum(x), (per.get(stratum(x)) ?? 0) + 1);
        const want = new Set<string>();
        for (const [k, m] of per) {
          const members = xs.filter((x) => stratum(x) === k).map((x) => x.id);
          members.sort((a, b) => (rank(a) < rank(b) ? -1 : 1));
          for (const id of members.slice(0, m)) want.add(id);
        }
        expect([...idSet(got)].sort(), `seed ${seed}, --limit ${n}`).toEqual([...want].sort());
      }
    }
  });

  it('does not depend on the data order: shuffled input, the same ids (in the new order)', () => {
    const xs = labelled(400);
    const a = limitItems(xs, ['language', 'aspect'], { limit: 60, seed: 7 }).items;
    for (const s of [1, 2, 3]) {
      const ys = [...xs];
      new Rng(s).shuffle(ys);
      const b = limitItems(ys, ['language', 'aspect'], { limit: 60, seed: 7 }).items;
      expect([...idSet(b)].sort()).toEqual([...idSet(a)].sort());
      const pos = new Map(ys.map((y, i) => [y.id, i]));
      const at = b.map((y) => pos.get(y.id)!);
      expect(at).toEqual([...at].sort((p, q) => p - q));
    }
  });

  it('a list with extra items (new and existing strata) keeps most of the sample', () => {
    const xs = labelled(600);
    // 40 more: composite-like items of their own strata and items of the existing strata
    const extra = Array.from({ length: 40 },
      (_, i) => ({ id: `extra-${i}`,
        labels: { language: i % 2 ? 'en' : 'zh', aspect: i < 16 ? 'A + B' : ['A', 'B', 'C', 'D'][i % 4]! } }));
    const ys = [...xs.slice(0, 300), ...extra, ...xs.slice(300)];
    for (const seed of [0, 1, 2]) {
      const a = idSet(limitItems(xs, ['language', 'aspect'], { limit: 60, seed }).items);
      const b = limitItems(ys, ['language', 'aspect'], { limit: 60, seed }).items;
      const kept = b.filter((x) => a.has(x.id)).length;
      expect(kept, `seed ${seed}: ${kept} of 60 kept`).toBeGreaterThanOrEqual(44);
    }
  });
});

const SOCIALEVAL = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const HAVE_SE = existsSync(SOCIALEVAL);
if (!HAVE_SE)
  console.log(
    `test/cli/limit.test.ts: SocialEval overlap skipped, ${SOCIALEVAL} is absent (the published SocialEval world trees)`,
  );

describe.skipIf(!HAVE_SE)('--limit on the real SocialEval lists', () => {
  it(
    "extract's socialeval: samples and eval's IAE items (composite included) share at least 45 of 50; all 50 when extract includes composite items",
    async () => {
      for (const lang of ['en', 'zh']) {
        const spec = `socialeval:${SOCIALEVAL}?lang=${lang}`;
        const ds = await loadDataset(spec);
        const withComposite = await loadDataset(`${spec}&composite=include`);
        const ev = loadEvalData(spec, { task: 'iae', cot: false, limit: 50, seed: 0 });
        const evalIds = ev.units.map((u) => (u.kind === 'item' ? u.facts.id : ''));
        expect(evalIds.length).toBe(50);
        // the two lists differ: eval reads the composite items too
        expect(ev.available).toBeGreaterThan(ds.samples.length);
        const x = idSet(limitItems(ds.samples, ds.axes, { limit: 50, seed: 0 }).items);
        const shared = evalIds.filter((id) => x.has(id)).length;
        expect(shared, `${lang}: ${shared} of 50 shared`).toBeGreaterThanOrEqual(45);
        const xc = idSet(limitItems(withComposite.samples, withComposite.axes, { limit: 50, seed: 0 }).items);
        expect(evalIds.filter((id) => xc.has(id)).length, `${lang} with composite=include`).toBe(50);
      }
    },
    180000,
  );
});
