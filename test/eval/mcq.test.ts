/**
 * Any multiple-choice benchmark: the jsonl: item spec (answer as index, text or letter),
 * the plain default prompt and a --prompt template, scored on a real (generated) model; the
 * records' numbers recompute from the records alone (softmax, letter mass, pick, vote).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadMcqJsonl, resolveAnswer } from '../../src/data/mcq.js';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { ensureGeneratedModel } from '../../src/models/write.js';

const ITEMS = [
  { id: 'q1', question: 'A friend is upset after losing a game. What do you say?',
    options: ['Too bad, you lost.', 'That was a hard game; want to play again together?', 'I always win.'], answer: 1,
    topic: 'warmth' },
  { id: 'q2', question: 'Your team misses a deadline. What do you do first?',
    options: ['Blame the newest member.', 'Ignore it.', 'Ask what blocked us and plan the next step.',
      'Quit the team.'], answer: 'Ask what blocked us and plan the next step.', topic: 'teamwork' },
  { id: 'q3', question: 'Someone interrupts you in a meeting.',
    options: ['Let them finish, then continue.', 'Shout over them.'], answer: 'A', topic: 'warmth' },
];

describe('multiple-choice items from jsonl', () => {
  let root: string;
  let file: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-mcq-'));
    file = path.join(root, 'items.jsonl');
    writeFileSync(file, ITEMS.map((x) => JSON.stringify(x)).join('\n') + '\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reads questions, options, answers (index, text or letter) and labels', () => {
    const d = loadMcqJsonl(`jsonl:${file}?question=question&options=options&answer=answer&label=topic&id=id`);
    expect(d.items.map((x) => [x.id, x.answer, x.labels.topic])).toEqual([
      ['q1', 1, 'warmth'],
      ['q2', 2, 'teamwork'],
      ['q3', 0, 'warmth'],
    ]);
    expect(resolveAnswer(5, ['a', 'b'])).toMatch(/not an index of the 2 options/);
    expect(resolveAnswer('b', ['a', 'b'])).toBe(1);
    expect(resolveAnswer('B', ['a', 'b'])).toBe(1);
  });

  it('default prompt and a --prompt template, scored by a real model; records recompute from themselves', async () => {
    const model = ensureGeneratedModel('tiny-llama-past');
    const spec = `jsonl:${file}?question=question&options=options&answer=answer&label=topic&id=id`;
    const out = path.join(root, 'plain');
    await runEval({ model, data: spec, out, quiet: true, bootstrap: 100 });
    const r = readEvalResults(out);
    expect(r.manifest.task).toBe('mcq');
    expect(r.records.map((x) => x.id)).toEqual(['q1', 'q2', 'q3']);
    for (const rec of r.records) {
      expect(rec.shuffles).toHaveLength(3);
      for (const s of rec.shuffles) {
        // The plain prompt: the question, the lettered options, then "Answer: " in the assistant turn.
        expect(s.prompt).toContain(ITEMS.find((x) => x.id === rec.id)!.question + '\n');
        s.order.forEach((o, slot) => expect(s.prompt).toContain(`\n${'ABCD'[slot]}. ${rec.options[o]}\n`));
        expect(s.prompt.endsWith('Answer: ')).toBe(true);
        const m = Math.max(...s.logits);
        const z = s.logits.reduce((a, x) => a + Math.exp(x - m), 0);
        s.probs.forEach((p, j) => expect(p).toBeCloseTo(Math.exp(s.logits[j]! - m) / z, 12));
        expect(s.letterMass).toBeCloseTo(s.logits.reduce((a, x) => a + Math.exp(x - s.logSumExp), 0), 12);
        expect(s.pick).toBe(s.logits.indexOf(m));
        expect(s.letterMass).toBeGreaterThan(0);
        expect(s.letterMass).toBeLessThanOrEqual(1 + 1e-6);
      }
      expect(rec.correct).toBe(rec.vote === rec.answer);
    }
    expect(r.summary.mcq!.tables.map((t) => t.by)).toEqual(['label:topic']);
    expect(r.summary.mcq!.tables[0]!.rows.map((x) => [x.key, x.n])).toEqual([
      ['teamwork', 1],
      ['warmth', 2],
    ]);
    // A template file: any field of the line, the options where {choices} is.
    const tpl = path.join(root, 'tpl.txt');
    writeFileSync(tpl, 'Topic: {topic}\nQ: {question}\nOptions:\n{choices}\nPick one letter.');
    const out2 = path.join(root, 'custom');
    await runEval({ model, data: spec, out: out2, promptFile: tpl, answerPrefix: 'The answer is ', quiet: true,
      bootstrap: 100 });
    const r2 = readEvalResults(out2);
    const s0 = r2.records[1]!.shuffles[0]!;
    expect(s0.prompt).toContain(
      'Topic: teamwork\nQ: Your team misses a deadline. What do you do first?\nOptions:\nA. ',
    );
    expect(s0.prompt.endsWith('The answer is ')).toBe(true);
    expect(s0.parts.find((p) => p.name === 'answer_prefix')).toEqual({ name: 'answer_prefix',
      start: s0.prompt.length - 'The answer is '.length, end: s0.prompt.length });

    // --orders cyclic with as many shuffles as options: every option in every slot once; recorded in eval.json.
    const out3 = path.join(root, 'cyclic');
    await runEval({ model, data: spec, out: out3, quiet: true, bootstrap: 100, orders: 'cyclic', shuffles: 4 });
    const r3 = readEvalResults(out3);
    expect(r3.manifest.settings.orders).toBe('cyclic');
    expect(r.manifest.settings.orders).toBe('random');
    for (const rec of r3.records) {
      const n = rec.options.length;
      expect(rec.shuffles).toHaveLength(4);
      if (n === 4) {
        for (let o = 0; o < n; o++) expect(new Set(rec.shuffles.map((s) => s.order.indexOf(o))).size).toBe(4);
      }
    }
    // The summary's intervals are exact for counts.
    expect(r3.summary.mcq!.overall.ciMethod).toBe('clopper-pearson');
  }, 300_000);
});
