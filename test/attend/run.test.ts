/**
 * `lobes attend` end to end on the generated models. Oracles: the float64 forward pass
 * (test/attend/reference.ts) for the stored token weights; the definition of the outputs for
 * the sums (weights over tokens, word weights plus whitespace and special mass, part shares);
 * planted evaluation records (prompts rendered by lobes eval's renderer with known answers and
 * picks) for --eval selection, option roles and right-vs-wrong differences recomputed by hand
 * from items.jsonl; and the normal approximation for the bootstrap interval.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, mkdtempSync, rmSync, readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { cli } from '../runtime/helpers.js';
import { generatedModelParams } from '../../src/models/index.js';
import { renderPrompt } from '../../src/data/prompt.js';
import { loadAttendTokenizer } from '../../src/attend/tokenize.js';
import { loadEvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { meanCI, diffCI } from '../../src/attend/stats.js';
import { Rng } from '../../src/util/rng.js';
import type { AttendItem, AttendSummary } from '../../src/attend/types.js';
import type { EvalRecord } from '../../src/eval/types.js';
import { lastRowAttention } from './reference.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TINY = resolve(ROOT, 'models/tiny-llama');
const GQA = resolve(import.meta.dirname, 'fixtures/gqa-tiny');
const SOCIALEVAL = resolve(ROOT, '../shared/socialeval/worldtree_data');
if (!existsSync(SOCIALEVAL))
  console.log(`SocialEval attend test skipped: ${SOCIALEVAL} is absent (../shared is missing)`);
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'lobes-attend-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function readItems(dir: string): AttendItem[] {
  return readFileSync(join(dir, 'items.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
}
const readSummary = (dir: string): AttendSummary => JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));

describe('lobes attend --data', () => {
  it('stores the answering row averaged over heads and layers (the float64 forward pass), and consistent words and parts', async () => {
    const out = join(tmp, 'data');
    const r = await cli(['attend', TINY, '--data', 'builtin:social', '--out', out, '--limit', '12', '--layers', 'all',
      '--quiet']);
    expect(r.code, r.err).toBe(0);
    const items = readItems(out);
    expect(items.length).toBe(12);
    const p = generatedModelParams('tiny-llama');
    for (const it of items) {
      expect(it.layers).toEqual([0, 1]);
      expect(it.position).toBe(it.ids.length - 1);
      const ref = lastRowAttention(p, it.ids);
      const H = it.heads;
      const n = it.ids.length;
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (const row of ref) for (let h = 0; h < H; h++) s += row[h * n + j]!;
        expect(Math.abs(it.weights[j]! - s / (ref.length * H))).toBeLessThan(2e-6);
      }
      const total = it.weights.reduce((a, b) => a + b, 0);
      expect(Math.abs(total - 1)).toBeLessThan(1e-4);
      // Every token's weight lands in exactly one part (or 'special'); parts sum to the total.
      expect(Math.abs(Object.values(it.partMass).reduce((a, b) => a + b, 0) - total)).toBeLessThan(1e-4);
      expect(Math.abs(Object.values(it.partShare).reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-4);
      // The top words are the heaviest content words, heaviest first.
      const tops = it.top.map((i) => it.words[i]!);
      expect(tops.length).toBe(Math.min(30, it.words.filter((w) => w.content && w.kind !== 'punct').length));
      for (let k = 1; k < tops.length; k++) expect(tops[k - 1]!.weight).toBeGreaterThanOrEqual(tops[k]!.weight);
      // The text of each word is the prompt's characters.
      for (const w of it.words) expect(it.prompt.slice(w.start, w.end)).toBe(w.text);
    }
    const s = readSummary(out);
    expect(s.counts).toMatchObject({ items: 12, right: 0, wrong: 0, unscored: 12, unalignedTokens: 0 });
    expect(s.settings.position).toBe('last');
  });

  it('batch size and padding do not change the numbers (GroupQueryAttention model)', async () => {
    const a = join(tmp, 'b1');
    const b = join(tmp, 'b8');
    expect(
      (await cli(['attend', GQA, '--data', 'builtin:social', '--out', a, '--limit', '10', '--batch', '1', '--quiet']))
        .code,
    ).toBe(0);
    expect(
      (await cli(['attend', GQA, '--data', 'builtin:social', '--out', b, '--limit', '10', '--batch', '8', '--quiet']))
        .code,
    ).toBe(0);
    const ia = readItems(a);
    const ib = readItems(b);
    ia.forEach((x, i) => {
      expect(ib[i]!.ids).toEqual(x.ids);
      x.weights.forEach((w, j) => expect(Math.abs(w - ib[i]!.weights[j]!)).toBeLessThan(1e-5));
    });
    expect(readSummary(a).model.attention).toBe('GroupQueryAttention');
  });

  it.skipIf(!existsSync(SOCIALEVAL))(
    'socialeval: data at the answering position: IAE prompts rendered as lobes eval renders them, with their parts',
    async () => {
      const out = join(tmp, 'iae');
      // One Chinese world tree with short IAE prompts (fields of at most about 1,500 bytes), so the
      // cost does not depend on which items --limit draws: the tiny model's tokenizer is byte-level,
      // Chinese prompts run up to about 25,000 bytes, and a row's attention scores grow with the
      // square of its length (--limit 2 of all Chinese items drew prompts of about 9,500 and 18,400
      // bytes: minutes and a 14 GB process).
      const tree = join(SOCIALEVAL, '[0,-1]_cn_example_6.json');
      // Chinese IAE prompts can be longer than the tiny model's declared 2,048 positions: a copy
      // declaring a longer context reads them whole (the context check is tested in plan.test.ts).
      const long = join(tmp, 'tiny-long-context');
      cpSync(TINY, long, { recursive: true });
      writeFileSync(join(long, 'config.json'),
        JSON.stringify({ ...JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')),
          max_position_embeddings: 1 << 16 }));
      const r = await cli(['attend', long, '--data', `socialeval:${tree}?lang=zh`, '--out', out, '--limit', '2',
        '--quiet', '--bootstrap', '0']);
      expect(r.code, r.err).toBe(0);
      const items = readItems(out);
      expect(items.length).toBe(2);
      const s = readSummary(out);
      expect(s.settings.position).toBe('answer');
      for (const it of items) {
        const names = it.parts.map((p) => p.name);
        for (const p of ['instruction', 'profile', 'context', 'question', 'option:A', 'option:B', 'answer_prefix'])
          expect(names).toContain(p);
        // The prompt ends with the answer prefix, and the last token is read.
        expect(it.prompt.endsWith('{"choice": "')).toBe(true);
        expect(it.position).toBe(it.ids.length - 1);
        // Options in the dataset's order: the correct utterance is option A.
        expect(it.roles!['option:A']).toBe('correct');
        expect(it.unaligned).toBe(0);
        expect(Math.abs(Object.values(it.roleShare!).reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-4);
      }
      expect(s.roles!.parts).toEqual(
        expect.arrayContaining(['context', 'question', 'option (correct)', 'option (other)']),
      );
    },
  );

  it('refuses bad combinations with a usage error, and never touches a folder it did not write', async () => {
    expect((await cli(['attend', TINY, '--data', 'builtin:social', '--eval', tmp, '--out', join(tmp, 'x')])).code).toBe(
      2,
    );
    expect(
      (await cli(['attend', TINY, '--data', 'builtin:social', '--position', 'answer', '--out', join(tmp, 'x')])).code,
    ).toBe(2);
    expect((await cli(['attend', TINY, '--data', 'builtin:social', '--items', 'wrong', '--out', join(tmp, 'x')])).code)
      .toBe(2);
    const foreign = join(tmp, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'keep.txt'), 'mine');
    const r = await cli(['attend', TINY, '--data', 'builtin:social', '--out', foreign, '--limit', '2', '--overwrite']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/not a lobes attend folder/);
    expect(readFileSync(join(foreign, 'keep.txt'), 'utf8')).toBe('mine');
    // An earlier attend folder is replaced only with --overwrite.
    const again = await cli(['attend', TINY, '--data', 'builtin:social', '--out', join(tmp, 'data'), '--limit', '2']);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/--force/);
  });
});

/** Planted evaluation records: prompts from lobes eval's renderer, known answers, picks and correctness. */
async function plantRecords(dir: string): Promise<EvalRecord[]> {
  const tok = await loadAttendTokenizer(TINY);
  const etok = await loadEvalTokenizer(TINY, { chatTemplate: 'on' });
  const items = [
    { id: 'q1', context: "Mia forgot her friend's birthday.", question: 'What should Mia say?',
      options: ['Sorry, let me make it up to you.', 'Birthdays are silly.', 'Who cares?'] },
    { id: 'q2', context: '小李的同事批评了他的方案。', question: '小李应该怎么做？',
      options: ['认真听取意见', '当场反驳', '离开会议'] },
    { id: 'q3', context: 'Tom is late again.', question: 'What should Tom do?',
      options: ['Apologize and explain.', 'Blame the bus.', 'Say nothing.'] },
    { id: 'q4', context: 'Ana shares her lunch.', question: 'Why does Ana share?',
      options: ['She is kind.', 'She is not hungry.', 'It is a rule.'] },
  ];
  // order[slot] = option index; pick = slot chosen; correct iff the picked option is option 0.
  const plan = [
    { order: [1, 0, 2], pick: 0 }, // picks option 1: wrong
    { order: [0, 2, 1], pick: 0 }, // picks option 0: right
    { order: [2, 1, 0], pick: 1 }, // picks option 1: wrong
    { order: [0, 1, 2], pick: 2 }, // picks option 2: wrong
  ];
  const records: EvalRecord[] = items.map((it, i) => {
    const { order, pick } = plan[i]!;
    const r = renderPrompt({ id: it.id, fields: { context: it.context, question: it.question }, options: it.options },
      order, {
      template: '⟦context⟧{context}⟦/⟧\n⟦question⟧{question}⟦/⟧\n{choices}\n',
      separator: '. ',
      chat: tok.chat,
      answerPrefix: 'Answer: ',
    });
    // What lobes eval records: the tokens before the answer and where the answer starts.
    const slot = etok.answerSlot(r.text, r.letters, it.id);
    const tokens = slot.ids.length;
    expect(tokens).toBeLessThanOrEqual(tok.encode(r.text, false).length);
    const picked = order[pick]!;
    return {
      id: it.id,
      task: 'mcq',
      language: null,
      ability: null,
      aspect: null,
      labels: { set: 'planted' },
      options: it.options,
      answer: 0,
      shuffles: [{ order, prompt: r.text, parts: r.parts, tokens, letters: r.letters, letterTokenIds: slot.candidates,
        continuations: slot.continuations, answerAt: slot.answerAt, logits: [0, 0, 0], probs: [1 / 3, 1 / 3, 1 / 3],
        letterMass: 0.5, logSumExp: 1, topTokenId: 1, pick }],
      vote: picked,
      correct: picked === 0,
    } as EvalRecord;
  });
  plantEval(dir, records.map((r) => JSON.stringify(r)));
  return records;
}

