/**
 * The question/response swap composition (socialeval: swap=SEED): on generated world trees whose
 * every question and response says which item it belongs to, so the pairing can be read back
 * from the texts alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/data/index.js';
import { crossChance } from '../../src/data/swap.js';
import { ABILITIES } from '../../src/data/bessi.js';
import { UsageError } from '../../src/util/errors.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'lobes-swap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// one ability per aspect, and a different number of items per aspect (as in SocialEval)
const PICK = ['Teamwork Skill', 'Leadership Skill', 'Stress Regulation', 'Creative Skill', 'Task Management'];
const COUNT = [12, 8, 10, 6, 24];
const ASPECT = new Map(ABILITIES.map((a) => [a.name, a.aspect]));

/** Two trees (en), each node one skill choice; question "Q<k>: <ability>?", response "R<k> says hello". */
function writeTrees(): void {
  let k = 0;
  for (const f of ['[1,0]_en_example_0.json', '[0,1]_en_example_1.json']) {
    const plot: unknown[] = [];
    PICK.forEach((ability, a) => {
      for (let i = 0; i < COUNT[a] / 2; i++) {
        plot.push({
          cid: plot.length,
          choices: [{ cid: 1, type: 'skill choice', skill: [ability],
            content: { role: 'Ann', content: `R${k} says hello` },
            confusion: [{ type: 'skill question', question: [`Q${k}: how does Ann show ${ability}?`] }] }],
        });
        k++;
      }
    });
    writeFileSync(path.join(dir, f), JSON.stringify({ scenario: `scene of ${f}`, interactive_plot: plot }));
  }
}
writeTrees();
const N = COUNT.reduce((a, b) => a + b, 0);
const num = (re: RegExp, t: string) => Number(re.exec(t)![1]);

