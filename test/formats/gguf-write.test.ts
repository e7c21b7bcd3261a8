/**
 * The GGUF writer: write → read gives back the same metadata (every value type, empty and
 * nested arrays) and tensor bytes at aligned offsets; lobes' copy of goldens.gguf is byte for
 * byte the file the gguf package's GGUFReader accepted (test/goldens/gguf/writer-check.json);
 * streaming in pieces; bad input refused with nothing left behind.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { openGguf, readGgufHeader, type GgufValue } from '../../src/formats/gguf.js';
import { GgufWriter, writeGguf, encodeGgufHeader, type GgufTensorSpec } from '../../src/formats/gguf-write.js';
import { GGML_TYPES, ggmlByteSize } from '../../src/formats/ggml.js';
import { Rng } from '../../src/util/rng.js';
import { copyGguf } from './gguf-probe.js';
import { GOLDEN_GGUF, REF, goldens, sha256, lobesError, tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

const META: Array<[string, GgufValue]> = [
  ['general.architecture', { type: 'string', value: 'llama' }],
  ['u8', { type: 'uint8', value: 255 }],
  ['i8', { type: 'int8', value: -128 }],
  ['u16', { type: 'uint16', value: 65535 }],
  ['i16', { type: 'int16', value: -32768 }],
  ['u32', { type: 'uint32', value: 4294967295 }],
  ['i32', { type: 'int32', value: -2147483648 }],
  ['f32', { type: 'float32', value: Math.fround(1e-5) }],
  ['f64', { type: 'float64', value: -1 / 3 }],
  ['bool', { type: 'bool', value: true }],
  ['str', { type: 'string', value: 'Ġthe 世界 🙂 \u0000 end' }],
  ['str.empty', { type: 'string', value: '' }],
  ['u64', { type: 'uint64', value: 2n ** 64n - 1n }],
  ['i64', { type: 'int64', value: -(2n ** 63n) }],
  ['a.u8', { type: 'array', value: { itemType: 'uint8', items: new Uint8Array([1, 2, 255]) } }],
  ['a.i8', { type: 'array', value: { itemType: 'int8', items: new Int8Array([-1, 5]) } }],
  ['a.u16', { type: 'array', value: { itemType: 'uint16', items: new Uint16Array([7]) } }],
  ['a.i16', { type: 'array', value: { itemType: 'int16', items: new Int16Array([-7, 8]) } }],
  ['a.u32', { type: 'array', value: { itemType: 'uint32', items: new Uint32Array([0, 4294967295]) } }],
  ['a.i32', { type: 'array', value: { itemType: 'int32', items: new Int32Array(1000).map((_, i) => i * 3 - 1500) } }],
  ['a.f32', { type: 'array', value: { itemType: 'float32', items: new Float32Array([0.5, -0, Infinity]) } }],
  ['a.f64', { type: 'array', value: { itemType: 'float64', items: new Float64Array([Math.PI]) } }],
  ['a.u64', { type: 'array', value: { itemType: 'uint64', items: new BigUint64Array([2n ** 64n - 1n]) } }],
  ['a.i64', { type: 'array', value: { itemType: 'int64', items: new BigInt64Array([-5n, 2n ** 62n]) } }],
  ['a.bool', { type: 'array', value: { itemType: 'bool', items: [true, false, false] } }],
  ['a.str', { type: 'array', value: { itemType: 'string', items: ['a', '', 'Ġb c', '世界'] } }],
  ['a.empty', { type: 'array', value: { itemType: 'string', items: [] } }],
  ['a.empty.f32', { type: 'array', value: { itemType: 'float32', items: new Float32Array(0) } }],
  ['a.nested', {
    type: 'array',
    value: { itemType: 'array',
      items: [{ itemType: 'string', items: ['x'] }, { itemType: 'int32', items: new Int32Array([1, 2]) }, {
        itemType: 'array',
        items: [],
      }] },
  }],
];

/** Random raw bytes for a tensor of any GGML type (the writer does not interpret them). */
function tensorsOfEveryType(rng: Rng): Array<GgufTensorSpec & { data: Uint8Array }> {
  const out: Array<GgufTensorSpec & { data: Uint8Array }> = [];
  for (const t of GGML_TYPES) {
    if (t.blockSize === 0) continue;
    const dims = [t.blockSize * (1 + rng.int(3)), 1 + rng.int(3)];
    const data = new Uint8Array(ggmlByteSize(t.id, dims[0] * dims[1]));
    for (let i = 0; i < data.length; i++) data[i] = rng.int(256);
    out.push({ name: `t.${t.name.toLowerCase()}`, dims, type: t.id, data });
  }
  out.push({ name: 'vector', dims: [5], type: 0, data: new Uint8Array(20).fill(7) });
  out.push({ name: 'scalar', dims: [], type: 0, data: new Uint8Array(4).fill(9) });
  out.push({ name: 'four.dims', dims: [32, 2, 1, 3], type: 8, data: new Uint8Array(6 * 34).fill(3) });
  return out;
}

