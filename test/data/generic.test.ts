import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/data/index.js';
import { parseCsv } from '../../src/data/generic.js';
import { firstInvalidUtf8 } from '../../src/data/read.js';
import { LobesError, LobesErrors, UsageError } from '../../src/util/errors.js';
import { loadMcqJsonl } from '../../src/data/mcq.js';

const dir = mkdtempSync(path.join(tmpdir(), 'lobes-data-'));
function put(name: string, data: string | Buffer): string {
  const f = path.join(dir, name);
  writeFileSync(f, data);
  return f;
}
async function problems(spec: string): Promise<string[]> {
  try {
    await loadDataset(spec);
  } catch (e) {
    if (e instanceof LobesErrors) return e.problems.map((p) => p.message);
    throw e;
  }
  throw new Error('expected a failure');
}

describe('jsonl adapter', () => {
  it('group=FIELD gives each item its group as the axis item_group (csv too); an empty group is a problem', async () => {
    const rows = [{ id: 'a', text: 'one', aspect: 'x', story: 's1' }, { id: 'b', text: 'two', aspect: 'y',
      story: 's1' }, { id: 'c', text: 'three', aspect: 'x', story: 's2' }];
    const f = put('grouped.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const ds = await loadDataset(`jsonl:${f}?text=text&label=aspect&id=id&group=story`);
    expect(ds.axes).toEqual(['aspect', 'item_group']);
    expect(ds.samples.map((s) => s.labels.item_group)).toEqual(['s1', 's1', 's2']);
    const c = put('grouped.csv', 'id,text,aspect,story\na,one,x,s1\nb,two,y,s2\n');
    expect(
      (await loadDataset(`csv:${c}?text=text&label=aspect&id=id&group=story`)).samples.map((s) => s.labels.item_group),
    ).toEqual(['s1', 's2']);
    const e = put('grouped-empty.jsonl', JSON.stringify({ id: 'a', text: 'one', aspect: 'x', story: '' }) + '\n');
    expect((await problems(`jsonl:${e}?text=text&label=aspect&id=id&group=story`)).join('\n')).toMatch(
      /label field "story" is empty/,
    );
  });

  it('reads text, several label fields and ids; each label field becomes an axis', async () => {
    const rows = [
      { id: 'a1', text: 'How do you greet a neighbour?\nGood morning!', skill: 'Conversational Skill', group: 'x',
        n: 3 },
      { id: 'a2', text: 'Second item', skill: 'teamwork skill', group: 'y', n: 4 },
    ];
    const f = put('ok.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n\n');
    const ds = await loadDataset(`jsonl:${f}?text=text&label=skill,group&id=id`);
    expect(ds.axes).toEqual(['skill', 'group']);
    expect(ds.samples.map((s) => s.id)).toEqual(['a1', 'a2']);
    expect(ds.samples[0]).toEqual({ id: 'a1', text: rows[0].text, labels: { skill: 'Conversational Skill', group: 'x' },
      provenance: { file: 'ok.jsonl', line: '1' } });
    // Without an id field the id is FILE:LINE; numbers are accepted as labels.
    const d2 = await loadDataset(`jsonl:${f}?text=text&label=n`);
    expect(d2.samples.map((s) => [s.id, s.labels.n])).toEqual([['ok.jsonl:1', '3'], ['ok.jsonl:2', '4']]);
    // bessi=FIELD canonicalizes that field and adds the aspect axis.
    const d3 = await loadDataset(`jsonl:${f}?text=text&label=skill&bessi=skill`);
    expect(d3.axes).toEqual(['skill', 'aspect']);
    expect(d3.samples.map((s) => s.labels)).toEqual([
      { skill: 'Conversational Skill', aspect: 'Social Engagement' },
      { skill: 'Teamwork Skill', aspect: 'Cooperation' },
    ]);
  });

  it('lists every problem at once, each naming the file and the line', async () => {
    const f = put('bad.jsonl', [
      JSON.stringify({ id: 'a', text: 'fine', label: 'x' }),
      '{"id": "b", "text": "broken", ',
      JSON.stringify({ id: 'c', label: 'x' }),
      JSON.stringify({ id: 'd', text: 'no label' }),
      JSON.stringify({ id: 'a', text: 'dup', label: 'y' }),
      '[1, 2]',
      JSON.stringify({ id: 'e', text: '   ', label: 'x' }),
      JSON.stringify({ id: 'f', text: 'obj label', label: { a: 1 } }),
    ].join('\n'));
    const msgs = await problems(`jsonl:${f}?text=text&label=label&id=id`);
    expect(msgs).toEqual([
      `${f}: line 2: invalid JSON: ${msgs[0].split('invalid JSON: ')[1]}`,
      `${f}: line 6: expected a JSON object`,
      `${f}: line 3: missing field "text"`,
      `${f}: line 4: missing label field "label"`,
      `${f}: line 5: duplicate id "a" (first on line 1)`,
      `${f}: line 7: field "text" is empty`,
      `${f}: line 8: label field "label" is not a string or number`,
    ]);
    // --skip-invalid: the good row stays, every bad one is reported in excluded.
    const ds = await loadDataset(`jsonl:${f}?text=text&label=label&id=id`, { skipInvalid: true });
    expect(ds.samples.map((s) => s.id)).toEqual(['a']);
    expect(ds.excluded.length).toBe(7);
    expect(ds.excluded.every((e) => e.reason.startsWith('invalid: ') && e.file === f && /^line \d+$/.test(e.where!)))
      .toBe(true);
  });

  it('a spec naming fields that no line has: one error naming them and the fields the lines have', async () => {
    const rows = Array.from({ length: 50 },
      (_, i) => ({ q: `question ${i}`, lab: 'ab'[i % 2], opts: ['x', 'y'], nested: { aspect: 'A' },
        ...(i === 7 ? { extra: 1 } : {}) }));
    const f = put('fields.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const one = async (load: () => unknown) => {
      let err: unknown = null;
      try {
        await load();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(LobesError);
      expect(err).not.toBeInstanceOf(LobesErrors);
      const m = (err as Error).message;
      expect(m.split('\n')).toHaveLength(1);
      return m;
    };
    expect(await one(() => loadDataset(`jsonl:${f}?text=question&label=lab,aspect&id=key`))).toBe(
      `${f}: no line has the fields the spec names: text=question, label=aspect, id=key (fields found: q, lab, opts, nested, extra)`,
    );
    // a nested field that the lines have counts as present
    expect(await one(() => loadDataset(`jsonl:${f}?text=text&label=nested.aspect`))).toBe(
      `${f}: no line has the field the spec names: text=text (fields found: q, lab, opts, nested, extra)`,
    );
    // multiple choice: the same one error
    expect(await one(() => loadMcqJsonl(`jsonl:${f}?question=q&options=options&answer=answer&label=lab`))).toBe(
      `${f}: no line has the fields the spec names: options=options, answer=answer (fields found: q, lab, opts, nested, extra)`,
    );
    // a field that some line has: the per-line problems as before
    const msgs = await problems(`jsonl:${f}?text=q&label=extra`);
    expect(msgs.length).toBe(49);
    expect(msgs[0]).toBe(`${f}: line 1: missing label field "extra"`);
  });

  it('refuses unknown BESSI labels, empty files, UTF-16, Latin-1 and invalid UTF-8', async () => {
    const f = put('labels.jsonl',
      [JSON.stringify({ text: 't1', skill: 'Teamwork' }), JSON.stringify({ text: 't2', skill: 'Charisma' }),
        JSON.stringify({ text: 't3', skill: 'capacity for' })].join('\n'));
    const msgs = await problems(`jsonl:${f}?text=text&label=skill&bessi=skill`);
    expect(msgs.length).toBe(2);
    expect(msgs[0]).toMatch(/line 2: unknown label "Charisma" in "skill"/);
    expect(msgs[1]).toMatch(/line 3: unknown label "capacity for" in "skill": ambiguous/);

    const empty = put('empty.jsonl', '\n  \n');
    expect(await problems(`jsonl:${empty}?text=text&label=l`)).toEqual([`${empty}: file is empty (no JSON lines)`]);

    const u16 = put('u16.jsonl',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"text":"a","l":"b"}\n', 'utf16le')]));
    expect((await problems(`jsonl:${u16}?text=text&label=l`))[0]).toMatch(/u16\.jsonl: byte 0: file is UTF-16/);
    const u16nobom = put('u16b.jsonl', Buffer.from('{"text":"a","l":"b"}\n', 'utf16le'));
    expect((await problems(`jsonl:${u16nobom}?text=text&label=l`))[0]).toMatch(/NUL bytes, probably UTF-16/);

    const latin = put('latin1.jsonl',
      Buffer.concat([Buffer.from('{"text":"ok","l":"a"}\n{"text":"caf', 'latin1'), Buffer.from([0xe9]),
        Buffer.from('","l":"b"}\n')]));
    const lm = await problems(`jsonl:${latin}?text=text&label=l`);
    expect(lm).toEqual([
      `${latin}: line 2, byte 34: not valid UTF-8 (bytes e9 22 2c 22; Latin-1 or Windows-1252 text?); re-save the file as UTF-8`,
    ]);

    const bom = put('bom.jsonl',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"text":"é","l":"b"}\n')]));
    expect((await loadDataset(`jsonl:${bom}?text=text&label=l`)).samples[0].text).toBe('é');
  });

  it('validates the spec', async () => {
    const f = put('s.jsonl', '{"text":"a","l":"b"}\n');
    await expect(loadDataset(`jsonl:${f}?label=l`)).rejects.toBeInstanceOf(UsageError);
    await expect(loadDataset(`jsonl:${f}?text=text`)).rejects.toThrow(/needs label=FIELD/);
    await expect(loadDataset(`jsonl:${f}?text=text&label=l,l`)).rejects.toThrow(/named twice/);
    await expect(loadDataset(`jsonl:${f}?text=text&label=l&bessi=z`)).rejects.toThrow(
      /must be one of the label fields/,
    );
    await expect(loadDataset(`jsonl:${path.join(dir, 'missing.jsonl')}?text=text&label=l`)).rejects.toThrow(
      /missing\.jsonl: no such file/,
    );
  });
});

describe('csv adapter', () => {
  it('parses RFC 4180: quoted commas, doubled quotes, newlines inside quotes, CRLF', () => {
    const text = 'a,b,c\r\n1,"x, y","he said ""hi"""\r\n2,"line one\nline two",\r\n"3",,z';
    const r = parseCsv(text);
    expect(r.problems).toEqual([]);
    expect(r.records).toEqual([
      { line: 1, fields: ['a', 'b', 'c'] },
      { line: 2, fields: ['1', 'x, y', 'he said "hi"'] },
      { line: 3, fields: ['2', 'line one\nline two', ''] },
      { line: 5, fields: ['3', '', 'z'] },
    ]);
    expect(parseCsv('a\n"open').problems).toEqual([{ line: 2, reason: 'unterminated quoted field' }]);
    expect(parseCsv('a,b\nx"y,2\n"q"z,3\n').problems.map((p) => p.line)).toEqual([2, 3]);
    expect(parseCsv('a;b\n1;2', ';').records[1].fields).toEqual(['1', '2']);
  });

  it('loads several label columns and an id column; the line of each row is its provenance', async () => {
    const f = put('ok.csv',
      'key,utterance,ability,lang\nk1,"Hello, there",Teamwork Skill,en\nk2,"Two\nlines",Expressive,zh\n');
    const ds = await loadDataset(`csv:${f}?text=utterance&label=ability,lang&id=key&bessi=ability`);
    expect(ds.axes).toEqual(['ability', 'lang', 'aspect']);
    expect(ds.samples).toEqual([
      { id: 'k1', text: 'Hello, there', labels: { ability: 'Teamwork Skill', lang: 'en', aspect: 'Cooperation' },
        provenance: { file: 'ok.csv', line: '2' } },
      { id: 'k2', text: 'Two\nlines', labels: { ability: 'Expressive Skill', lang: 'zh', aspect: 'Social Engagement' },
        provenance: { file: 'ok.csv', line: '3' } },
    ]);
    const tsv = put('ok.tsv', 'text\tl\nhello\tA\n');
    expect((await loadDataset(`csv:${tsv}?text=text&label=l&delimiter=tab`)).samples[0].labels).toEqual({ l: 'A' });
  });

  it('reports all problems: missing columns, ragged rows, empty fields, duplicate ids, stray quotes, empty file', async () => {
    const f = put('bad.csv', 'id,text,l\n1,ok,a\n2,"ragged",b,extra\n3,,c\n1,dup,d\n4,bad"quote,e\n5,fine,\n');
    expect(await problems(`csv:${f}?text=text&label=l&id=id`)).toEqual([
      `${f}: line 6: quote inside an unquoted field (quote the whole field and write "" for the quote)`,
      `${f}: line 3: row has 4 fields, the header has 3`,
      `${f}: line 4: field "text" is empty`,
      `${f}: line 5: duplicate id "1" (first on line 2)`,
      `${f}: line 7: label field "l" is empty`,
    ]);
    expect(await problems(`csv:${f}?text=utterance&label=l`)).toEqual([
      `${f}: line 6: quote inside an unquoted field (quote the whole field and write "" for the quote)`,
      `${f}: line 1: header has no column "utterance" (columns: id, text, l)`,
    ]);
    const empty = put('empty.csv', '');
    expect(await problems(`csv:${empty}?text=text&label=l`)).toEqual([`${empty}: file is empty (no header row)`]);
    const headerOnly = put('header.csv', 'text,l\n');
    expect(await problems(`csv:${headerOnly}?text=text&label=l`)).toEqual([
      `${headerOnly}: file has a header but no rows`,
    ]);
    const ds = await loadDataset(`csv:${f}?text=text&label=l&id=id`, { skipInvalid: true });
    expect(ds.samples.map((s) => s.id)).toEqual(['1']);
    expect(ds.excluded.length).toBe(5);
  });
});

describe('socialeval adapter: bad input', () => {
  const tree = (skill: unknown, content: unknown = { role: 'A', content: 'I will help.' }) => ({
    scenario: 'S',
    interactive_plot: [{ cid: 0, type: 'beginning', dialog: [],
      choices: [{ cid: 1, type: 'skill choice', skill, content,
        confusion: [{ type: 'skill confusion', content: { role: 'A', content: 'no' } }, { type: 'skill question',
          question: ['#question#How does A help?'], skill }] }] }],
  });
  it('reads a small folder and lists every structural problem with file and node', async () => {
    const d = path.join(dir, 'trees');
    mkdirSync(d);
    writeFileSync(path.join(d, '[1,0]_en_example_0.json'), JSON.stringify(tree(['Teamwork Skill'])));
    writeFileSync(path.join(d, '[1,0]_en_example_1.json'), '{"interactive_plot": [');
    writeFileSync(path.join(d, '[1,0]_cn_example_2.json'), JSON.stringify({ scenario: 'S' }));
    writeFileSync(path.join(d, '[0,1]_en_example_3.json'), JSON.stringify(tree('Teamwork Skill')));
    writeFileSync(path.join(d, '[0,1]_en_example_4.json'), JSON.stringify(tree(['Teamwork Skill'], 42)));
    writeFileSync(path.join(d, 'example_5.json'), JSON.stringify(tree(['Teamwork Skill'])));
    writeFileSync(path.join(d, '[0,1]_en_example_6.json'), '');
    writeFileSync(path.join(d, '[0,1]_en_example_7.json'), JSON.stringify(tree(['kindness'])));
    writeFileSync(path.join(d, '[0,1]_cn_example_8.json'), Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]));
    const msgs = await problems(`socialeval:${d}`);
    const f = (n: string) => path.join(d, n);
    expect(msgs).toEqual([
      `${
        f('[0,1]_cn_example_8.json')
      }: line 1, byte 2: not valid UTF-8 (bytes c3 28 22 7d; Latin-1 or Windows-1252 text?); re-save the file as UTF-8`,
      `${f('[0,1]_en_example_3.json')}: node 0, choice 1: "skill" is not a list of strings`,
      `${f('[0,1]_en_example_4.json')}: node 0, choice 1: choice "content" is neither an object nor a list`,
      `${f('[0,1]_en_example_6.json')}: file is empty`,
      `${f('[1,0]_cn_example_2.json')}: interactive_plot: missing field "interactive_plot"`,
      `${f('[1,0]_en_example_1.json')}: ${msgs[5].split(': ').slice(1).join(': ')}`,
      `${
        f('example_5.json')
      }: file name has neither _en_ nor _cn_, so its language is unknown (name files like [1,0]_en_example_3.json)`,
      `${
        f('example_5.json')
      }: file name does not start with the [self,altruism] orientation, e.g. [1,-1]_en_example_0.json`,
    ]);
    expect(msgs[5]).toMatch(/line 1, column \d+: invalid JSON/);
    const ds = await loadDataset(`socialeval:${d}`, { skipInvalid: true });
    expect(ds.samples.map((s) => s.id)).toEqual(['[1,0]_en_example_0/0/1']);
    expect(ds.samples[0].text).toBe('How does A help?\nI will help.');
    expect(ds.samples[0].extras!.distractors).toEqual(['no']);
    // The unknown label is an exclusion with its reason, not a problem.
    expect(ds.excluded.find((e) => e.id === '[0,1]_en_example_7/0/1')!.reason).toMatch(
      /label "kindness": unknown label/,
    );
    expect(ds.excluded.filter((e) => e.reason.startsWith('invalid: ')).length).toBe(8);
    await expect(loadDataset(`socialeval:${path.join(dir, 'nope')}`)).rejects.toThrow(/no such file or folder/);
  });

  it('reports duplicate choice ids within a tree, and composite labels when asked', async () => {
    const t = tree(['Teamwork Skill', 'Capacity for Trust']);
    t.interactive_plot[0].choices.push(JSON.parse(JSON.stringify(t.interactive_plot[0].choices[0])));
    const f = put('[1,1]_en_example_9.json', JSON.stringify(t));
    expect(await problems(`socialeval:${f}`)).toEqual([
      `${f}: node 0, choice 1: duplicate item id [1,1]_en_example_9/0/1 (also at ${f}: node 0, choice 1)`,
    ]);
    const ds = await loadDataset(`socialeval:${f}?composite=include`, { skipInvalid: true });
    expect(ds.samples.map((s) => s.labels)).toEqual([{ aspect: 'Cooperation',
      ability: 'Capacity for Trust + Teamwork Skill', language: 'en', orientation: '[1,1]',
      item_group: '[1,1]_en_example_9' }]);
    const plain = await loadDataset(`socialeval:${f}`, { skipInvalid: true }).catch((e) => e);
    expect(String(plain.message)).toMatch(
      /no samples \(2 excluded; first: composite: Capacity for Trust \+ Teamwork Skill/,
    );
  });
});

describe('UTF-8 validation', () => {
  it('finds the first invalid byte: overlongs, surrogates, truncation', () => {
    expect(firstInvalidUtf8(Buffer.from('héllo 中文 😀'))).toBe(-1);
    expect(firstInvalidUtf8(Uint8Array.from([0x61, 0xc0, 0x80]))).toBe(1);
    expect(firstInvalidUtf8(Uint8Array.from([0xed, 0xa0, 0x80]))).toBe(0);
    expect(firstInvalidUtf8(Uint8Array.from([0x61, 0x62, 0xe4, 0xb8]))).toBe(2);
    expect(firstInvalidUtf8(Uint8Array.from([0xe0, 0x80, 0x80]))).toBe(0);
    expect(firstInvalidUtf8(Uint8Array.from([0xf4, 0x90, 0x80, 0x80]))).toBe(0);
  });
});
