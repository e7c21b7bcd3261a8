/**
 * The token baselines of `lobes cluster` (the probe on the tokens alone): their features against
 * hand computations, a planted label that only the words carry, and a run whose model folder has
 * moved since extraction (`cluster --model DIR`, checked against the run by hash).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, type GeneratedModelSpec } from '../../src/models/write.js';
import { runExtract } from '../../src/extract/run.js';
import { runCluster } from '../../src/cluster/run.js';
import { embeddingMeans, tokenCounts } from '../../src/cluster/baseline.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-baseline-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it('token counts keep the ids seen in at least two items, in id order, counting repeats', () => {
  // ids 1 and 2 occur in two items each; 3 and 4 in one: columns [1, 2]
  const { X, dim } = tokenCounts([[1, 2, 2], [2, 3], [1, 4]]);
  expect(dim).toBe(2);
  expect(Array.from(X)).toEqual([1, 2, 0, 1, 1, 0]);
  expect(tokenCounts([[5], [6]]).dim).toBe(0);
});

it('embedding means average the rows of the item’s tokens (an id outside the table adds nothing but counts)', () => {
  // vocab 3, dim 2: rows [1, 2], [3, 4], [5, 6]
  const E = new Float32Array([1, 2, 3, 4, 5, 6]);
  const X = embeddingMeans([[0, 2], [1, 1, 1], [2, 9]], E, 3, 2);
  expect(Array.from(X)).toEqual([3, 4, 3, 4, 2.5, 3]);
});

// Two groups told apart by one word the item ends in; the generated model's weights know nothing of them.
const SPEC: GeneratedModelSpec = {
  model: { layers: 1, hidden: 64, intermediate: 128, heads: 4, kvHeads: 2, vocab: 512, seed: 77 },
  write: { externalData: true },
};
const OPENINGS = ['We talked about it and then', 'She wrote it down before', 'After the meeting they agreed on',
  'In the morning he remembered', 'The note on the table said', 'Nobody expected that'];

function data(): string {
  const lines: string[] = [];
  for (let i = 0; i < 60; i++) {
    const g = i % 2 ? 'tea' : 'rain';
    lines.push(
      JSON.stringify({ id: `item-${i}`, text: `${OPENINGS[i % OPENINGS.length]} ${i} ${g}`, labels: { group: g } }),
    );
  }
  const file = path.join(tmp, 'items.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  return `jsonl:${file}`;
}

const CLUSTER = { input: { by: 'group' }, tsne: { perplexity: 5, iterations: 250 },
  metrics: { bootstrap: 100, permutations: 19, probePermutations: 19 }, execution: { quiet: true, threads: 1 } };

describe('token baselines of a run', () => {
  const source = ensureModelFromSpec('baseline-words', SPEC);
  const model = path.join(tmp, 'model');
  cpSync(source, model, { recursive: true });
  const run = path.join(tmp, 'run');

  it('find the planted word, and need the run’s own model folder: --model DIR where it has moved', async () => {
    await runExtract({ model, data: data(), out: run, capture: ['final'], quiet: true, dtype: 'fp32' });
    const before = await runCluster(run, { ...CLUSTER, output: { dir: path.join(tmp, 'c-before') } });
    const names = (before.metrics.baselines ?? []).map((b) => b.name);
    expect(names).toEqual(['token-counts', 'token-embedding-mean']);
    // the word that names the group is in every item of its group: the counts probe reads it
    const counts = before.metrics.baselines![0];
    expect(counts.probe.balancedAccuracy.value).toBeGreaterThan(0.9);
    expect(counts.probe.balancedAccuracy.p).toBeLessThanOrEqual(0.05);
    // paired with the representation's probe on the same items and repeats: the difference's value
    // is the difference of the two probes' means over repeats (the last token is the planted word,
    // so the representation reads it as well: no sign is asserted)
    const state = before.metrics.spaces.find((s) => s.space === 'original-euclidean')!.probe!;
    const vs = before.metrics.comparisons!.find((c) => c.kind === 'model-vs-words' && c.b === 'token-counts')!;
    expect(vs.a).toBe('final.hidden');
    expect(vs.balancedAccuracy.value).toBeCloseTo(state.balancedAccuracy.value - counts.probe.balancedAccuracy.value,
      12);
    expect(vs.balancedAccuracy.ci95![0]).toBeLessThanOrEqual(vs.balancedAccuracy.value);
    expect(vs.balancedAccuracy.ci95![1]).toBeGreaterThanOrEqual(vs.balancedAccuracy.value);
    // the incremental probe sees both; it is scored, and compared with the words alone
    const inc = before.metrics.incremental!.find((b) => b.words === 'token-counts')!;
    expect(inc.probe.balancedAccuracy.value).toBeGreaterThan(0.8);
    const add = before.metrics.comparisons!.find((c) => c.kind === 'incremental' && c.b === 'token-counts')!;
    expect(add.a).toBe('token-counts + final.hidden');
    expect(add.accuracy.value).toBeCloseTo(inc.probe.accuracy.value - counts.probe.accuracy.value, 12);
    expect(add.accuracy.ci95![0]).toBeLessThanOrEqual(add.accuracy.value);
    expect(add.accuracy.ci95![1]).toBeGreaterThanOrEqual(add.accuracy.value);

    // the folder moves: the baselines are left out with a note that says what to do
    const moved = path.join(tmp, 'model-moved');
    cpSync(model, moved, { recursive: true });
    rmSync(model, { recursive: true });
    const lost = await runCluster(run, { ...CLUSTER, output: { dir: path.join(tmp, 'c-lost') } });
    expect(lost.metrics.baselines ?? []).toEqual([]);
    expect(lost.metrics.notes?.join('\n')).toMatch(
      /no token baselines: the run's model folder .* is not there .*--model DIR/,
    );

    // --model names where it is now: the same numbers as before the move
    const found = await runCluster(run, { ...CLUSTER, baselines: { model: moved },
      output: { dir: path.join(tmp, 'c-found') } });
    expect(found.metrics.baselines).toEqual(before.metrics.baselines);
  }, 120_000);

  it(
    '--model with another tokenizer or embedding table is a one-line error naming the file, before any work, writing nothing',
    async () => {
      const other = path.join(tmp, 'model-other');
      cpSync(path.join(tmp, 'model-moved'), other, { recursive: true });
      // another tokenizer: one byte more
      const tok = path.join(other, 'tokenizer.json');
      writeFileSync(tok, (await import('node:fs')).readFileSync(tok, 'utf8') + ' ');
      const out = path.join(tmp, 'c-other');
      await expect(runCluster(run, { ...CLUSTER, baselines: { model: other }, output: { dir: out } })).rejects.toThrow(
        /tokenizer file tokenizer\.json has sha256 [0-9a-f]{12}…; the run was extracted with sha256/,
      );
      expect(existsSync(out)).toBe(false);

      // the right tokenizer, other embeddings (another seed's weights)
      const other2 = path.join(tmp, 'model-other2');
      cpSync(ensureModelFromSpec('baseline-words', { ...SPEC, model: { ...SPEC.model, seed: 78 } }), other2, {
        recursive: true,
      });
      cpSync(path.join(tmp, 'model-moved', 'tokenizer.json'), path.join(other2, 'tokenizer.json'));
      // (the first recorded file that differs is named: the graph, then the weight data)
      await expect(runCluster(run, { ...CLUSTER, baselines: { model: other2 }, output: { dir: out } })).rejects.toThrow(
        /(model graph model\.onnx|weight data file model\.onnx_data) has sha256 [0-9a-f]{12}…; the run was extracted with/,
      );

      // the right tokenizer and weight file, a decoy graph (it can hold the embeddings itself)
      const decoy = path.join(tmp, 'model-decoy');
      cpSync(path.join(tmp, 'model-moved'), decoy, { recursive: true });
      const g = path.join(decoy, 'model.onnx');
      writeFileSync(g, Buffer.concat([(await import('node:fs')).readFileSync(g), Buffer.from([0])]));
      await expect(runCluster(run, { ...CLUSTER, baselines: { model: decoy }, output: { dir: out } })).rejects.toThrow(
        /model graph model\.onnx has sha256 [0-9a-f]{12}…; the run was extracted with/,
      );
      expect(existsSync(out)).toBe(false);

      // through the CLI: exit 1 with one line naming the file
      const errs: string[] = [];
      const write = process.stderr.write;
      process.stderr.write = ((s: string) => (errs.push(String(s)), true)) as typeof process.stderr.write;
      let code: number;
      try {
        const { main } = await import('../../src/cli/main.js');
        code = await main(['cluster', run, '--by', 'group', '--model', path.join(tmp, 'nowhere'), '--quiet', '--out',
          out]);
      } finally {
        process.stderr.write = write;
      }
      expect(code).toBe(1);
      const text = errs.join('').trim();
      expect(text.split('\n')).toHaveLength(1);
      expect(text).toContain(path.join(tmp, 'nowhere'));
      expect(text).toMatch(/no such model folder/);
      expect(existsSync(out)).toBe(false);
    },
    120_000,
  );

  it(
    "the run's own model folder with 20 KB of its weight data XOR-ed is refused before any work, naming the file; --no-baselines still runs",
    async () => {
      // the folder back where the run recorded it, its weight data changed in place
      cpSync(path.join(tmp, 'model-moved'), model, { recursive: true });
      const data = path.join(model, 'model.onnx_data');
      const bytes = readFileSync(data);
      for (let i = 1024; i < 1024 + 20 * 1024 && i < bytes.length; i++) bytes[i] ^= 0x5a;
      writeFileSync(data, bytes);
      const out = path.join(tmp, 'c-xor');
      await expect(runCluster(run, { ...CLUSTER, output: { dir: out } })).rejects.toThrow(
        /weight data file model\.onnx_data has sha256 [0-9a-f]{12}…; the run was extracted with sha256 [0-9a-f]{12}…, so its token baselines would be another model's/,
      );
      expect(existsSync(out)).toBe(false);
      const bare = await runCluster(run, { ...CLUSTER, baselines: { tokens: false }, output: { dir: out } });
      expect(bare.metrics.baselines ?? []).toEqual([]);
    },
    120_000,
  );
});
