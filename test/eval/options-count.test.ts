/**
 * The option count of a multiple-choice item is checked with the other item checks, before an
 * evaluation claims its folder: a 27-option item (one more than the answer letters) is refused
 * in one line naming the line, an earlier evaluation at --out stays byte-identical, and
 * --skip-invalid leaves the item out. Cloze scoring without {choices} needs no letters and
 * scores it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { cli } from '../runtime/helpers.js';
import { tree } from '../tree.js';

describe('option counts', () => {
  let root: string;
  let model: string;
  const rows = Array.from({ length: 6 },
    (_, i) => ({ id: `q${i}`, question: `What does person ${i} do next?`, options: ['help', 'leave', 'wait'],
      answer: i % 3, aspect: 'AB'[i % 2] }));
  const big = { id: 'big', question: 'Which one?', options: Array.from({ length: 27 }, (_, j) => `option ${j}`),
    answer: 26, aspect: 'A' };
  const spec = (f: string) => `jsonl:${f}?question=question&options=options&answer=answer&label=aspect&id=id`;
  const args = ['--shuffles', '1', '--bootstrap', '0', '--chat-template', 'off', '--quiet'];
  let good: string;
  let bad: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-options-'));
    model = ensureGeneratedModel('tiny-llama');
    good = path.join(root, 'good.jsonl');
    bad = path.join(root, 'bad.jsonl');
    writeFileSync(good, rows.map((r) => JSON.stringify(r) + '\n').join(''));
    writeFileSync(bad, [...rows, big].map((r) => JSON.stringify(r) + '\n').join(''));
  });

  it('a 27-option item is refused before the folder is touched; --skip-invalid leaves it out', async () => {
    const out = path.join(root, 'e');
    expect((await cli(['eval', model, '--data', spec(good), '--out', out, ...args])).code).toBe(0);
    const before = tree(out);
    const data = tree(bad);
    const r = await cli(['eval', model, '--data', spec(bad), '--out', out, ...args]);
    expect(r.code).toBe(1);
    expect(r.err.split('\n').filter(Boolean)).toEqual([
      `lobes eval: dataset ${
        spec(bad)
      } has invalid items: 1 problem; first: ${bad}: line 7: the item has 27 options, more than the 26 answer letters (--scoring cloze, without {choices} in the prompt, takes any number) (fix the lines, or pass --skip-invalid to leave them out)`,
    ]);
    expect(tree(out)).toEqual(before);
    expect(tree(bad)).toEqual(data);
    const skipped = path.join(root, 'skipped');
    const s = await cli(['eval', model, '--data', spec(bad), '--out', skipped, '--skip-invalid', ...args]);
    expect(s.code).toBe(0);
    const ids = readFileSync(path.join(skipped, 'records.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) =>
      JSON.parse(l).id
    );
    expect(ids).toEqual(rows.map((x) => x.id));
  }, 60000);

  it('cloze scores any number of options', async () => {
    const out = path.join(root, 'cloze');
    const r = await cli(['eval', model, '--data', spec(bad), '--out', out, '--scoring', 'cloze', '--bootstrap', '0',
      '--quiet']);
    expect(r.code).toBe(0);
    const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) =>
      JSON.parse(l)
    );
    const b = recs.find((x) => x.id === 'big');
    expect(b.options).toHaveLength(27);
    const lp: number[] = b.cloze.options.map((o: { logprob: number }) => o.logprob);
    expect(lp).toHaveLength(27);
    // the vote is the option of the highest log-likelihood, the 27th letterless one included
    expect(b.vote).toBe(lp.indexOf(Math.max(...lp)));
  }, 60000);

  it("cloze skips name --skip-longer-than, and 0 is the model's context (as --help says)", async () => {
    const file = path.join(root, 'long.jsonl');
    const q = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
    writeFileSync(file,
      [{ id: 'short', question: q(3), options: ['yes', 'no'], answer: 0 }, { id: 'long', question: q(60),
        options: ['yes', 'no'], answer: 0 }].map((r) => JSON.stringify(r) + '\n').join(''));
    const data = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    const skip = async (n: string) => {
      const out = path.join(root, `long-${n}`);
      expect(
        (await cli(['eval', model, '--data', data, '--out', out, '--scoring', 'cloze', '--skip-longer-than', n,
          '--bootstrap', '0', '--quiet'])).code,
      ).toBe(0);
      return readFileSync(path.join(out, 'records.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
        .map((r) => [r.id, r.skipped ?? null]);
    };
    const at40 = await skip('40');
    expect(at40[0]).toEqual(['short', null]);
    expect(at40[1]![1]).toMatch(/^the context and its longest option have \d+ tokens; --skip-longer-than is 40$/);
    const ctx = JSON.parse(readFileSync(path.join(model, 'config.json'), 'utf8')).max_position_embeddings;
    expect(await skip('0')).toEqual(await skip(String(ctx)));
  }, 60000);
});
