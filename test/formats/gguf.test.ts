/**
 * The GGUF reader against the gguf Python package: goldens.gguf (written by gguf.GGUFWriter,
 * metadata of every value type) and the real SmolLM2-135M-Instruct Q4_1 file (what
 * gguf.GGUFReader reports, recorded by test/goldens/make_gguf_goldens.py). Then malformed
 * files: each gives one LobesError naming the file and the place.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { openGguf, readGgufHeader } from '../../src/formats/gguf.js';
import { LobesError } from '../../src/util/errors.js';
import { Rng } from '../../src/util/rng.js';
import { GOLDEN_GGUF, SMOL, REF, goldens, valueJson, sha256, lobesError, tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

const hasSmol = existsSync(SMOL);
if (!hasSmol) console.log(`skipping the SmolLM2 GGUF tests: ${SMOL} is absent`);

describe('GGUF reader on goldens.gguf (written by gguf.GGUFWriter)', () => {
  const g = goldens();

  it('reads the header, every metadata value with its type, and the data section start', () => {
    const f = readGgufHeader(GOLDEN_GGUF);
    expect(f.version).toBe(g.version);
    expect(f.alignment).toBe(32);
    expect(f.dataStart).toBe(g.dataStart);
    expect([...f.metadata.keys()]).toEqual(g.metadata.map((m) => m.key));
    for (const m of g.metadata) expect(valueJson(f.get(m.key)!), m.key).toEqual({ type: m.type, value: m.value });
  });

  it('gives numeric arrays as typed arrays and 64-bit integers exactly', () => {
    const f = readGgufHeader(GOLDEN_GGUF);
    const u64 = f.get('test.uint64')!;
    expect(u64.type === 'uint64' && u64.value).toBe(2n ** 63n + 12345n);
    expect(f.getArray('test.array.int32').items).toBeInstanceOf(Int32Array);
    expect(f.getArray('test.array.float32').items).toBeInstanceOf(Float32Array);
    expect(f.getArray('test.array.int64').items).toEqual(new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n]));
    expect(f.getStringArray('test.array.string')[2]).toBe('héllo, 世界 🙂 \\ "quoted" \t tab');
  });

  it('typed getters return values and throw one line naming the key when missing or of another type', () => {
    const f = readGgufHeader(GOLDEN_GGUF);
    expect(f.getString('general.architecture')).toBe('lobes-test');
    expect(f.getU32('test.uint32')).toBe(4000000000);
    expect(f.getInt('test.int8')).toBe(-100);
    expect(f.getInt('test.int32')).toBe(-2000000000);
    expect(f.getNumber('test.float32')).toBe(Math.fround(3.14159));
    expect(f.getBool('test.bool.true')).toBe(true);
    expect(f.getString('no.such.key', 'dflt')).toBe('dflt');
    expect(f.getU32('no.such.key', 7)).toBe(7);
    const e1 = lobesError(() => f.getString('no.such.key'));
    expect(e1.message).toContain('"no.such.key" is missing');
    expect(e1.message).toContain(GOLDEN_GGUF);
    const e2 = lobesError(() => f.getU32('test.int32'));
    expect(e2.message).toMatch(/"test.int32" is of type int32; a uint32 is needed/);
    expect(lobesError(() => f.getStringArray('test.array.int32')).message).toMatch(
      /"test.array.int32" is an array of int32/,
    );
    expect(lobesError(() => f.getInt('test.uint64')).message).toMatch(/beyond 2\^53/);
    expect(lobesError(() => f.getInt('test.int64')).message).toMatch(/= -4611686018427387911 is beyond 2\^53/);
  });

  it('reads tensor infos: names, GGML types, dims in GGUF order, absolute offsets and sizes as GGUFReader does', () => {
    const f = readGgufHeader(GOLDEN_GGUF);
    expect(f.tensors.map((t) => t.name)).toEqual(g.tensors.map((t) => t.name));
    for (const [i, t] of g.tensors.entries()) {
      const got = f.tensors[i];
      expect({ name: got.name, type: got.typeName, typeId: got.type, dims: got.dims, offset: got.offset,
        nbytes: got.nbytes }).toEqual({
          name: t.name,
          type: t.type,
          typeId: t.typeId,
          dims: t.dims,
          offset: t.offset,
          nbytes: t.nbytes,
        });
      expect(got.offset % 32).toBe(0);
      expect(got.rows * got.rowBytes).toBe(got.nbytes);
    }
  });

  it('reads tensor bytes by positional reads, whole or by row range', () => {
    const f = openGguf(GOLDEN_GGUF);
    try {
      for (const t of g.tensors) expect(sha256(f.readTensorBytes(t.name)), t.name).toBe(t.sha256);
      const whole = readFileSync(GOLDEN_GGUF);
      const t = f.tensor('q4_0.t3'); // numpy shape (2, 3, 64): 6 rows of 2 blocks
      expect(t.rows).toBe(6);
      const part = f.readTensorBytes(t, 2, 5);
      expect(Buffer.from(part).equals(whole.subarray(t.offset + 2 * 36, t.offset + 5 * 36))).toBe(true);
      expect(lobesError(() => f.readTensorBytes(t, 4, 7)).message).toMatch(/rows \[4, 7\) out of range for 6 rows/);
      expect(lobesError(() => f.tensor('nope')).message).toMatch(/tensor "nope" not found/);
    } finally {
      f.close();
    }
    expect(lobesError(() => f.readTensorBytes('f32.vec')).message).toMatch(/closed/);
  });

  it('accepts GGUF version 2 (same layout)', () => {
    const b = readFileSync(GOLDEN_GGUF);
    b.writeUInt32LE(2, 4);
    const file = path.join(tmpDir(), 'v2.gguf');
    writeFileSync(file, b);
    const f = readGgufHeader(file);
    expect(f.version).toBe(2);
    expect(f.tensors.length).toBe(g.tensors.length);
  });
});

describe.skipIf(!hasSmol)('GGUF reader on SmolLM2-135M-Instruct Q4_1 (against gguf.GGUFReader)', () => {
  const ref = hasSmol ? JSON.parse(readFileSync(path.join(REF, 'smollm2.json'), 'utf8')) : null;

  it('parses the metadata (49152 tokens, 48900 merges)', () => {
    const f = readGgufHeader(SMOL);
    expect(f.version).toBe(ref.version);
    expect(f.alignment).toBe(ref.alignment);
    expect(f.dataStart).toBe(ref.dataStart);
    expect([...f.metadata.keys()]).toEqual(ref.metadata.map((m: any) => m.key));
    for (const m of ref.metadata) {
      const v = f.get(m.key)!;
      if (m.type !== 'array') {
        expect(valueJson(v), m.key).toEqual({ type: m.type, value: m.value });
        continue;
      }
      const a = f.getArray(m.key);
      expect(a.itemType, m.key).toBe(m.itemType);
      expect(a.items.length, m.key).toBe(m.length);
      const items = Array.from(a.items as ArrayLike<unknown>);
      expect(items.slice(0, 3), m.key).toEqual(m.head);
      expect(items.slice(-3), m.key).toEqual(m.tail);
      const digest = a.itemType === 'string'
        ? sha256(a.items.join('\n'))
        : sha256(new Uint8Array((a.items as Int32Array).buffer));
      expect(digest, m.key).toBe(m.sha256);
    }
    expect(f.getU32('llama.embedding_length')).toBe(576);
    expect(f.getNumber('llama.rope.freq_base')).toBe(100000);
  });

  it('reads all 272 tensor infos as GGUFReader does (210 Q4_1, 61 F32, 1 Q8_0)', () => {
    const f = readGgufHeader(SMOL);
    expect(f.tensors.map((t) => ({ name: t.name, type: t.typeName, dims: t.dims, offset: t.offset, nbytes: t.nbytes })))
      .toEqual(ref.tensors);
    const count = (ty: string) => f.tensors.filter((t) => t.typeName === ty).length;
    expect([f.tensors.length, count('Q4_1'), count('F32'), count('Q8_0')]).toEqual([272, 210, 61, 1]);
  });

  it('dequantizes Q8_0, Q4_1 and F32 tensors to the float32 values of gguf.quants.dequantize (sha256)', () => {
    const f = openGguf(SMOL);
    try {
      for (const [name, want] of Object.entries<any>(ref.dequantized)) {
        const w = f.dequantize(name);
        expect(w.length, name).toBe(want.count);
        expect(Array.from(w.subarray(0, 4)), name).toEqual(want.first);
        expect(sha256(new Uint8Array(w.buffer, w.byteOffset, w.byteLength)), name).toBe(want.sha256);
      }
      // Row ranges give the same values as the whole tensor.
      const t = f.tensor('token_embd.weight');
      const all = f.dequantize(t, 1000, 1010);
      const rows = new Float32Array(10 * 576);
      for (let r = 0; r < 10; r++) rows.set(f.dequantize(t, 1000 + r, 1001 + r), r * 576);
      expect(Buffer.from(rows.buffer).equals(Buffer.from(all.buffer))).toBe(true);
    } finally {
      f.close();
    }
  });
});

describe('malformed GGUF files: one-line LobesErrors naming file and place', () => {
  const base = readFileSync(GOLDEN_GGUF);
  const dir = tmpDir();
  let n = 0;
  const write = (b: Uint8Array): string => {
    const file = path.join(dir, `bad-${n++}.gguf`);
    writeFileSync(file, b);
    return file;
  };
  const open = (b: Uint8Array): LobesError => {
    const file = write(b);
    const e = lobesError(() => openGguf(file));
    expect(e.message.startsWith(file)).toBe(true);
    return e;
  };
  /** Byte position right after the first occurrence of a length-prefixed string. */
  const after = (s: string): number => {
    const i = base.indexOf(Buffer.from(s, 'utf8'));
    expect(i).toBeGreaterThan(8);
    expect(Number(base.readBigUInt64LE(i - 8))).toBe(Buffer.byteLength(s));
    return i + Buffer.byteLength(s);
  };

  it('truncated file', () => {
    expect(open(base.subarray(0, 3)).message).toMatch(/shorter than the magic/);
    expect(open(base.subarray(0, 12)).message).toMatch(/header: .*truncated GGUF/);
    expect(open(base.subarray(0, 100)).message).toMatch(
      /header: header declares 30 metadata entries, more than the file can hold: truncated or corrupt GGUF/,
    );
    expect(open(base.subarray(0, after('test.array.nested.deep') + 30)).message).toMatch(
      /metadata "test.array.nested.deep"\[0\]: array of 2 arrays needs at least 24 bytes but \d+ are left: truncated or corrupt/,
    );
    expect(open(base.subarray(0, after('test.float64') + 6)).message).toMatch(
      /metadata "test.float64": file ends after \d+ bytes, 8 more needed here: truncated GGUF/,
    );
    expect(open(base.subarray(0, after('q8_0.mat'))).message).toMatch(/tensor "q8_0.mat".*truncated GGUF/);
    const g = goldens();
    const last = g.tensors[g.tensors.length - 1];
    expect(open(base.subarray(0, last.offset + 10)).message).toMatch(
      /tensor "iq2_xxs.unsupported": data \[\d+, \d+\) runs past the end of the file/,
    );
  });

  it('every truncation of the header fails cleanly (never a RangeError or a huge allocation)', () => {
    const end = goldens().dataStart;
    for (let len = 0; len < end; len += 5) {
      const file = path.join(dir, 'cut.gguf');
      writeFileSync(file, base.subarray(0, len));
      lobesError(() => openGguf(file));
    }
  });

  it('random corruption of the header either parses or fails with a LobesError', () => {
    const rng = new Rng(7);
    const end = goldens().dataStart;
    const file = path.join(dir, 'fuzz.gguf');
    let failed = 0;
    for (let k = 0; k < 400; k++) {
      const b = Buffer.from(base);
      for (let j = 0; j < 3; j++) b[8 + rng.int(end - 8)] = rng.int(256);
      writeFileSync(file, b);
      try {
        openGguf(file).close();
      } catch (e) {
        expect(e).toBeInstanceOf(LobesError);
        expect((e as Error).message).not.toMatch(/[\r\n]/);
        failed++;
      }
    }
    expect(failed).toBeGreaterThan(0);
  });

  it('wrong magic and unsupported versions', () => {
    const b = Buffer.from(base);
    b.write('GGUX', 0, 'latin1');
    expect(open(b).message).toMatch(/header: not a GGUF file: magic "GGUX" \(0x47475558\) instead of "GGUF"/);
    const v1 = Buffer.from(base);
    v1.writeUInt32LE(1, 4);
    expect(open(v1).message).toMatch(/GGUF version 1 is not supported/);
    const be = Buffer.from(base);
    be.writeUInt32BE(3, 4);
    expect(open(be).message).toMatch(/big-endian GGUF/);
  });

  it('a metadata string length beyond the file', () => {
    const b = Buffer.from(base);
    const at = after('test.string'); // then u32 type 8, u64 length
    expect(b.readUInt32LE(at)).toBe(8);
    b.writeBigUInt64LE(1n << 40n, at + 4);
    expect(open(b).message).toMatch(
      /metadata "test.string": string of 1099511627776 bytes runs past the end of the file/,
    );
    const k = Buffer.from(base);
    k.writeBigUInt64LE(1n << 62n, after('test.uint8') - 'test.uint8'.length - 8);
    expect(open(k).message).toMatch(/metadata entry 1 key: value 4611686018427387904 is larger than any file/);
  });

  it('an array count beyond the file is refused before allocating', () => {
    const b = Buffer.from(base);
    const at = after('test.array.string'); // u32 9, u32 8, u64 count
    b.writeBigUInt64LE(1n << 50n, at + 8);
    expect(open(b).message).toMatch(/metadata "test.array.string": array of \d+ strings needs at least \d+ bytes/);
    const c = Buffer.from(base);
    c.writeBigUInt64LE(1n << 50n, after('test.array.float64') + 8);
    expect(open(c).message).toMatch(/metadata "test.array.float64": array of \d+ float64 needs \d+ bytes/);
  });

  it('unknown value types', () => {
    const b = Buffer.from(base);
    b.writeUInt32LE(13, after('test.float64'));
    expect(open(b).message).toMatch(/metadata "test.float64": unknown value type 13 \(GGUF defines 0..12\)/);
    const c = Buffer.from(base);
    c.writeUInt32LE(99, after('test.array.int16') + 4);
    expect(open(c).message).toMatch(/metadata "test.array.int16": unknown value type 99/);
    const d = Buffer.from(base);
    d.writeUInt8(2, after('test.bool.true') + 4);
    expect(open(d).message).toMatch(/bool byte is 2/);
  });

  it('a tensor whose offset runs past the file, or is not aligned', () => {
    const b = Buffer.from(base);
    const at = after('q4_1.mat'); // u32 n_dims = 2, 2 x u64 dims, u32 type, u64 offset
    expect(b.readUInt32LE(at)).toBe(2);
    b.writeBigUInt64LE(BigInt(base.length), at + 4 + 16 + 4);
    expect(open(b).message).toMatch(/tensor "q4_1.mat": data \[\d+, \d+\) runs past the end of the file \(\d+ bytes\)/);
    const c = Buffer.from(base);
    c.writeBigUInt64LE(c.readBigUInt64LE(at + 24) + 4n, at + 24);
    expect(open(c).message).toMatch(/tensor "q4_1.mat": data offset \d+ is not a multiple of the alignment 32/);
  });

  it('duplicate tensor names and metadata keys', () => {
    const b = Buffer.from(base);
    b.write('q4_1.mat', after('q5_0.mat') - 8, 'latin1');
    expect(open(b).message).toMatch(/tensor "q4_1.mat": duplicate tensor name/);
    const c = Buffer.from(base);
    c.write('test.uint8', after('test.int16') - 10, 'latin1');
    expect(open(c).message).toMatch(/metadata "test.uint8": duplicate metadata key/);
  });

  it('dims whose product overflows, too many dims, unknown and removed GGML types, bad row lengths', () => {
    const at = after('f32.mat'); // 2 dims [5, 3]
    const b = Buffer.from(base);
    b.writeBigUInt64LE(1n << 30n, at + 4);
    b.writeBigUInt64LE(1n << 30n, at + 12);
    expect(open(b).message).toMatch(
      /tensor "f32.mat": dims \[1073741824,1073741824\] multiply to more than 2\^53 values/,
    );
    const c = Buffer.from(base);
    c.writeUInt32LE(9, at);
    expect(open(c).message).toMatch(/tensor "f32.mat": 9 dimensions \(GGML allows at most 4\)/);
    const d = Buffer.from(base);
    d.writeUInt32LE(99, at + 20);
    expect(open(d).message).toMatch(/tensor "f32.mat": unknown GGML type id 99/);
    const e = Buffer.from(base);
    e.writeUInt32LE(4, at + 20);
    expect(open(e).message).toMatch(/tensor "f32.mat": GGML type Q4_2 \(id 4\) has been removed/);
    const q = Buffer.from(base);
    q.writeUInt32LE(2, at + 20); // Q4_0 with rows of 5 values
    expect(open(q).message).toMatch(/tensor "f32.mat": row length 5 is not a multiple of the Q4_0 block size 32/);
  });

  it('a bad general.alignment', () => {
    const b = Buffer.from(base);
    // Rename "test.array.uint32" to "general.alignment" (both 17 bytes): an array, refused.
    b.write('general.alignment', after('test.array.uint32') - 17, 'latin1');
    expect(open(b).message).toMatch(/metadata: general.alignment must be a power-of-two uint32, got an array/);
  });

  it('two tensors sharing data bytes are refused, naming both and their ranges', () => {
    // q5_0.mat's offset set to q4_1.mat's: the reader would give one tensor's bytes as the other's.
    const g = openGguf(GOLDEN_GGUF);
    g.close();
    const q4 = g.tensor('q4_1.mat');
    const q5 = g.tensor('q5_0.mat');
    const b = Buffer.from(base);
    const at = after('q5_0.mat'); // u32 n_dims = 2, 2 x u64 dims, u32 type, u64 offset
    b.writeBigUInt64LE(BigInt(q4.offset - g.dataStart), at + 4 + 16 + 4);
    const [first, second] = q4.nbytes <= q5.nbytes ? [q4, q5] : [q5, q4];
    const msg = open(b).message;
    expect(msg).toMatch(
      /: tensor infos: tensors "(q4_1|q5_0)\.mat" \[\d+, \d+\) and "(q4_1|q5_0)\.mat" \[\d+, \d+\) share bytes of the data section/,
    );
    expect(msg).toContain(`"${first.name}" [${q4.offset}, ${q4.offset + first.nbytes})`);
    expect(msg).toContain(`"${second.name}" [${q4.offset}, ${q4.offset + second.nbytes})`);
    expect(msg).not.toMatch(/\n/);
    // A tensor starting inside another's range (not at its start) is refused as well.
    const c = Buffer.from(base);
    c.writeBigUInt64LE(BigInt(q4.offset - g.dataStart + 32), at + 4 + 16 + 4);
    expect(open(c).message).toMatch(/share bytes of the data section/);
  });

  it('a FIFO or a folder named .gguf is refused without opening it (no hang)', () => {
    const fifo = path.join(dir, 'pipe.gguf');
    execFileSync('mkfifo', [fifo]);
    expect(lobesError(() => openGguf(fifo)).message).toBe(
      `${fifo}: GGUF file is a named pipe (FIFO), not a regular file (give the path of the .gguf file itself)`,
    );
    expect(lobesError(() => openGguf(dir)).message).toMatch(/GGUF file is a folder, not a regular file/);
    expect(lobesError(() => openGguf('/dev/null')).message).toMatch(
      /\/dev\/null: GGUF file is a device, not a regular file/,
    );
  });

  it('a file that is not there', () => {
    expect(lobesError(() => openGguf(path.join(dir, 'missing.gguf'))).message).toMatch(
      /missing.gguf: cannot open GGUF file \(ENOENT\)/,
    );
  });
});

describe('string arrays', () => {
  it('decode each string on its own when the bytes are not valid UTF-8 string by string', async () => {
    const { writeGguf } = await import('../../src/formats/gguf-write.js');
    const file = path.join(tmpDir(), 'utf8.gguf');
    writeGguf(file, [['s', { type: 'array', value: { itemType: 'string', items: ['ab', 'cd', 'ef', '世界', 'gh'] } }]],
      []);
    const b = readFileSync(file);
    // 'cd' + 'ef' become E4 B8 | 96 41: together the valid "世A", apart one truncated and one stray byte.
    const at = b.indexOf(Buffer.from('cd'));
    b.set([0xe4, 0xb8], at);
    b.set([0x96, 0x41], at + 10);
    writeFileSync(file, b);
    const dec = new TextDecoder();
    expect(readGgufHeader(file).getStringArray('s')).toEqual(['ab', dec.decode(new Uint8Array([0xe4, 0xb8])),
      dec.decode(new Uint8Array([0x96, 0x41])), '世界', 'gh']);
    expect(readGgufHeader(file).getStringArray('s')[1]).toBe('\ufffd');
  });
});
