/**
 * The run directory's pieces are checked against each other and against what produced them,
 * with the deterministic stand-ins of test/extract-run/fake.ts (no ONNX Runtime): resume
 * after a tokenizer edit, samples.jsonl damaged or edited (in a run and in a shard before
 * merge), the same data under another path, an edited manifest, the context length and the
 * batch memory plan checked before the model runs, and the provenance record of an analysis.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runExtract, type ExtractDeps } from '../../src/extract/run.js';
import { analysisProvenance, checkProvenance, mergeRuns, openRun, readChunkIndex } from '../../src/store/index.js';
import { loadDataset } from '../../src/data/index.js';
import { fakeDeps, fakeEngine, fakeModelDir } from '../extract-run/fake.js';
import { diffTrees } from '../store/independent.js';
import { snapshot, writeJsonl } from './helpers.js';

const N = 40;
const K = 4;

/** The fake deps with an engine that fails on its `failAt`-th batch (an interrupted extraction). */
const interrupted = (failAt: number) => interruptedWith(fakeDeps(N), failAt);

describe('run pieces are checked against each other and against what produced them', () => {
  let root: string;
  let model: string;
  let reference: string;
  const go = (out: string, extra: Record<string, unknown> = {}, deps: ExtractDeps = fakeDeps(N)) =>
    runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, deps, ...extra });
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-store-integrity-'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'hash-cache.json');
    model = fakeModelDir(root);
    writeFileSync(path.join(model, 'tokenizer.json'), '{"model":{"vocab":{"a":1,"b":2}}}\n');
    reference = path.join(root, 'reference');
    await go(reference);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('an interrupted run resumed after tokenizer.json was edited is refused, naming the file; unedited, it resumes to the reference', async () => {
    const out = path.join(root, 'interrupted');
    await expect(go(out, {}, interrupted(8))).rejects.toThrow(/interrupted/);
    const listed = readChunkIndex(out).chunks.length;
    expect(listed).toBeGreaterThan(0);
    expect(listed).toBeLessThan(N / K);
    const before = snapshot(out);
    // The failed command waited for its last chunk's files: nothing is half-written once it returns.
    expect(Object.keys(before).filter((f) => f.includes('.tmp-'))).toEqual([]);
    const tok = path.join(model, 'tokenizer.json');
    const original = readFileSync(tok);
    writeFileSync(tok, '{"model":{"vocab":{"a":2,"b":1}}}\n');
    try {
      await expect(go(out)).rejects.toThrow(
        /made with different settings: tokenizer file tokenizer\.json sha256 is "[0-9a-f]{64}" in .*interrupted but "[0-9a-f]{64}" in this command/,
      );
      expect(snapshot(out)).toEqual(before);
    } finally {
      writeFileSync(tok, original);
    }
    await go(out);
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'), 'utf8')).toBe(
      readFileSync(path.join(reference, 'samples.jsonl'), 'utf8'),
    );
  });

  it('a truncated samples.jsonl is refused by every reader and by a rerun; --repair writes it again, leaving the chunks alone', async () => {
    const out = path.join(root, 'truncated');
    await go(out);
    const file = path.join(out, 'samples.jsonl');
    const full = readFileSync(file, 'utf8');
    writeFileSync(file, full.slice(0, full.length / 2));
    await expect(openRun(out)).rejects.toThrow(
      /samples\.jsonl: samples table does not match its run: sha256 [0-9a-f]{12}… but the manifest records [0-9a-f]{12}… \(edited, truncated or replaced\)/,
    );
    await expect(go(out)).rejects.toThrow(
      /samples\.jsonl: samples table does not match its run.*\(rerun the same command with repair/,
    );
    const acts = snapshot(path.join(out, 'activations'));
    const lines: string[] = [];
    await go(out, { repair: true, quiet: false, log: (l: string) => lines.push(l) });
    expect(lines.some((l) => /^repair: .*samples\.jsonl: samples table does not match its run/.test(l))).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(full);
    expect(snapshot(path.join(out, 'activations'))).toEqual(acts);
    expect((await openRun(out)).samples).toHaveLength(N);
  });

  it('a deleted samples.jsonl is refused on rerun and restored by --repair', async () => {
    const out = path.join(root, 'deleted');
    await go(out);
    const file = path.join(out, 'samples.jsonl');
    const full = readFileSync(file, 'utf8');
    unlinkSync(file);
    await expect(go(out)).rejects.toThrow(/samples\.jsonl: samples table is missing/);
    await go(out, { repair: true });
    expect(readFileSync(file, 'utf8')).toBe(full);
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
  });

  it("a label edited in a shard's samples.jsonl is refused by merge, also when the shard's manifest hash is edited to match", async () => {
    const shards = await Promise.all([0, 1].map(async (i) => {
      const out = path.join(root, `shard${i}`);
      await go(out, { shard: { index: i, count: 2 } });
      return out;
    }));
    const file = path.join(shards[1]!, 'samples.jsonl');
    const edited = readFileSync(file, 'utf8').replace('"aspect":"Cooperation"', '"aspect":"Innovation"');
    writeFileSync(file, edited);
    await expect(mergeRuns(shards, path.join(root, 'merged1'), { quiet: true })).rejects.toThrow(
      /shard1\/samples\.jsonl: samples table does not match its run/,
    );
    const mf = path.join(shards[1]!, 'manifest.json');
    const m = JSON.parse(readFileSync(mf, 'utf8'));
    m.samplesSha256 = createHash('sha256').update(edited).digest('hex');
    writeFileSync(mf, JSON.stringify(m));
    await expect(mergeRuns(shards, path.join(root, 'merged2'), { quiet: true })).rejects.toThrow(
      /the shards' samples tables do not hold the dataset's items/,
    );
    expect(existsSync(path.join(root, 'merged1'))).toBe(false);
    expect(existsSync(path.join(root, 'merged2'))).toBe(false);
  });

  it('an edited manifest (a setting changed without its identity) is refused when the run is opened', async () => {
    const out = path.join(root, 'edited-manifest');
    await go(out);
    const mf = path.join(out, 'manifest.json');
    const m = JSON.parse(readFileSync(mf, 'utf8'));
    m.tokenizer.maxTokens = 7;
    writeFileSync(mf, JSON.stringify(m));
    await expect(openRun(out)).rejects.toThrow(
      /manifest\.json: manifest was edited: its run identity does not match the settings and hashes it lists/,
    );
  });

  it('the same data file under another relative path resumes (specs are compared without their paths; the items decide)', async () => {
    const data = path.join(root, 'items.jsonl');
    writeJsonl(data,
      Array.from({ length: 12 }, (_, i) => ({ text: `w${i} w${i + 3} w${i + 5}`, label: i % 2 ? 'a' : 'b' })));
    const deps = { ...fakeDeps(N), loadDataset: (s: string) => loadDataset(s) };
    const out = path.join(root, 'by-path');
    const abs = `jsonl:${data}?text=text&label=label`;
    const rel = `jsonl:${path.relative(process.cwd(), data)}?text=text&label=label`;
    await runExtract({ model, data: abs, out, chunkRows: K, batch: 3, quiet: true, deps: interruptedWith(deps, 2) })
      .catch(() => undefined);
    expect(readChunkIndex(out).chunks.length).toBeLessThan(3);
    await runExtract({ model, data: rel, out, chunkRows: K, batch: 3, quiet: true, deps });
    const r = await openRun(out);
    expect(r.manifest.complete).toBe(true);
    expect(r.samples).toHaveLength(12);
    // Other items under the same path are another dataset.
    writeJsonl(data, Array.from({ length: 12 }, (_, i) => ({ text: `w${i} w${i + 4}`, label: i % 2 ? 'a' : 'b' })));
    await expect(runExtract({ model, data: rel, out, chunkRows: K, batch: 3, quiet: true, deps })).rejects.toThrow(
      /dataset items sha256 is/,
    );
  });

  it('texts longer than the context declared in config.json are refused before the model is loaded', async () => {
    const m2 = fakeModelDir(path.join(root, 'ctx'));
    writeFileSync(path.join(m2, 'config.json'), JSON.stringify({ max_position_embeddings: 8 }));
    let opened = false;
    const deps = { ...fakeDeps(N), openCaptureEngine: async (d: string, o: any) => ((opened = true), fakeEngine(o)) };
    // The fake texts have 3..13 words plus a BOS: 4..14 tokens.
    await expect(
      runExtract({ model: m2, data: 'fake', out: path.join(root, 'ctx-run'), chunkRows: K, quiet: true, deps }),
    ).rejects.toThrow(
      /(\d+) of 40 texts are longer than the model's context of 8 tokens \(config\.json max_position_embeddings\); the longest has 14 tokens/,
    );
    expect(opened).toBe(false);
    expect(existsSync(path.join(root, 'ctx-run'))).toBe(false);
    await runExtract({ model: m2, data: 'fake', out: path.join(root, 'ctx-run'), chunkRows: K, quiet: true,
      maxTokens: 8, deps });
    expect((await openRun(path.join(root, 'ctx-run'))).samples.every((s) => s.tokens <= 8)).toBe(true);
  });

  it('a batch whose attention would not fit in memory is refused before any batch runs (the 80k-token text)', async () => {
    const long = { spec: 'fake:long',
      samples: [{ id: 'huge', text: Array.from({ length: 80_000 }, (_, i) => `w${i % 97}`).join(' '),
        labels: { aspect: 'a' } }], excluded: [], axes: ['aspect'] };
    let ran = false;
    const deps = {
      ...fakeDeps(1),
      loadDataset: async () => long,
      openCaptureEngine: async (_d: string, o: any) => {
        const e = fakeEngine(o);
        return { ...e, run: async (b: any) => ((ran = true), e.run(b)) };
      },
    };
    const limit = 64 * 2 ** 30;
    const out = path.join(root, 'huge');
    const err = await runExtract({ model, data: 'fake', out, quiet: true, deps, memoryLimit: () => limit }).catch((e) =>
      e
    );
    // The fake engine's arch: 2 heads, hidden 16, intermediate 24; 80 000 words + BOS.
    const S = 80_001;
    const bytes = 4 * S * (2 * 2 * S + 4 * 16 + 3 * 24);
    expect(bytes).toBeGreaterThan(limit);
    expect(String(err?.message)).toMatch(
      new RegExp(
        `sample huge: a batch of 1 row × ${S} tokens needs about ${
          (bytes / 2 ** 30).toFixed(1)
        } GiB \\(attention scores for 2 heads × ${S}² positions per row\\), more than the 64\\.0 GiB`,
      ),
    );
    expect(ran).toBe(false);
  });

  it('an analysis records the run identity, the samples table and the chunk files it read; checkProvenance accepts it only for its own run', async () => {
    const r = await openRun(reference);
    await r.read('layers.0.mlp.in');
    const p = analysisProvenance(r);
    expect(Object.keys(p.chunks)).toEqual(['layers.0.mlp.in']);
    // Independent digest: sha256 over "chunk sha256" lines of the index, in chunk order.
    const idx = JSON.parse(readFileSync(path.join(reference, 'activations/index.json'), 'utf8'));
    const want = createHash('sha256').update(
      idx.chunks.map((c: any) => `${c.chunk} ${c.files['layers.0.mlp.in'].sha256}\n`).join(''),
    ).digest('hex');
    expect(p.chunks['layers.0.mlp.in']).toBe(want);
    expect(p.samplesSha256).toBe(
      createHash('sha256').update(readFileSync(path.join(reference, 'samples.jsonl'))).digest('hex'),
    );
    expect(p.run).toBe(r.manifest.identity);
    const file = path.join(reference, 'x/settings.json');
    expect(() => checkProvenance(reference, r.manifest, p, 'the results', file, 'lobes x')).not.toThrow();
    const other = await openRun(path.join(root, 'truncated'));
    expect(() =>
      checkProvenance(reference, r.manifest, { ...p,
        run: other.manifest.identity!.replace(/^./, (c) => (c === '0' ? '1' : '0')) }, 'the results', file, 'lobes x')
    ).toThrow(
      /x\/settings\.json: the results belong to another run \(run identity [0-9a-f]{12}… of .*, this run is [0-9a-f]{12}…\) \(run lobes x on this run again\)/,
    );
    expect(() =>
      checkProvenance(reference, r.manifest, { ...p, chunks: { 'layers.0.mlp.in': '0'.repeat(64) } }, 'the results',
        file, 'lobes x')
    ).toThrow(/computed from other chunk files of layers\.0\.mlp\.in/);
    expect(() => checkProvenance(reference, r.manifest, undefined, 'the results', file, 'lobes x')).toThrow(
      /record no run provenance/,
    );
  });
});

/** `deps` whose engine fails on its `failAt`-th batch. */
function interruptedWith(deps: ExtractDeps, failAt: number): ExtractDeps {
  let calls = 0;
  return {
    ...deps,
    openCaptureEngine: async (dir, o) => {
      const e = await deps.openCaptureEngine(dir, o);
      return { ...e, run: async (b) => (++calls >= failAt ? Promise.reject(new Error('interrupted')) : e.run(b)) };
    },
  };
}
