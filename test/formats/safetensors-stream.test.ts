/**
 * Streaming safetensors writers: byte-identical to the in-memory encoder, readable by the
 * reader and the checkpoint opener, Hugging Face's shard split and index, and nothing left
 * behind when the bytes do not match the header.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  SafetensorsWriter,
  encodeSafetensors,
  readSafetensorsHeader,
  readTensorFloat32,
  type StTensorSpec,
} from '../../src/formats/safetensors.js';
import { planShards, writeShardedSafetensors } from '../../src/formats/safetensors-shards.js';
import { openSafetensorsCheckpoint } from '../../src/wanda/weights.js';
import { Rng } from '../../src/util/rng.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-st-stream-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function f32(n: number, seed: number): Float32Array {
  const r = new Rng(seed);
  return Float32Array.from({ length: n }, () => r.normal());
}

describe('SafetensorsWriter', () => {
  it('writes the same bytes as the in-memory encoder, whatever the piece sizes', () => {
    const a = f32(6 * 5, 1);
    const b = new Uint16Array([1, 2, 3, 0xffff]);
    const c = new Float32Array(0);
    const tensors = [
      { name: 'a', dtype: 'F32' as const, shape: [6, 5], data: a },
      { name: 'empty', dtype: 'F32' as const, shape: [0, 3], data: c },
      { name: 'b', dtype: 'BF16' as const, shape: [4], data: b },
    ];
    const expected = Buffer.concat(encodeSafetensors(tensors, { format: 'pt' }));
    const file = path.join(tmp, 'one.safetensors');
    const w = SafetensorsWriter.create(file, tensors, { format: 'pt' });
    const all = Buffer.concat([Buffer.from(a.buffer), Buffer.from(b.buffer)]);
    // pieces of 7 bytes: they straddle the boundary between tensors a and b
    for (let o = 0; o < all.length; o += 7) w.write(all.subarray(o, Math.min(all.length, o + 7)));
    expect(existsSync(file)).toBe(false); // not before close()
    w.close();
    expect(readFileSync(file).equals(expected)).toBe(true);
    const h = readSafetensorsHeader(file);
    expect(h.metadata).toEqual({ format: 'pt' });
    expect(Array.from(readTensorFloat32(h, 'a', 2, 4))).toEqual(Array.from(a.subarray(10, 20)));
  });

  it('checks pieces against the named tensor and refuses to finish short, leaving no file', () => {
    const file = path.join(tmp, 'short.safetensors');
    const w = SafetensorsWriter.create(file, [
      { name: 'x', dtype: 'F32', shape: [2] },
      { name: 'y', dtype: 'F32', shape: [2] },
    ]);
    expect(() => w.write(new Float32Array(2), 'y')).toThrow(/"y" arrived while "x"/);
    expect(() => w.write(new Float32Array(3), 'x')).toThrow(/12 bytes for tensor "x" but only 8 remain/);
    w.write(new Float32Array(2), 'x');
    expect(w.current).toBe('y');
    expect(() => w.close()).toThrow(/only 8 of 16 data bytes.*"y" is incomplete/);
    expect(readdirSync(tmp).filter((n) => n.includes('short'))).toEqual([]);
  });
});

describe('sharded checkpoints', () => {
  const spec = (name: string, bytes: number): StTensorSpec => ({ name, dtype: 'U8', shape: [bytes] });

  it('splits like transformers save_pretrained (a new shard when the next tensor would pass the limit)', () => {
    // hand-worked: limit 5; sizes 2,2,2 -> [2,2] [2]; a 7-byte tensor gets a shard alone
    const plan = planShards([spec('a', 2), spec('b', 2), spec('c', 2), spec('big', 7), spec('d', 1)], 5);
    expect(plan.map((s) => s.tensors.map((t) => t.name))).toEqual([['a', 'b'], ['c'], ['big'], ['d']]);
    expect(plan.map((s) => s.file)).toEqual([
      'model-00001-of-00004.safetensors',
      'model-00002-of-00004.safetensors',
      'model-00003-of-00004.safetensors',
      'model-00004-of-00004.safetensors',
    ]);
    expect(planShards([spec('a', 2), spec('b', 3)], 5).map((s) => s.file)).toEqual(['model.safetensors']);
  });

  it('writes shards and model.safetensors.index.json that the checkpoint opener reads back exactly', async () => {
    const dir = path.join(tmp, 'ck');
    const shapes: Record<string, number[]> = { 'model.embed_tokens.weight': [10, 4],
      'model.layers.0.mlp.up_proj.weight': [6, 4], 'model.norm.weight': [4] };
    const specs: StTensorSpec[] = Object.entries(shapes).map(([name, shape]) => ({ name, dtype: 'F32', shape }));
    const data = new Map(specs.map((s, i) => [s.name, f32(s.shape.reduce((a, b) => a * b, 1), 10 + i)]));
    const seen: string[] = [];
    const res = await writeShardedSafetensors(dir, specs, (s, write) => {
      const d = data.get(s.name)!;
      for (let r = 0; r < d.length; r += 4) write(d.subarray(r, r + 4)); // row by row
      seen.push(s.name);
    }, { maxShardBytes: 100, metadata: { format: 'pt' } });
    expect(seen).toEqual(specs.map((s) => s.name));
    // 160 bytes of embeddings alone; 96 + 16 fit under 100? 112 > 100, so three shards
    expect(res.shards).toEqual(['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors',
      'model-00003-of-00003.safetensors']);
    const index = JSON.parse(readFileSync(path.join(dir, 'model.safetensors.index.json'), 'utf8'));
    expect(index).toEqual({
      metadata: { total_size: 160 + 96 + 16 },
      weight_map: {
        'model.embed_tokens.weight': 'model-00001-of-00003.safetensors',
        'model.layers.0.mlp.up_proj.weight': 'model-00002-of-00003.safetensors',
        'model.norm.weight': 'model-00003-of-00003.safetensors',
      },
    });
    const ck = openSafetensorsCheckpoint(dir);
    for (const [name, d] of data)
      expect(Array.from(readTensorFloat32(ck.tensors.get(name)!, name))).toEqual(Array.from(d));
    expect(readdirSync(tmp).filter((n) => n.startsWith('.ck'))).toEqual([]);
  });

  it('leaves nothing when fill gives the wrong number of bytes, and never overwrites', async () => {
    const dir = path.join(tmp, 'bad');
    const specs: StTensorSpec[] = [spec('a', 4), spec('b', 4)];
    await expect(
      writeShardedSafetensors(dir, specs, (s, write) => write(new Uint8Array(s.name === 'b' ? 3 : 4)), {
        maxShardBytes: 4,
      }),
    ).rejects.toThrow(/fill gave 3 bytes for tensor "b", which has 4/);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(tmp).filter((n) => n.startsWith('.bad'))).toEqual([]);
    await expect(writeShardedSafetensors(path.join(tmp, 'ck'), specs, () => {})).rejects.toThrow(/already exists/);
  });
});
