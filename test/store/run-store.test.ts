import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, truncateSync, statSync, rmSync, openSync, fstatSync, readSync,
  writeSync, closeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runExtract } from '../../src/extract/run.js';
import { openRun, verifyRun, readChunkIndex } from '../../src/store/index.js';
import { fakeDeps, fakeDataset, fakeTokenizer, fakePlanBatches, fakePadBatch, fakeEngine, fakeModelDir,
  FAKE_HOOKS } from '../extract-run/fake.js';
import { parseSafetensors, listFiles } from './independent.js';

const N = 23;
const K = 5;
const BATCH = 3;

/** Expected float32 values per hook, recomputed chunk by chunk by the test. */
async function expected(n: number, chunkRows: number, batch: number): Promise<Map<string, Float32Array>> {
  const ds = fakeDataset(n);
  const tok = fakeTokenizer({ maxTokens: null, chatTemplate: false });
  const eng = fakeEngine({ capture: ['final', 'mlp'], device: 'cpu' });
  const ids = ds.samples.map((s) => tok.encode(s.text).ids);
  const out = new Map(FAKE_HOOKS.map((h) => [h.name, new Float32Array(n * h.dim)]));
  for (let start = 0; start < n; start += chunkRows) {
    const rows = ids.slice(start, start + chunkRows);
    for (const b of fakePlanBatches(rows.map((r) => r.length), { batch })) {
      const res = await eng.run(fakePadBatch(b.map((i) => rows[i]), 0, 'left'));
      for (const h of FAKE_HOOKS) {
        const v = res.get(h.name)!;
        b.forEach((i, k) => out.get(h.name)!.set(v.subarray(k * h.dim, (k + 1) * h.dim), (start + i) * h.dim));
      }
    }
  }
  return out;
}

function tmp(): string {
  return mkdtempSync(path.join(tmpdir(), 'lobes-store-'));
}

