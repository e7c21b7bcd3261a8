import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/data.js';
import { loadDataset } from '../../src/data/index.js';
import { LobesErrors, UsageError } from '../../src/util/errors.js';

const dir = mkdtempSync(path.join(tmpdir(), 'lobes-roundtrip-'));
const TREES = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
if (!existsSync(TREES)) console.log(`test/data/roundtrip.test.ts: SocialEval cases skipped, ${TREES} is absent`);

afterEach(() => vi.restoreAllMocks());
const quiet = () => vi.spyOn(process.stderr, 'write').mockImplementation(() => true);

describe('lobes data export -> jsonl: round trip', () => {
  it('builtin:social comes back with every id, text, label axis, provenance and extra', async () => {
    quiet();
    const file = path.join(dir, 'social.jsonl');
    expect(await run(['export', 'builtin:social', '--out', file])).toBe(0);
    const a = await loadDataset('builtin:social');
    const b = await loadDataset(`jsonl:${file}`);
    expect(b.axes).toEqual(a.axes);
    expect(b.samples).toEqual(a.samples);
    expect(b.spec).toBe(`jsonl:${file}`);
  });

  it.skipIf(!existsSync(TREES))('SocialEval English, response only: the same items, all four axes and the world trees',
    async () => {
      quiet();
      const spec = `socialeval:${TREES}?lang=en&text=response`;
      const file = path.join(dir, 'se.jsonl');
      expect(await run(['export', spec, '--out', file])).toBe(0);
      const a = await loadDataset(spec);
      const b = await loadDataset(`jsonl:${file}`);
      // the trees travel as the label item_group, so the re-imported items are grouped as before
      expect(b.axes).toEqual(['aspect', 'ability', 'language', 'orientation', 'item_group']);
      expect(b.samples).toEqual(a.samples);
    });

  it('an edited export (a label changed) re-imports with the edit', async () => {
    quiet();
    const file = path.join(dir, 'edit.jsonl');
    await run(['export', 'builtin:social', '--out', file]);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    lines[0].labels.aspect = 'Relabelled';
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const b = await loadDataset(`jsonl:${file}`);
    expect(b.samples[0].labels.aspect).toBe('Relabelled');
    expect(b.samples[1].labels.aspect).toBe(lines[1].labels.aspect);
  });

  it('nested label fields can also be named as labels.X (the axis is X)', async () => {
    quiet();
    const file = path.join(dir, 'nested.jsonl');
    await run(['export', 'builtin:social', '--out', file]);
    const b = await loadDataset(`jsonl:${file}?text=text&label=labels.aspect,labels.language&id=id`);
    const a = await loadDataset('builtin:social');
    expect(b.axes).toEqual(['aspect', 'language']);
    expect(b.samples.map((s) => [s.id, s.text, s.labels])).toEqual(
      a.samples.map((s) => [s.id, s.text, { aspect: s.labels.aspect, language: s.labels.language }]),
    );
  });

  it('a sample file whose lines disagree on the label axes is refused, naming the line', async () => {
    const file = path.join(dir, 'bad.jsonl');
    writeFileSync(file,
      [{ id: 'a', text: 'x', labels: { k: '1' } }, { id: 'b', text: 'y', labels: { k: '2', j: '3' } }].map((o) =>
        JSON.stringify(o)
      ).join('\n') + '\n');
    const e = await loadDataset(`jsonl:${file}`).catch((x) => x);
    expect(e).toBeInstanceOf(LobesErrors);
    expect(String(e.message)).toMatch(
      /bad\.jsonl: line 2: .*label axes \["k","j"\] differ from the first line's \["k"\]/,
    );
  });
});

describe('socialeval text=', () => {
  it('builtin: question+response (default), response, question', async () => {
    const qr = await loadDataset('builtin:social?lang=en');
    const r = await loadDataset('builtin:social?lang=en&text=response');
    const q = await loadDataset('builtin:social?lang=en&text=question');
    expect(r.samples.map((s) => s.id)).toEqual(qr.samples.map((s) => s.id));
    for (let i = 0; i < qr.samples.length; i++) {
      const [question, ...rest] = qr.samples[i].text.split('\n');
      expect(r.samples[i].text).toBe(rest.join('\n'));
      expect(q.samples[i].text).toBe(question);
    }
    expect(r.spec).toBe('builtin:social?lang=en&text=response');
  });
  it('a "+" that arrives as a space still reads as question+response; other values are refused', async () => {
    const a = await loadDataset('builtin:social?lang=en&text=question response');
    const b = await loadDataset('builtin:social?lang=en');
    expect(a.samples.map((s) => s.text)).toEqual(b.samples.map((s) => s.text));
    await expect(loadDataset('builtin:social?text=answer')).rejects.toThrow(UsageError);
    await expect(loadDataset('builtin:social?text=response&template={response}')).rejects.toThrow(/cannot be combined/);
  });
  it.skipIf(!existsSync(TREES))('SocialEval: text=response keeps the same items and drops the question line',
    async () => {
      const qr = await loadDataset(`socialeval:${TREES}?lang=en`);
      const r = await loadDataset(`socialeval:${TREES}?lang=en&text=response`);
      expect(r.samples.map((s) => s.id)).toEqual(qr.samples.map((s) => s.id));
      expect(r.samples.length).toBe(1985);
      for (const s of r.samples.slice(0, 50)) expect(s.text).toBe(s.extras!.response);
      expect(r.spec).toContain('text=response');
    });
});