describe('GGUF writer', () => {
  for (const [version, alignment] of [[3, 32], [2, 64], [3, 256]] as const) {
    it(`round-trips metadata of every type and tensors of every GGML type (version ${version}, alignment ${alignment})`, () => {
      const file = path.join(tmpDir(), 'rt.gguf');
      const tensors = tensorsOfEveryType(new Rng(alignment));
      writeGguf(file, META, tensors, { version, alignment });
      const f = openGguf(file);
      try {
        expect(f.version).toBe(version);
        expect(f.alignment).toBe(alignment);
        const keys = META.map(([k]) => k);
        if (alignment !== 32) keys.push('general.alignment');
        expect([...f.metadata.keys()]).toEqual(keys);
        for (const [k, v] of META) expect(f.get(k), k).toEqual(v);
        if (alignment !== 32) expect(f.get('general.alignment')).toEqual({ type: 'uint32', value: alignment });
        expect(f.tensors.map((t) => [t.name, t.dims, t.type])).toEqual(tensors.map((t) => [t.name, t.dims, t.type]));
        expect(f.dataStart % alignment).toBe(0);
        for (const t of tensors) {
          const info = f.tensor(t.name);
          expect((info.offset - f.dataStart) % alignment, t.name).toBe(0);
          expect(Buffer.from(f.readTensorBytes(info)).equals(Buffer.from(t.data)), t.name).toBe(true);
        }
        // The last tensor is padded to the alignment as well.
        const last = f.tensors[f.tensors.length - 1];
        expect(f.fileSize).toBe(last.offset + Math.ceil(last.nbytes / alignment) * alignment);
      } finally {
        f.close();
      }
    });
  }

  it('copies goldens.gguf into exactly the file that gguf.GGUFReader read back (writer-check.json)', () => {
    const check = JSON.parse(readFileSync(path.join(REF, 'writer-check.json'), 'utf8'));
    const file = path.join(tmpDir(), 'copy.gguf');
    copyGguf(GOLDEN_GGUF, file, 64);
    expect(sha256(readFileSync(file))).toBe(check.sha256);
    // And lobes reads the copy like the original.
    const a = readGgufHeader(GOLDEN_GGUF);
    const b = openGguf(file);
    try {
      expect([...b.metadata].filter(([k]) => k !== 'general.alignment')).toEqual([...a.metadata]);
      expect(b.tensors.length).toBe(check.tensors);
      for (const t of goldens().tensors) expect(sha256(b.readTensorBytes(t.name)), t.name).toBe(t.sha256);
    } finally {
      b.close();
    }
  });

  it('streams a tensor in pieces into the same bytes as in one piece', () => {
    const dir = tmpDir();
    const specs: GgufTensorSpec[] = [{ name: 'a', dims: [64, 40], type: 2 }, { name: 'b', dims: [3], type: 0 }];
    const a = new Uint8Array(ggmlByteSize(2, 64 * 40)).map((_, i) => (i * 31) & 255);
    const b = new Float32Array([1, 2, 3]);
    writeGguf(path.join(dir, 'one.gguf'), META.slice(0, 3), [{ ...specs[0], data: a }, { ...specs[1], data: b }]);
    const w = GgufWriter.create(path.join(dir, 'pieces.gguf'), META.slice(0, 3), specs);
    expect(w.next?.name).toBe('a');
    for (let o = 0; o < a.length; o += 100) w.write('a', a.subarray(o, Math.min(a.length, o + 100)));
    expect(w.next?.name).toBe('b');
    w.write('b', b);
    expect(w.next).toBeNull();
    expect(existsSync(path.join(dir, 'pieces.gguf'))).toBe(false); // appears only when finished
    w.finish();
    expect(readFileSync(path.join(dir, 'pieces.gguf')).equals(readFileSync(path.join(dir, 'one.gguf')))).toBe(true);
  });

  it('refuses bad input with one-line errors and leaves no file behind', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'bad.gguf');
    const spec: GgufTensorSpec[] = [{ name: 'a', dims: [32], type: 2 }, { name: 'b', dims: [2], type: 0 }];
    const w = GgufWriter.create(file, [], spec);
    expect(lobesError(() => w.write('b', new Float32Array(2))).message).toMatch(
      /tensor "b" written out of order: "a" is next/,
    );
    expect(lobesError(() => w.write('a', new Uint8Array(19))).message).toMatch(
      /tensor "a": 19 bytes given but Q4_0 \[32\] takes 18/,
    );
    w.write('a', new Uint8Array(18));
    expect(lobesError(() => w.finish()).message).toMatch(
      /1 tensor\(s\) not written, starting with "b"; nothing was written/,
    );
    expect(readdirSync(dir)).toEqual([]);

    const header = (meta: Array<[string, GgufValue]>, tensors: GgufTensorSpec[] = [], alignment?: number) => () =>
      encodeGgufHeader(meta, tensors, { alignment });
    expect(lobesError(header([['x', { type: 'uint8', value: 256 }]])).message).toMatch(
      /metadata "x": value 256 is not a valid uint8/,
    );
    expect(lobesError(header([['x', { type: 'int32', value: 1.5 }]])).message).toMatch(
      /value 1.5 is not a valid int32/,
    );
    expect(lobesError(header([['x', { type: 'uint64', value: -1n }]])).message).toMatch(
      /value -1 is not a valid uint64/,
    );
    expect(
      lobesError(header([['x', { type: 'array', value: { itemType: 'int32', items: new Float32Array(2) as any } }]]))
        .message,
    ).toMatch(/array of int32 must be a Int32Array or a plain array/);
    expect(lobesError(header([['x', { type: 'array', value: { itemType: 'int8', items: [1, 200] as any } }]])).message)
      .toMatch(/value 200 is not a valid int8/);
    expect(lobesError(header([['x', { type: 'float16' as any, value: 1 }]])).message).toMatch(
      /metadata "x": unknown value type "float16"/,
    );
    expect(lobesError(header([['x', { type: 'bool', value: true }], ['x', { type: 'bool', value: false }]])).message)
      .toMatch(/duplicate metadata key "x"/);
    expect(lobesError(header([], [{ name: 'a', dims: [32], type: 0 }, { name: 'a', dims: [32], type: 0 }])).message)
      .toMatch(/tensor "a": duplicate tensor name/);
    expect(lobesError(header([], [{ name: 'a', dims: [48], type: 2 }])).message).toMatch(
      /tensor "a": row length 48 is not a multiple of the Q4_0 block size 32/,
    );
    expect(lobesError(header([], [{ name: 'a', dims: [32], type: 4 }])).message).toMatch(
      /tensor "a": GGML Q4_2 cannot be written/,
    );
    expect(lobesError(header([], [{ name: 'a', dims: [1, 1, 1, 1, 1], type: 0 }])).message).toMatch(/invalid dims/);
    expect(lobesError(header([], [], 48)).message).toMatch(/alignment 48 is not a power of two/);
    expect(lobesError(header([['general.alignment', { type: 'uint32', value: 64 }]], [], 128)).message).toMatch(
      /disagrees with the alignment 128/,
    );
    expect(readdirSync(dir)).toEqual([]);
  });
});