describe('run directory: write, parse independently, read', () => {
  let root: string;
  let run32: string;
  let run16: string;
  let exp: Map<string, Float32Array>;
  beforeAll(async () => {
    root = tmp();
    const model = fakeModelDir(root);
    run32 = path.join(root, 'run32');
    run16 = path.join(root, 'run16');
    await runExtract({ model, data: 'fake', out: run32, dtype: 'fp32', chunkRows: K, batch: BATCH, quiet: true,
      deps: fakeDeps(N) });
    await runExtract({ model, data: 'fake', out: run16, dtype: 'fp16', chunkRows: K, batch: BATCH, quiet: true,
      deps: fakeDeps(N) });
    exp = await expected(N, K, BATCH);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('chunk files parse with an independent safetensors reader and hold the exact values (fp32)', () => {
    const files = listFiles(path.join(run32, 'activations'));
    expect(files.filter((f) => f.endsWith('.safetensors'))).toHaveLength(FAKE_HOOKS.length * Math.ceil(N / K));
    for (const h of FAKE_HOOKS) {
      const e = exp.get(h.name)!;
      for (let c = 0; c * K < N; c++) {
        const p = parseSafetensors(
          path.join(run32, 'activations', h.name, `chunk-${String(c).padStart(6, '0')}.safetensors`),
        );
        const rows = Math.min(K, N - c * K);
        const t = p.tensors[h.name];
        expect(t.dtype).toBe('F32');
        expect(t.shape).toEqual([rows, h.dim]);
        expect(p.metadata.row_start).toBe(String(c * K));
        for (let i = 0; i < t.values.length; i++) expect(t.values[i]).toBe(e[c * K * h.dim + i]);
      }
    }
  });

  it('fp16 chunks hold the fp16 rounding of the values and the reader returns what the independent parser decodes', async () => {
    const r = await openRun(run16);
    for (const h of FAKE_HOOKS) {
      const all = await r.read(h.name);
      const e = exp.get(h.name)!;
      let k = 0;
      for (let c = 0; c * K < N; c++) {
        const t =
          parseSafetensors(path.join(run16, 'activations', h.name, `chunk-${String(c).padStart(6, '0')}.safetensors`))
            .tensors[h.name];
        expect(t.dtype).toBe('F16');
        for (let i = 0; i < t.values.length; i++, k++) {
          expect(all[k]).toBe(t.values[i]);
          expect(Math.abs(t.values[i] - e[k])).toBeLessThanOrEqual(Math.abs(e[k]) * 2 ** -11 + 2 ** -24);
        }
      }
      expect(k).toBe(N * h.dim);
    }
  });

  it('index lists every chunk with the sha256 and size of its file', () => {
    const idx = readChunkIndex(run32);
    expect(idx.chunks.map((c) => c.chunk)).toEqual([0, 1, 2, 3, 4]);
    for (const c of idx.chunks) {
      for (const h of FAKE_HOOKS) {
        const f = c.files[h.name];
        const bytes = readFileSync(path.join(run32, 'activations', f.path));
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(f.sha256);
        expect(bytes.length).toBe(f.bytes);
      }
    }
  });

  it('manifest and samples table describe the run', async () => {
    const r = await openRun(run32);
    const m = r.manifest;
    expect(m.format).toBe('lobes-run');
    expect(m.complete).toBe(true);
    expect(m.dtype).toBe('fp32');
    expect(m.model.graphSha256).toBe(createHash('sha256').update('fake graph v1').digest('hex'));
    expect(m.capture.points.map((p) => [p.name, p.dim])).toEqual(FAKE_HOOKS.map((h) => [h.name, h.dim]));
    expect(m.counts.samples).toBe(N);
    const ds = fakeDataset(N);
    const tok = fakeTokenizer({ maxTokens: null, chatTemplate: false });
    expect(r.samples.map((s) => s.id)).toEqual(ds.samples.map((s) => s.id));
    expect(r.samples.map((s) => s.tokens)).toEqual(ds.samples.map((s) => tok.encode(s.text).ids.length));
    expect(r.samples.map((s) => s.text)).toEqual(ds.samples.map((s) => s.text));
    expect(m.counts.tokens).toBe(r.samples.reduce((a, s) => a + s.tokens, 0));
    expect(r.labelAxes()).toEqual(['aspect', 'language']);
  });

  it('read(rows) returns exactly those rows, in the order asked, and select() finds label rows', async () => {
    const r = await openRun(run32);
    const h = FAKE_HOOKS[2];
    const e = exp.get(h.name)!;
    const rows = [22, 0, 1, 2, 3, 4, 5, 9, 10, 11, 17, 6];
    const got = await r.read(h.name, rows);
    rows.forEach((row, k) =>
      expect(Array.from(got.subarray(k * h.dim, (k + 1) * h.dim))).toEqual(
        Array.from(e.subarray(row * h.dim, (row + 1) * h.dim)),
      )
    );
    const coop = r.select('aspect', 'Cooperation');
    expect(Array.from(coop)).toEqual(
      fakeDataset(N).samples.flatMap((s, i) => (s.labels.aspect === 'Cooperation' ? [i] : [])),
    );
    expect(r.select('aspect', 'nothing')).toHaveLength(0);
    expect(() => r.labels('ability')).toThrow(/label axis "ability" is not in this run/);
    await expect(r.read('layers.9.mlp.in')).rejects.toThrow(/capture point "layers.9.mlp.in" is not in this run/);
    await expect(r.read(h.name, [N])).rejects.toThrow(/row 23 is out of range/);
  });

  it('iterate() streams row blocks that concatenate to the full matrix', async () => {
    const r = await openRun(run16);
    const all = await r.read('final.hidden');
    const parts: Float32Array[] = [];
    let next = 0;
    for await (const c of r.iterate('final.hidden', 7)) {
      expect(c.start).toBe(next);
      expect(c.rows).toBe(Math.min(7, N - next));
      expect(c.data.length).toBe(c.rows * 16);
      next += c.rows;
      parts.push(c.data);
    }
    expect(next).toBe(N);
    const cat = new Float32Array(N * 16);
    let o = 0;
    for (const p of parts) {
      cat.set(p, o);
      o += p.length;
    }
    expect(cat).toEqual(all);
  });

  it('a corrupted chunk is named by verify, and a truncated one by read', async () => {
    const dir = path.join(root, 'corrupt');
    await runExtract({ model: fakeModelDir(root), data: 'fake', out: dir, chunkRows: K, batch: BATCH, quiet: true,
      deps: fakeDeps(N) });
    expect(await verifyRun(dir)).toBe(FAKE_HOOKS.length * 5);
    const bad = path.join(dir, 'activations', 'layers.0.mlp.in', 'chunk-000002.safetensors');
    const b = readFileSync(bad);
    b[b.length - 3] ^= 0x40;
    writeFileSync(bad, b);
    await expect(verifyRun(dir)).rejects.toThrow(
      /layers\.0\.mlp\.in\/chunk-000002\.safetensors: chunk file is corrupted: sha256/,
    );
    const cut = path.join(dir, 'activations', 'final.hidden', 'chunk-000001.safetensors');
    truncateSync(cut, statSync(cut).size - 10);
    const r = await openRun(dir);
    await expect(r.read('final.hidden', [6])).rejects.toThrow(
      /final\.hidden\/chunk-000001\.safetensors: chunk file has \d+ bytes, the index records \d+/,
    );
    // Rows in intact chunks still read.
    expect((await r.read('final.hidden', [0])).length).toBe(16);
  });
  it('a chunk file re-indexed with an extra tensor or trailing bytes is refused, whatever its recorded sha256', async () => {
    const dir = path.join(root, 'extra');
    await runExtract({ model: fakeModelDir(root), data: 'fake', out: dir, chunkRows: K, batch: BATCH, quiet: true,
      deps: fakeDeps(N) });
    const hook = 'final.hidden';
    const rel = path.join(hook, 'chunk-000001.safetensors');
    const file = path.join(dir, 'activations', rel);
    const orig = readFileSync(file);
    const n = Number(orig.readBigUInt64LE(0));
    const header = JSON.parse(orig.subarray(8, 8 + n).toString('utf8'));
    const data = orig.subarray(8 + n);
    const reindex = (bytes: Buffer) => {
      writeFileSync(file, bytes);
      const idxFile = path.join(dir, 'activations', 'index.json');
      const idx = JSON.parse(readFileSync(idxFile, 'utf8'));
      const f = idx.chunks.find((c: any) => c.chunk === 1).files[hook];
      f.bytes = bytes.length;
      f.sha256 = createHash('sha256').update(bytes).digest('hex');
      writeFileSync(idxFile, JSON.stringify(idx));
    };
    const withHeader = (h: object, tail: Buffer) => {
      let text = JSON.stringify(h);
      text += ' '.repeat((8 - ((8 + text.length) % 8)) % 8);
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(text.length));
      return Buffer.concat([len, Buffer.from(text), tail]);
    };
    // The untouched layout re-written the same way still reads (the check is the extra part, not the rewrite).
    reindex(withHeader(header, data));
    expect((await (await openRun(dir)).read(hook, [6])).length).toBe(16);
    reindex(
      withHeader({ ...header, planted: { dtype: 'F32', shape: [1], data_offsets: [data.length, data.length + 4] } },
        Buffer.concat([data, Buffer.alloc(4)])),
    );
    await expect((await openRun(dir)).read(hook, [6])).rejects.toThrow(
      /final\.hidden\/chunk-000001\.safetensors: chunk file holds a tensor besides final\.hidden \("planted"\); lobes writes one per chunk file/,
    );
    reindex(withHeader(header, Buffer.concat([data, Buffer.alloc(8)])));
    await expect((await openRun(dir)).read(hook, [6])).rejects.toThrow(
      /chunk-000001\.safetensors: chunk file has 8 bytes after its final\.hidden data/,
    );
  });
  it('a chunk changed in place after it was verified is re-hashed and refused on the next read through the same open run (the verified-file cache is keyed by more than size)', async () => {
    const dir = path.join(root, 'inplace');
    await runExtract({ model: fakeModelDir(root), data: 'fake', out: dir, chunkRows: K, batch: BATCH, quiet: true,
      deps: fakeDeps(N) });
    const run = await openRun(dir);
    const hook = 'final.hidden';
    expect((await run.read(hook, [0, 1])).length).toBe(32);
    // Flip one bit of the first chunk's last value: same size, same inode.
    const file = path.join(dir, 'activations', hook, 'chunk-000000.safetensors');
    const fd = openSync(file, 'r+');
    const size = fstatSync(fd).size;
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, size - 1);
    b[0] = b[0]! ^ 0x40;
    writeSync(fd, b, 0, 1, size - 1);
    closeSync(fd);
    await expect(run.read(hook, [0, 1])).rejects.toThrow(
      /final\.hidden\/chunk-000000\.safetensors: chunk file is corrupted: sha256/,
    );
    // Rows of the other chunks still read through the same reader.
    expect((await run.read(hook, [K])).length).toBe(16);
  });
});
