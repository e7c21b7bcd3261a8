/**
 * SocialEval prompts against text rendered by Python (test/eval/fixtures/make_eval_goldens.py):
 * str.format with the published templates, Python's repr() and json.dumps(ensure_ascii=False)
 * of the profiles, and its own walk of the world trees. 3 IAE items and 3 GAE states per
 * language; then the parts, the chat template and the answer prefix.
 */
import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadSocialEvalBench, gaeFields, type WorldTree } from '../../src/data/socialeval-eval.js';
import { renderContent, renderPrompt, parseTemplate } from '../../src/data/prompt.js';
import { SOCIALEVAL_TEMPLATES, stripMarkers } from '../../src/data/prompt-templates.js';
import { pyRepr, pyStrRepr, pyJsonDumps } from '../../src/util/pyfmt.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const GOLD = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/prompts.json'), 'utf8')) as {
  prompts: { task: 'iae' | 'gae'; lang: 'en' | 'zh'; id?: string; tree?: string; path?: string[]; order: number[];
    text: string }[];
};
const haveData = existsSync(DATA);
if (!haveData) console.warn(`test/eval/prompt: skipping the SocialEval renderings: ${DATA} is absent`);

describe('Python formatting', () => {
  it('repr() of strings: quote choice and escapes as Python 3 writes them', () => {
    // Hand-derived from Python's rules: single quotes unless the text has ' and no ".
    expect(pyStrRepr("Li Changsheng's sister")).toBe(`"Li Changsheng's sister"`);
    expect(pyStrRepr(`say "hi"`)).toBe(`'say "hi"'`);
    expect(pyStrRepr(`it's "x"`)).toBe(`'it\\'s "x"'`);
    expect(pyStrRepr('a\\b\nc\td')).toBe(`'a\\\\b\\nc\\td'`);
    expect(pyStrRepr('全角\u3000空格\u00a0')).toBe(`'全角\\u3000空格\\xa0'`);
    expect(pyStrRepr('\u200b')).toBe(`'\\u200b'`);
    expect(pyStrRepr('😀')).toBe(`'😀'`);
    expect(pyRepr([{ name: 'A', info: null }, { name: 'B', info: 'x' }])).toBe(
      `[{'name': 'A', 'info': None}, {'name': 'B', 'info': 'x'}]`,
    );
  });

  it('json.dumps(ensure_ascii=False): spaced separators, non-ASCII kept, control characters escaped', () => {
    expect(pyJsonDumps({ name: '小白', public: 'a "b"\n', private: null, goal: 'x' })).toBe(
      '{"name": "小白", "public": "a \\"b\\"\\n", "private": null, "goal": "x"}',
    );
    expect(pyJsonDumps('a\u0001b')).toBe('"a\\u0001b"');
  });
});

describe('templates', () => {
  it('the markers tile each template into parts and leave the published text', () => {
    for (const variant of Object.values(SOCIALEVAL_TEMPLATES)) {
      for (const t of Object.values(variant)) {
        expect(() => parseTemplate(t)).not.toThrow();
        expect(stripMarkers(t)).not.toMatch(/⟦|⟧/);
        expect(stripMarkers(t)).toContain('{choices}');
      }
    }
    // The derived nocot GAE prompt differs from the published one only in its output instruction.
    const a = stripMarkers(SOCIALEVAL_TEMPLATES.gae.en);
    const b = stripMarkers(SOCIALEVAL_TEMPLATES['gae-cot'].en);
    const cut = (s: string) => s.slice(s.indexOf('\n['));
    expect(cut(a)).toBe(cut(b));
    expect(b).toContain('Provide an explanation and output in JSON format.');
  });
});