describe('socialeval: swap=SEED', () => {
  it('gives every response with its own question and with one of another aspect, labelled by both', async () => {
    const plain = await loadDataset(`socialeval:${dir}`);
    const d = await loadDataset(`socialeval:${dir}?swap=7`);
    expect(plain.samples).toHaveLength(N);
    expect(d.samples).toHaveLength(2 * N);
    expect(d.axes).toEqual(['aspect', 'ability', 'language', 'orientation', 'question_aspect', 'response_aspect',
      'question_ability', 'swapped', 'item_group']);
    const byId = new Map(plain.samples.map((s) => [s.id, s]));
    const aspectOfK = new Map(plain.samples.map((s) => [num(/^Q(\d+):/, s.text), s.labels.aspect]));
    for (let i = 0; i < N; i++) {
      const own = d.samples[2 * i];
      const sw = d.samples[2 * i + 1];
      const item = plain.samples[i];
      expect(own.id).toBe(`${item.id}/own`);
      expect(sw.id).toBe(`${item.id}/swapped`);
      // own: exactly the plain item's text
      expect(own.text).toBe(item.text);
      expect([own.labels.swapped, own.labels.question_aspect, own.labels.response_aspect]).toEqual(['own',
        item.labels.aspect, item.labels.aspect]);
      // swapped: the same response, after the question of another item, read back from the text
      const [q, r] = sw.text.split('\n');
      expect(r).toBe(item.text.split('\n')[1]);
      const qk = num(/^Q(\d+):/, q);
      expect(sw.labels.question_aspect).toBe(aspectOfK.get(qk));
      expect(sw.labels.question_aspect).toBe(ASPECT.get(/show (.*)\?$/.exec(q)![1]));
      expect(sw.labels.question_aspect).not.toBe(item.labels.aspect);
      expect(sw.labels.response_aspect).toBe(item.labels.aspect);
      expect(sw.labels.aspect).toBe(item.labels.aspect);
      expect(sw.labels.swapped).toBe('swapped');
      expect(byId.get(sw.provenance!.question_from)!.text.split('\n')[0]).toBe(q);
    }
    expect(d.composition).toMatchObject({ kind: 'swap', seed: 7, responses: N });
    expect(d.composition!.pairsSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(d.spec).toContain('swap=7');
  });

  it('is seeded: the same seed gives the same pairing, another seed another', async () => {
    const a = await loadDataset(`socialeval:${dir}?swap=7`);
    const b = await loadDataset(`socialeval:${dir}?swap=7`);
    const c = await loadDataset(`socialeval:${dir}?swap=8`);
    expect(b.samples.map((s) => s.text)).toEqual(a.samples.map((s) => s.text));
    expect(b.composition!.pairsSha256).toBe(a.composition!.pairsSha256);
    expect(c.composition!.pairsSha256).not.toBe(a.composition!.pairsSha256);
    expect(c.samples.filter((s, i) => s.text !== a.samples[i].text).length).toBeGreaterThan(N / 2);
  });

  it("spreads the swapped questions over the other aspects and uses each aspect's questions in turn", async () => {
    // over many seeds, each response aspect meets each other aspect about 1/4 of the time
    const meet = new Map<string, number>();
    const uses = new Map<string, number>();
    let total = 0;
    for (let seed = 0; seed < 40; seed++) {
      const d = await loadDataset(`socialeval:${dir}?swap=${seed}`);
      for (const s of d.samples.filter((x) => x.labels.swapped === 'swapped')) {
        const k = `${s.labels.response_aspect}|${s.labels.question_aspect}`;
        meet.set(k, (meet.get(k) ?? 0) + 1);
        total++;
        if (seed === 0) uses.set(s.provenance!.question_from, (uses.get(s.provenance!.question_from) ?? 0) + 1);
      }
    }
    expect(total).toBe(40 * N);
    for (const [a, ca] of PICK.map((p, i) => [ASPECT.get(p)!, COUNT[i]] as const)) {
      for (const b of PICK.map((p) => ASPECT.get(p)!)) {
        const n = meet.get(`${a}|${b}`) ?? 0;
        if (a === b) expect(n).toBe(0);
        else expect(Math.abs(n / (40 * ca) - 0.25), `${a} <- ${b}`).toBeLessThan(0.06);
      }
    }
    // within one seed, a question of an aspect is not used again before the others of its aspect
    // were: the uses of the questions of one aspect differ by at most one
    const plain = await loadDataset(`socialeval:${dir}`);
    for (const p of PICK) {
      const counts = plain.samples.filter((s) => s.labels.ability === p).map((s) => uses.get(s.id) ?? 0);
      expect(Math.max(...counts) - Math.min(...counts), p).toBeLessThanOrEqual(1);
    }
  });

  it('refuses what it cannot compose, with a one-line usage error', async () => {
    await expect(loadDataset(`socialeval:${dir}?swap=x`)).rejects.toThrow(UsageError);
    await expect(loadDataset(`socialeval:${dir}?swap=-1`)).rejects.toThrow(/not a seed/);
    await expect(loadDataset(`socialeval:${dir}?swap=0&text=response`)).rejects.toThrow(/must hold both/);
    await expect(loadDataset(`socialeval:${dir}?swap=0&aspect=Cooperation`)).rejects.toThrow(/at least two aspects/);
  });
});

describe('crossChance', () => {
  it('is what the best mapping from one label to the other scores, by hand', () => {
    // b = x: a is u 3 times, v once; b = y: a is v twice, w twice
    const a = ['u', 'u', 'u', 'v', 'v', 'v', 'w', 'w'];
    const b = ['x', 'x', 'x', 'x', 'y', 'y', 'y', 'y'];
    const r = crossChance(a, b);
    expect(r.accuracy).toBeCloseTo(5 / 8, 12);
    // balanced: x→u (recall 1 for u), y→v (2/3 for v) or y→w (1 for w): best (1 + 0 + 1) / 3
    expect(r.balancedAccuracy).toBeCloseTo(2 / 3, 12);
    // independent labels: nothing beyond the majority
    expect(crossChance(['u', 'v', 'u', 'v'], ['x', 'x', 'y', 'y']).accuracy).toBeCloseTo(0.5, 12);
  });
});
