/**
 * The cloze finding's summary logic (bench/findings-cloze.ts): the table's counts, exact intervals,
 * tests against chance and Holm over the family against numpy/statsmodels/scipy goldens
 * (test/goldens/cloze-finding/make_cloze_finding_goldens.py); the surface-overlap control on
 * planted items (the option that repeats the context wins; ties are not credited to the first
 * option, which is SocialEval's answer); the reduction of eval records and its check against the
 * evaluation's own summary.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkClozeFile, clozeItems, controlHits, longestAnswer, clozeRows, clozeTable, mcnemarExact, metricHits,
  overlapHits, overlapOf, overlapUnits, pairedWithControl, type ClozeFile,
  type ClozeFileItem } from '../../bench/findings-cloze.js';
import type { EvalRecord } from '../../src/eval/types.js';
import { cases } from '../goldens/cases.js';

const G = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../goldens/cloze-finding/cloze_finding_goldens.json'), 'utf8'),
) as {
  options: Record<string, number[]>;
  counts: Record<string, number[]>;
  rows: { language: string; k: number; n: number; p: number; ci95: [number, number]; chance: number; pHolm: number }[];
  mcnemar: { onlyA: number; onlyB: number; p: number }[];
};

/** Items with k options each, answer 0, whose metric m picks the answer on the first counts[m] items (a wrong option otherwise). */
function planted(options: number[], counts: number[]): ClozeFileItem[] {
  return options.map((k, i) => {
    const pick = (m: number) => (i < counts[m]! ? 0 : 1 + (i % (k - 1)));
    return {
      id: `t/${i}`,
      aspect: 'Cooperation',
      answer: 0,
      pick: pick(0),
      pickNorm: pick(1),
      pickBytes: pick(2),
      pickMutualInfo: pick(3),
      options: Array.from({ length: k },
        () => ({ ll: -1, ll0: -2, tokens: 1, chars: 1, bytes: 1, overlap: [1, 2] as [number, number] })),
    };
  });
}

describe('the cloze table', () => {
  const sets = [
    { language: 'en', items: planted(G.options.en!, G.counts.en!) },
    // three skipped items, as the Chinese sample has: they count in no metric
    { language: 'zh',
      items: [...planted(G.options.zh!, G.counts.zh!),
        ...[0, 1, 2].map((i) => ({ id: `s/${i}`, aspect: null, answer: 0, skipped: 'the prompt has 9000 tokens' }))] },
  ];

  it('gives every metric × language its count, exact interval, chance, Poisson-binomial p and Holm over the 8 tests as numpy and statsmodels do', () => {
    const { model } = clozeRows(sets);
    expect(model.map((r) => `${r.language} ${r.metric}`)).toEqual(
      ['en', 'zh'].flatMap((l) => ['acc', 'acc_norm', 'acc_bytes', 'acc_mutual_info'].map((m) => `${l} ${m}`)),
    );
    model.forEach((r, i) => {
      const g = G.rows[i]!;
      expect([r.k, r.n]).toEqual([g.k, g.n]);
      expect(r.chance).toBeCloseTo(g.chance, 12);
      expect(Math.abs(r.p - g.p) / g.p).toBeLessThan(1e-9);
      expect(Math.abs(r.pHolm! - g.pHolm) / g.pHolm).toBeLessThan(1e-9);
      expect(r.ci95![0]).toBeCloseTo(g.ci95[0], 9);
      expect(r.ci95![1]).toBeCloseTo(g.ci95[1], 9);
    });
  });

  it('prints the rows, the skipped items and the overlap control outside the family', () => {
    const md = clozeTable(sets.map((s) => ({ ...s, label: s.language === 'en' ? 'English' : 'Chinese' }))).join('\n');
    expect(md).toContain('| English | acc_mutual_info | 41 / 96 | 42.7 | [32.7, 53.2] | 25.0 | 1.1e-4 | 7.9e-4 |');
    expect(md).toContain('| Chinese | acc_mutual_info | 45 / 93 | 48.4 |');
    expect(md).toContain('Chinese: 3 of 96 items skipped');
    expect(md).toMatch(
      /\| English \| overlap \(share\) \| \d+ \/ 96 \| .* control, not in the family; 96 tied items \|/,
    );
  });

  it('tests acc_mutual_info against the control with the exact McNemar test scipy gives', () => {
    for (const g of cases(G, 'mcnemar')) {
      const a = [...Array(g.onlyA).fill(true), ...Array(g.onlyB).fill(false), true, false];
      const b = [...Array(g.onlyA).fill(false), ...Array(g.onlyB).fill(true), true, false];
      const t = mcnemarExact(a, b);
      expect([t.onlyA, t.onlyB]).toEqual([g.onlyA, g.onlyB]);
      expect(t.p).toBeCloseTo(g.p, 12);
    }
  });
});