describe.skipIf(!haveData)('SocialEval prompts equal the Python renderings', () => {
  // describe.skipIf still collects this body, so the data is read only when it is there.
  const benches = haveData
    ? { en: loadSocialEvalBench(`socialeval:${DATA}?lang=en`, { iae: true, gae: true }),
      zh: loadSocialEvalBench(`socialeval:${DATA}?lang=zh`, { iae: true, gae: true }) }
    : null;

  it.each(GOLD.prompts.map((p, i) => [i, p.task, p.lang, p.id ?? `${p.tree}:${p.path!.join('>')}`] as const))(
    '#%i %s %s %s',
    (i) => {
      const g = GOLD.prompts[i]!;
      const b = benches![g.lang];
      let text: string;
      if (g.task === 'iae') {
        const it = b.iae.find((x) => x.id === g.id);
        expect(it, `item ${g.id}`).toBeDefined();
        text = renderContent({ id: it!.id, fields: it!.fields, options: it!.options }, g.order, {
          template: SOCIALEVAL_TEMPLATES.iae[g.lang],
          separator: '. ',
        }).text;
      } else {
        const t = b.gae.find((x) => x.stem === g.tree) as WorldTree;
        const f = gaeFields(t, g.path!);
        text = renderContent({ id: g.tree!, fields: f.fields, options: f.options }, g.order, {
          template: SOCIALEVAL_TEMPLATES.gae[g.lang],
          separator: ': ',
        }).text;
      }
      expect(text).toBe(g.text);
    },
  );

  it('parts tile the prompt; options, profile and question sit where their text is', () => {
    const it = benches!.en.iae.find((x) => x.id === GOLD.prompts[0]!.id)!;
    const order = [2, 1, 3, 0];
    const chat = (c: string) => `<|im_start|>user\n${c}<|im_end|>\n<|im_start|>assistant\n`;
    const r = renderPrompt({ id: it.id, fields: it.fields, options: it.options }, order, {
      template: SOCIALEVAL_TEMPLATES.iae.en,
      separator: '. ',
      chat,
      answerPrefix: '{"choice": "',
    });
    let at = 0;
    for (const p of r.parts) {
      expect(p.start).toBe(at);
      expect(p.end).toBeGreaterThan(p.start);
      at = p.end;
    }
    expect(at).toBe(r.text.length);
    const get = (name: string) => r.parts.filter((p) => p.name === name).map((p) => r.text.slice(p.start, p.end));
    order.forEach((o, slot) => expect(get(`option:${'ABCD'[slot]}`)).toEqual([`${'ABCD'[slot]}. ${it.options[o]}`]));
    expect(get('question')).toEqual([it.fields.question]);
    expect(get('others')).toEqual([it.fields.user_profile]);
    expect(get('context')).toEqual([it.fields.dialogue_context]);
    expect(get('answer_prefix')).toEqual(['{"choice": "']);
    expect(r.text.endsWith('<|im_start|>assistant\n{"choice": "')).toBe(true);
    expect(get('profile')[0]).toBe(
      `Public Information: ${it.fields.public}\nPrivate Information: ${it.fields.private}\nSocial Goal: ${it.fields.goal}`,
    );
    expect(r.letters).toEqual(['A', 'B', 'C', 'D']);
  });

  it('a chat template that trims the message keeps every part inside the text', () => {
    const it = benches!.zh.iae[0]!;
    const chat = (c: string) => `user: ${c.trim()}\nassistant:`;
    const r = renderPrompt({ id: it.id, fields: it.fields, options: it.options }, [0, 1, 2, 3], {
      template: SOCIALEVAL_TEMPLATES.iae.zh,
      separator: '. ',
      chat,
      answerPrefix: '{"choice": "',
    });
    expect(r.text.startsWith('user: 请你扮演')).toBe(true);
    const ins = r.parts.find((p) => p.name === 'instruction')!;
    expect(r.text.slice(ins.start, ins.start + 4)).toBe('请你扮演');
    expect(
      r.parts.find((p) => p.name === 'option:A') &&
        r.text.slice(r.parts.find((p) => p.name === 'option:A')!.start).startsWith(`A. ${it.options[0]}`),
    ).toBe(true);
  });
});

describe('rendering errors', () => {
  it('an item with fewer than 2 options, a bad order, an unknown field: one-line errors', () => {
    const tpl = '{question}\n{choices}\n';
    expect(() =>
      renderContent({ id: 'x', fields: { question: 'q' }, options: ['only'] }, [0], { template: tpl, separator: '. ' })
    ).toThrow(/item x: item has 1 option; multiple choice needs at least 2/);
    expect(() =>
      renderContent({ id: 'x', fields: { question: 'q' }, options: ['a', 'b'] }, [0, 0], { template: tpl,
        separator: '. ' })
    ).toThrow(/not a permutation/);
    expect(() =>
      renderContent({ id: 'x', fields: {}, options: ['a', 'b'] }, [0, 1], { template: tpl, separator: '. ' })
    ).toThrow(/has no field "question"/);
    expect(() => parseTemplate('{question} {', 't.txt')).toThrow(/t\.txt: bad field/);
  });
});
