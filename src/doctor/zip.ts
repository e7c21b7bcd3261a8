/**
 * Reading members out of a zip archive (a Python wheel is one), without loading the archive:
 * the central directory lists the members; one member is streamed through inflate into a
 * file and checked against its CRC-32 and size.
 *
 * Format (PKWARE APPNOTE): the end-of-central-directory record (signature 0x06054b50, at most
 * 65,535 comment bytes before the end) gives the directory's offset and size, or 0xffffffff
 * with a ZIP64 locator (0x07064b50) pointing at the ZIP64 record (0x06064b50) that holds them
 * as 64-bit values. Each directory entry (0x02014b50) names a member, its method (0 stored,
 * 8 deflate), CRC-32, sizes and the offset of its local header (0x04034b50), after which,
 * past the local name and extra field, the data begins.
 */
import { createReadStream, createWriteStream, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { LobesError } from '../util/errors.js';
import { RangeFile } from '../util/io.js';

export interface ZipMember {
  name: string;
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

/** The members of a zip archive, from its central directory. */
export function listZip(file: string): ZipMember[] {
  const f = RangeFile.open(file, 'zip archive');
  try {
    const size = f.size;
    const bad = (why: string) =>
      new LobesError(`not a readable zip archive: ${why}`, { file, hint: 'download the wheel again' });
    const tail = Math.min(size, 65557);
    const end = f.read(size - tail, tail);
    const ev = new DataView(end.buffer);
    let eocd = -1;
    for (let i = tail - 22; i >= 0; i--) {
      if (ev.getUint32(i, true) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw bad('no end-of-central-directory record');
    let count = ev.getUint16(eocd + 10, true);
    let cdSize = ev.getUint32(eocd + 12, true);
    let cdOffset = ev.getUint32(eocd + 16, true);
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      const loc = eocd - 20;
      if (loc < 0 || ev.getUint32(loc, true) !== 0x07064b50) throw bad('ZIP64 sizes without a ZIP64 locator');
      const recOff = Number(ev.getBigUint64(loc + 8, true));
      const rec = new DataView(f.read(recOff, 56).buffer);
      if (rec.getUint32(0, true) !== 0x06064b50) throw bad(`no ZIP64 end record at byte ${recOff}`);
      count = Number(rec.getBigUint64(32, true));
      cdSize = Number(rec.getBigUint64(40, true));
      cdOffset = Number(rec.getBigUint64(48, true));
    }
    if (cdOffset + cdSize > size)
      throw bad(`central directory [${cdOffset}, +${cdSize}) runs past the ${size}-byte file`);
    const cd = f.read(cdOffset, cdSize);
    const dv = new DataView(cd.buffer);
    const buf = Buffer.from(cd.buffer);
    const out: ZipMember[] = [];
    let o = 0;
    for (let i = 0; i < count; i++) {
      if (o + 46 > cdSize || dv.getUint32(o, true) !== 0x02014b50) throw bad(`central directory entry ${i} is damaged`);
      const method = dv.getUint16(o + 10, true);
      const crc32 = dv.getUint32(o + 16, true);
      let compressedSize = dv.getUint32(o + 20, true);
      let usize = dv.getUint32(o + 24, true);
      const nameLen = dv.getUint16(o + 28, true);
      const extraLen = dv.getUint16(o + 30, true);
      const commentLen = dv.getUint16(o + 32, true);
      let localHeaderOffset = dv.getUint32(o + 42, true);
      const name = buf.toString('utf8', o + 46, o + 46 + nameLen);
      // ZIP64 extra field: the 64-bit values of whichever fields are 0xffffffff, in this order.
      let e = o + 46 + nameLen;
      const eEnd = e + extraLen;
      while (e + 4 <= eEnd) {
        const id = dv.getUint16(e, true);
        const len = dv.getUint16(e + 2, true);
        if (id === 0x0001) {
          let p = e + 4;
          if (usize === 0xffffffff) {
            usize = Number(dv.getBigUint64(p, true));
            p += 8;
          }
          if (compressedSize === 0xffffffff) {
            compressedSize = Number(dv.getBigUint64(p, true));
            p += 8;
          }
          if (localHeaderOffset === 0xffffffff) localHeaderOffset = Number(dv.getBigUint64(p, true));
        }
        e += 4 + len;
      }
      out.push({ name, method, crc32, compressedSize, size: usize, localHeaderOffset });
      o += 46 + nameLen + extraLen + commentLen;
    }
    return out;
  } finally {
    f.close();
  }
}

/** The bytes of a small member (METADATA, a few kilobytes) in memory. */
export async function readZipMember(file: string, m: ZipMember): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await streamMember(file, m, async (src) => {
    for await (const c of src) chunks.push(c as Buffer);
  });
  return Buffer.concat(chunks);
}

/**
 * Extract one member to `dest` (created atomically: a temporary sibling renamed into place),
 * checking its size and CRC-32. `mode` sets the file's permissions (0o755 for libraries).
 */
export async function extractZipMember(file: string, m: ZipMember, dest: string, mode = 0o644): Promise<void> {
  const tmp = path.join(path.dirname(dest),
    `.${path.basename(dest)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
  try {
    await streamMember(file, m, (src) => pipeline(src, createWriteStream(tmp, { mode })));
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

async function streamMember(file: string, m: ZipMember,
  sink: (src: NodeJS.ReadableStream) => Promise<void>): Promise<void>
{
  const where = m.name;
  if (m.method !== 0 && m.method !== 8)
    throw new LobesError(`compression method ${m.method} is not supported (stored or deflate)`, { file, where });
  const f = RangeFile.open(file, 'zip archive');
  let dataStart: number;
  try {
    const lh = new DataView(f.read(m.localHeaderOffset, 30).buffer);
    if (lh.getUint32(0, true) !== 0x04034b50)
      throw new LobesError(`no local header at byte ${m.localHeaderOffset}`, { file, where });
    dataStart = m.localHeaderOffset + 30 + lh.getUint16(26, true) + lh.getUint16(28, true);
    if (dataStart + m.compressedSize > f.size)
      throw new LobesError('member data runs past the end of the archive', { file, where });
  } finally {
    f.close();
  }
  let crc = 0;
  let n = 0;
  const check = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      crc = crc32(chunk, crc);
      n += chunk.length;
      cb(null, chunk);
    },
    flush(cb) {
      if (n !== m.size)
        cb(new LobesError(`member is ${n} bytes after decompression, the directory says ${m.size}`, { file, where }));
      else if (crc >>> 0 !== m.crc32 >>> 0)
        cb(
          new LobesError(
            `CRC-32 mismatch (0x${(crc >>> 0).toString(16)} vs 0x${m.crc32.toString(16)}): damaged archive`,
            { file, where },
          ),
        );
      else cb();
    },
  });
  const raw = m.compressedSize === 0
    ? Readable.from([])
    : createReadStream(file, { start: dataStart, end: dataStart + m.compressedSize - 1 });
  const decoded = m.method === 8 ? raw.pipe(zlib.createInflateRaw()) : raw;
  raw.on('error', (e: Error) => check.destroy(e));
  decoded.on('error',
    (e: Error) => check.destroy(new LobesError(`cannot inflate member (${e.message})`, { file, where })));
  await sink(decoded.pipe(check));
}

let table: Int32Array | null = null;

/** CRC-32 (IEEE 802.3, as zip uses), continuing from `prev`. */
export function crc32(data: Uint8Array, prev = 0): number {
  const z = zlib as unknown as { crc32?: (d: Uint8Array, v?: number) => number };
  if (typeof z.crc32 === 'function') return z.crc32(data, prev);
  if (!table) {
    table = new Int32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[i] = c;
    }
  }
  let c = ~prev;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