describe('the surface-overlap control', () => {
  it('counts distinct lower-cased words and single Han characters, without punctuation', () => {
    expect([...overlapUnits('The cat, the CAT! sat.')].sort()).toEqual(['cat', 'sat', 'the']);
    expect([...overlapUnits('我们一起，我们走')].sort()).toEqual([...'一们我走起'].sort());
    const ctx = overlapUnits('How can Xiaobai show his determination? 小白说');
    expect(overlapOf(ctx, 'Xiaobai shows determination.')).toEqual([2, 3]);
    expect(overlapOf(ctx, '小红说')).toEqual([2, 3]);
  });

  it('picks the option that repeats the context (by share and by count)', () => {
    const mk = (overlaps: [number, number][], answer: number): ClozeFileItem => ({ id: 'x', aspect: null, answer,
      pick: 0, pickNorm: 0, pickBytes: 0, pickMutualInfo: 0,
      options: overlaps.map((o) => ({ ll: 0, ll0: 0, tokens: 1, chars: 1, bytes: 1, overlap: o })) });
    // share and count disagree: 3 of 4 words against 5 of 20
    const items = [mk([[1, 10], [3, 4], [5, 20], [0, 3]], 1), mk([[1, 10], [3, 4], [5, 20], [0, 3]], 2)];
    expect(overlapHits(items, 'share').hits).toEqual([true, false]);
    expect(overlapHits(items, 'count').hits).toEqual([false, true]);
    // the longest option: 40 characters against 10
    const long = mk([[0, 1], [0, 1], [0, 1], [0, 1]], 2);
    long.options![2]!.chars = 40;
    expect(controlHits([long], 'longest option').picks).toEqual([2]);
  });

  it('counts, over the data, how often the correct option is the only longest or tied for it, in code points', () => {
    const l = longestAnswer([
      { options: ['long answer', 'short', 'tiny'], answer: 0 },
      { options: ['same', 'four', 'x'], answer: 0 },
      { options: ['a', 'longer', 'bb', 'c'], answer: 0 },
      // 3 Han characters (9 UTF-8 bytes) against 4 ASCII characters: the ASCII option is longer
      { options: ['我们走', 'abcd'], answer: 0 },
    ]);
    expect(l).toEqual({ n: 4, alone: 1, tied: 1, chance: (1 / 3 + 1 / 3 + 1 / 4 + 1 / 2) / 4 });
  });

  it('breaks ties at random, not in favour of the first option (the answer in SocialEval)', () => {
    const tied = planted(Array(400).fill(4), [0, 0, 0, 0]);
    const o = overlapHits(tied, 'share', 0);
    expect(o.ties).toBe(400);
    const rate = o.hits.filter(Boolean).length / 400;
    expect(rate).toBeGreaterThan(0.18);
    expect(rate).toBeLessThan(0.32);
    expect(new Set(o.picks).size).toBe(4);
    expect(overlapHits(tied, 'share', 0).picks).toEqual(o.picks);
  });
});

describe('the committed file', () => {
  const rec = (id: string, over: Partial<EvalRecord> = {}): EvalRecord => ({
    id,
    task: 'iae',
    language: 'en',
    ability: 'Task Management',
    aspect: 'Self-Management',
    labels: {},
    options: ['Xiaobai goes now.', 'Wait here.'],
    answer: 0,
    shuffles: [],
    vote: 0,
    correct: true,
    cloze: {
      context: '[Question]\nHow can Xiaobai go?\n\n[Options]\n',
      contextTokens: 12,
      delimiter: '',
      options: [
        { text: 'Xiaobai goes now.', logprob: -9, tokens: 4, chars: 17, bytes: 17, greedy: false, tokenLogprobs: [],
          unconditional: -20 },
        { text: 'Wait here.', logprob: -5, tokens: 3, chars: 10, bytes: 10, greedy: false, tokenLogprobs: [],
          unconditional: -6 },
      ],
      pick: 1,
      pickNorm: 1,
      pickBytes: 1,
      pickMutualInfo: 0,
    },
    ...over,
  });

  it('keeps the picks, the scores and the overlap of every item, and skipped items with their reason', () => {
    const items = clozeItems([rec('a'), rec('b', { skipped: 'too long', cloze: undefined })]);
    expect(items[0]).toEqual({ id: 'a', aspect: 'Self-Management', answer: 0, pick: 1, pickNorm: 1, pickBytes: 1,
      pickMutualInfo: 0,
      options: [{ ll: -9, ll0: -20, tokens: 4, chars: 17, bytes: 17, overlap: [1, 3] }, { ll: -5, ll0: -6, tokens: 3,
        chars: 10, bytes: 10, overlap: [0, 2] }] });
    expect(items[1]).toEqual({ id: 'b', aspect: 'Self-Management', answer: 0, skipped: 'too long' });
    expect(metricHits(items, 'acc_mutual_info')).toEqual([true]);
    expect(() => clozeItems([rec('c', { cloze: { ...rec('c').cloze!, pickMutualInfo: null } })])).toThrow(
      /record c has no acc_mutual_info pick/,
    );
  });

  it("refuses items that do not reproduce each evaluation's own counts", () => {
    const m = (correct: number) => ({ n: 1, correct, accuracy: correct, ci95: null, chance: 0.5 });
    const summary = { items: 1, acc: m(0), acc_norm: m(0), acc_bytes: m(0), acc_mutual_info: m(1), exactMatch: 0,
      meanTokens: 3.5 };
    // two shards: the second's item picks acc_mutual_info wrong
    const wrong = rec('b', { cloze: { ...rec('b').cloze!, pickMutualInfo: 1 } });
    const f: ClozeFile = { about: '',
      evaluations: [{ source: {}, summary, items: 1 }, { source: {}, summary: { ...summary, acc_mutual_info: m(0) },
        items: 1 }], items: clozeItems([rec('a'), wrong]) };
    expect(() => checkClozeFile(f, 'f.json')).not.toThrow();
    expect(() => checkClozeFile({ ...f, evaluations: [f.evaluations[1]!, f.evaluations[0]!] }, 'f.json')).toThrow(
      'f.json: acc_mutual_info of evaluation 0 is 1/1 from the items but 0/1 in its summary',
    );
    expect(() => checkClozeFile({ ...f, evaluations: [f.evaluations[0]!] }, 'f.json')).toThrow(
      'f.json: its evaluations list 1 items but it has 2',
    );
  });
});