/**
 * A finished evaluation folder around planted record lines: records.jsonl and an eval.json that
 * records its size and sha256 (as lobes eval writes them), for the tiny model unless `model` says otherwise.
 */
function plantEval(dir: string, lines: string[], model?: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const text = lines.join('\n') + '\n';
  writeFileSync(join(dir, 'records.jsonl'), text);
  writeFileSync(join(dir, 'summary.json'), JSON.stringify({ format: 'lobes-eval-summary' }));
  const graphSha256 = createHash('sha256').update(readFileSync(join(TINY, 'model.onnx'))).digest('hex');
  const records = { path: 'records.jsonl', bytes: Buffer.byteLength(text),
    sha256: createHash('sha256').update(text).digest('hex') };
  writeFileSync(join(dir, 'eval.json'),
    JSON.stringify({ format: 'lobes-eval', formatVersion: 1, complete: true, model: { graphSha256, ...model },
      tokenizer: { chatTemplate: true }, files: { records, episodes: null, summary: 'summary.json' } }));
}

describe('lobes attend --eval (planted records)', () => {
  let records: EvalRecord[];
  const evalDir = () => join(tmp, 'eval');
  beforeAll(async () => {
    records = await plantRecords(evalDir());
  });

  it('--items wrong reads the wrong records only, up to their answering position, with option roles', async () => {
    const out = join(tmp, 'wrong');
    const r = await cli(['attend', TINY, '--eval', evalDir(), '--out', out, '--quiet', '--layers', 'all']);
    expect(r.code, r.err).toBe(0);
    const items = readItems(out);
    expect(items.map((x) => x.id)).toEqual(['q1', 'q3', 'q4']);
    for (const it of items) {
      const rec = records.find((x) => x.id === it.id)!;
      const sh = rec.shuffles[0]!;
      expect(it.correct).toBe(false);
      expect(it.prompt).toBe(sh.prompt.slice(0, sh.answerAt));
      expect(it.ids.length).toBe(sh.tokens);
      expect(it.parts.map((p) => p.name)).toEqual(sh.parts.map((p) => p.name));
      // Roles by hand: the slot showing option 0 is correct, the picked slot is 'picked'.
      const roles: Record<string, string> = {};
      sh.order.forEach((o,
        slot) => (roles[`option:${sh.letters[slot]}`] = o === 0 ? 'correct' : slot === sh.pick ? 'picked' : 'other')
      );
      expect(it.roles).toEqual(roles);
      // Role shares regroup the part shares.
      const byRole: Record<string, number> = {};
      for (const [p, s] of Object.entries(it.partShare)) {
        const k = roles[p] ? `option (${roles[p]})` : p;
        byRole[k] = (byRole[k] ?? 0) + s;
      }
      for (const [k, v] of Object.entries(byRole)) expect(Math.abs(it.roleShare![k]! - v)).toBeLessThan(1e-5);
      // The Chinese item: every Chinese character is its own word.
      for (const w of it.words) if (/\p{Script=Han}/u.test(w.text)) expect([...w.text].length).toBe(1);
    }
    const s = readSummary(out);
    expect(s.counts).toMatchObject({ items: 3, right: 0, wrong: 3 });
    expect(s.input).toMatchObject({ kind: 'eval', selected: 3, total: 4, items: 'wrong' });
    expect(s.roles!.parts).toEqual(
      expect.arrayContaining(['option (correct)', 'option (picked)', 'context', 'question']),
    );
  });

  it('--items all: right and wrong means, and wrong − right, equal a hand computation over items.jsonl', async () => {
    const out = join(tmp, 'all');
    expect(
      (await cli(['attend', TINY, '--eval', evalDir(), '--items', 'all', '--out', out, '--quiet', '--bootstrap',
        '500'])).code,
    ).toBe(0);
    const items = readItems(out);
    const s = readSummary(out);
    expect(s.counts).toMatchObject({ items: 4, right: 1, wrong: 3 });
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    for (const p of ['context', 'question', 'option (correct)']) {
      const w = mean(items.filter((x) => x.correct === false).map((x) => x.roleShare![p] ?? 0));
      const r = mean(items.filter((x) => x.correct === true).map((x) => x.roleShare![p] ?? 0));
      expect(Math.abs(s.roles!.wrong[p]!.mean! - w)).toBeLessThan(1e-5);
      expect(Math.abs(s.roles!.right[p]!.mean! - r)).toBeLessThan(1e-5);
      expect(Math.abs(s.roles!.wrongMinusRight[p]!.diff! - (w - r))).toBeLessThan(1e-5);
      // One right item: no interval for it, nor for the difference.
      expect(s.roles!.right[p]!.ci95).toBeNull();
      expect(s.roles!.wrong[p]!.ci95).not.toBeNull();
    }
    expect(
      (await cli(['attend', TINY, '--eval', evalDir(), '--items', 'right', '--out', join(tmp, 'right'), '--quiet']))
        .code,
    ).toBe(0);
    expect(readItems(join(tmp, 'right')).map((x) => x.id)).toEqual(['q2']);
  });

  it('refuses records of another model (eval.json records its graph)', async () => {
    const other = join(tmp, 'other-eval');
    plantEval(other, readFileSync(join(evalDir(), 'records.jsonl'), 'utf8').trim().split('\n'), {
      graphSha256: '0'.repeat(64),
    });
    const r = await cli(['attend', TINY, '--eval', other, '--out', join(tmp, 'other-out')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/another model/);
  });

  it('refuses records edited after the evaluation (a `correct` flipped by hand), and a folder without eval.json', async () => {
    const dir = join(tmp, 'edited-eval');
    plantEval(dir, readFileSync(join(evalDir(), 'records.jsonl'), 'utf8').trim().split('\n'));
    const file = join(dir, 'records.jsonl');
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('"correct":false');
    writeFileSync(file, text.replace('"correct":false', '"correct":true '));
    const out = join(tmp, 'edited-out');
    const r = await cli(['attend', TINY, '--eval', dir, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/records\.jsonl: was changed after it was written \(size or sha256 differ from eval\.json\)/);
    expect(existsSync(out)).toBe(false);
    const bare = join(tmp, 'bare-eval');
    mkdirSync(bare, { recursive: true });
    writeFileSync(join(bare, 'records.jsonl'), text);
    const r2 = await cli(['attend', TINY, '--eval', bare, '--out', out]);
    expect(r2.code).toBe(1);
    expect(r2.err).toMatch(/not a lobes evaluation folder \(no eval\.json\)/);
  });

  it('leaves out the records lobes eval skipped (prompt longer than its --max-tokens) and counts them', async () => {
    const dir = join(tmp, 'skip-eval');
    mkdirSync(dir, { recursive: true });
    const skipped = { ...structuredClone(records[1]!), id: 'long', shuffles: [], vote: -1, correct: null,
      skipped: 'the prompt has 5000 tokens; --max-tokens is 2048' };
    plantEval(dir, [records[0], skipped, records[1], records[2], records[3]].map((r) => JSON.stringify(r)));
    const out = join(tmp, 'skip-out');
    const r = await cli(['attend', TINY, '--eval', dir, '--items', 'all', '--out', out, '--quiet', '--bootstrap', '0']);
    expect(r.code, r.err).toBe(0);
    expect(readItems(out).map((x) => x.id)).toEqual(['q1', 'q2', 'q3', 'q4']);
    const s = readSummary(out);
    expect(s.input).toMatchObject({ total: 5, selected: 4, skipped: 1 });
    expect(s.counts).toMatchObject({ items: 4, right: 1, wrong: 3, unscored: 0 });
  });

  it('records the model files it read, and refuses an evaluation whose model files differ (same graph, other weights or tokenizer)', async () => {
    const out = join(tmp, 'files-out');
    expect(
      (await cli(['attend', TINY, '--eval', evalDir(), '--items', 'all', '--out', out, '--quiet', '--bootstrap', '0']))
        .code,
    ).toBe(0);
    const s = readSummary(out);
    const graphHash = createHash('sha256').update(readFileSync(join(TINY, 'model.onnx'))).digest('hex');
    expect(s.model.graphSha256).toBe(graphHash);
    expect(s.model.files!.find((f) => f.role === 'graph')).toMatchObject({ name: 'model.onnx', sha256: graphHash });
    const tokFile = s.model.files!.find((f) => f.name === 'tokenizer.json')!;
    expect(tokFile.sha256).toBe(createHash('sha256').update(readFileSync(join(TINY, 'tokenizer.json'))).digest('hex'));
    // lobes eval's filesSha256: sha256 over [name, sha256] of every file, in order.
    expect(s.model.filesSha256).toBe(
      createHash('sha256').update(JSON.stringify(s.model.files!.map((f) => [f.name, f.sha256]))).digest('hex'),
    );
    const other = join(tmp, 'files-eval');
    plantEval(other, readFileSync(join(evalDir(), 'records.jsonl'), 'utf8').trim().split('\n'), {
      graphSha256: graphHash,
      filesSha256: '1'.repeat(64),
    });
    const r = await cli(['attend', TINY, '--eval', other, '--out', join(tmp, 'files-eval-out')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/other model files/);
    expect(existsSync(join(tmp, 'files-eval-out'))).toBe(false);
  });

  it('a record whose token count does not match this tokenizer is an error naming it', async () => {
    const bad = join(tmp, 'bad-eval');
    const rec = structuredClone(records[0]!);
    rec.shuffles[0]!.tokens = 100000;
    plantEval(bad, [JSON.stringify(rec)]);
    const r = await cli(['attend', TINY, '--eval', bad, '--out', join(tmp, 'bad-out')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/record q1.*100000 tokens/);
    expect(existsSync(join(tmp, 'bad-out'))).toBe(false);
  });
});

describe('bootstrap intervals', () => {
  it('match the normal approximation for a large sample, and the difference interval covers the true difference', () => {
    const rng = new Rng(5);
    const xs = Float64Array.from({ length: 400 }, () => rng.normal() * 0.2 + 0.5);
    const ys = Float64Array.from({ length: 300 }, () => rng.normal() * 0.1 + 0.3);
    const m = meanCI(xs, 4000, new Rng(1));
    let sd = 0;
    for (const x of xs) sd += (x - m.mean!) ** 2;
    sd = Math.sqrt(sd / (xs.length - 1));
    const half = (1.96 * sd) / Math.sqrt(xs.length);
    expect(Math.abs(m.ci95![0] - (m.mean! - half))).toBeLessThan(0.15 * half);
    expect(Math.abs(m.ci95![1] - (m.mean! + half))).toBeLessThan(0.15 * half);
    const d = diffCI(xs, ys, 4000, new Rng(2));
    expect(d.ci95![0]).toBeLessThan(0.2);
    expect(d.ci95![1]).toBeGreaterThan(0.2);
    expect(d.ci95![1] - d.ci95![0]).toBeLessThan(0.06);
  });
});
