/**
 * `--limit N --seed S` selects the same items in lobes extract, lobes eval and lobes attend for
 * the same data (the ids each command wrote are compared), stratified by language and aspect.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';

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
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: `q${String(i).padStart(2, '0')}`, question: `What does person ${i} do next in the story?`, options: ['help', 'leave', 'wait'], answer: i % 3, aspect: 'ABC'[i % 3], language: ['en', 'zh'][Math.floor(i / 3) % 2] }));
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const text = `jsonl:${file}?text=question&label=language,aspect&id=id`;
    const mcq = `jsonl:${file}?question=question&options=options&answer=answer&label=language,aspect&id=id`;
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const sample = async (seed: number) => {
      const o = path.join(dir, `seed${seed}`);
      const lim = ['--limit', '8', '--seed', String(seed), '--quiet'];
      expect(await main(['extract', '--model', TINY, '--data', text, '--out', `${o}-x`, '--capture', 'final', ...lim])).toBe(0);
      expect(await main(['eval', '--model', TINY, '--data', mcq, '--out', `${o}-e`, '--shuffles', '1', '--bootstrap', '0', '--chat-template', 'off', ...lim])).toBe(0);
      expect(await main(['attend', '--model', TINY, '--data', text, '--out', `${o}-a`, '--layers', 'all', '--bootstrap', '0', ...lim])).toBe(0);
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
    expect(Object.fromEntries([...per].sort())).toEqual({ 'en/A': 2, 'en/B': 2, 'en/C': 1, 'zh/A': 1, 'zh/B': 1, 'zh/C': 1 });
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
    const base = ['extract', '--model', TINY, '--data', 'builtin:social', '--capture', 'final,mlp,resid', '--limit', '6', '--quiet'];
    expect(await main([...base, '--out', path.join(dir, 'all')])).toBe(0);
    expect(await main([...base, '--out', path.join(dir, 'last'), '--layers', 'last:1'])).toBe(0);
    const points = (d: string) => JSON.parse(readFileSync(path.join(dir, d, 'manifest.json'), 'utf8')).capture as { points: { name: string }[]; selection: string[] };
    const all = points('all');
    const last = points('last');
    const layers = new Set(all.points.map((p) => /^layers\.(\d+)\./.exec(p.name)?.[1]).filter((x) => x !== undefined).map(Number));
    expect(layers.size).toBeGreaterThan(1);
    const top = Math.max(...layers);
    const want = all.points.map((p) => p.name).filter((n) => !n.startsWith('layers.') || n.startsWith(`layers.${top}.`));
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