describe('findings-summary --cloze-into', () => {
  const ROOT = path.resolve(import.meta.dirname, '../..');
  const run = (file: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'bench/findings-summary.ts', '--cloze-into', file], { cwd: ROOT,
      encoding: 'utf8' });

  it('puts the cloze section of bench/cloze/ before the scikit-learn section once, replacing it on a rerun, and leaves other files alone', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-cloze-into-'));
    try {
      const out = path.join(dir, 'summary.md');
      const before =
        '# SmolLM2-135M-Instruct on SocialEval: the numbers\n\n### Runs\n\nrows\n\n### scikit-learn on the same runs (x)\n\nsk\n';
      writeFileSync(out, before);
      expect(run(out).status).toBe(0);
      const after = readFileSync(out, 'utf8');
      expect(run(out).status).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(after);
      expect(after.split('### Cloze scoring').length).toBe(2);
      expect(after.indexOf('### Runs')).toBeLessThan(after.indexOf('### Cloze scoring'));
      expect(after.indexOf('| English | acc_mutual_info |')).toBeGreaterThan(after.indexOf('### Cloze scoring'));
      expect(after.indexOf('| English | acc_mutual_info |')).toBeLessThan(after.indexOf('### scikit-learn'));
      expect(after.endsWith('### scikit-learn on the same runs (x)\n\nsk\n')).toBe(true);
      const other = path.join(dir, 'notes.md');
      writeFileSync(other, 'my notes\n');
      const r = run(other);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('is not an output of bench/findings-summary.ts');
      expect(readFileSync(other, 'utf8')).toBe('my notes\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('trained against the random-weights control', () => {
  // 6 shared items; acc_mutual_info right on trained items 0–3 and on control items 2–5, so
  // both right on 2, trained only on 2 (0, 1), control only on 2 (4, 5): McNemar p = 1 by hand
  // (2 × P(Bin(4, ½) ≤ 2) = 2 × 11/16, capped at 1). acc right on trained 0–4, control none: 5
  // discordant all one way, p = 2 × (½)^5 = 0.0625.
  const mk = (id: string, mi: boolean, acc: boolean): ClozeFileItem => ({ id, aspect: null, answer: 0,
    pick: acc ? 0 : 1, pickNorm: 1, pickBytes: 1, pickMutualInfo: mi ? 0 : 1,
    options: [0, 1].map(() => ({ ll: 0, ll0: 0, tokens: 1, chars: 1, bytes: 1,
      overlap: [0, 1] as [number, number] })
    ) });
  const trained = [0, 1, 2, 3, 4, 5].map((i) => mk(`i${i}`, i <= 3, i <= 4));
  // the control in another order, with one item the trained run lacks and one it skipped
  const control = [5, 4, 3, 2, 1, 0].map((i) => mk(`i${i}`, i >= 2, false));
  control.push(mk('only-control', true, true), { id: 'i9', aspect: null, answer: 0, skipped: 'too long' });

  it('pairs the items by id and tests each metric with the exact McNemar test', () => {
    const lines = pairedWithControl(trained, control);
    expect(lines).toHaveLength(4);
    const mi = lines.find((l) => l.startsWith('acc_mutual_info'))!;
    expect(mi).toContain('same 6 items: 4 against 4 right');
    expect(mi).toContain('only trained 2, only control 2, exact McNemar p = 1.000');
    const acc = lines.find((l) => l.startsWith('acc,'))!;
    expect(acc).toContain('5 against 0 right');
    expect(acc).toContain('p = 0.063');
    expect(mcnemarExact([true, true, true, true, true], [false, false, false, false, false]).p).toBeCloseTo(0.0625, 12);
  });

  it('says nothing when no item is shared', () => {
    expect(pairedWithControl(trained, [mk('other', true, true)])).toEqual([]);
  });
});
