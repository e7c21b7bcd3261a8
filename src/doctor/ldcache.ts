/**
 * The dynamic loader's cache, /etc/ld.so.cache (written by ldconfig): library names
 * (sonames) and the paths ld.so finds them at, as `ldconfig -p` lists them.
 *
 * Format (glibc's "new" format, the only one glibc ≥ 2.32 writes, optionally preceded by the
 * old "ld.so-1.7.0" table): the magic "glibc-ld.so.cache1.1", u32 nlibs, u32 string-table
 * length, u8 flags, 3 bytes of padding, u32 extension offset, 3 unused u32 (48 bytes), then
 * nlibs entries of {i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap} (24 bytes) whose
 * key (the soname) and value (the path) are offsets of NUL-terminated strings counted from
 * the start of the new-format header. The flags' high byte names the architecture.
 */
import { existsSync, readFileSync } from 'node:fs';
import { LobesError } from '../util/errors.js';

export const LD_SO_CACHE = '/etc/ld.so.cache';

const NEW_MAGIC = 'glibc-ld.so.cache1.1';
const OLD_MAGIC = 'ld.so-1.7.0';

/** ld.so.cache architecture flags (glibc's FLAG_*_LIB*; FLAG_ELF_LIBC6 is 0x0003). */
const ARCH_FLAGS: Record<string, number> = { x64: 0x0300, arm64: 0x0a00, ia32: 0x0000 };

export interface LdCacheEntry {
  soname: string;
  path: string;
  flags: number;
}

/** Parse the bytes of an ld.so.cache file. */
export function parseLdCache(bytes: Uint8Array, file = LD_SO_CACHE): LdCacheEntry[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let base = 0;
  if (buf.toString('latin1', 0, OLD_MAGIC.length) === OLD_MAGIC) {
    if (buf.length < 16) throw new LobesError('truncated old-format header', { file });
    const nOld = buf.readUInt32LE(12);
    base = 16 + nOld * 12;
    base = (base + 7) & ~7; // the new table follows, aligned for its 8-byte fields
  }
  if (buf.toString('latin1', base, base + NEW_MAGIC.length) !== NEW_MAGIC) {
    throw new LobesError(`no "${NEW_MAGIC}" table at byte ${base}; not a glibc ld.so.cache this reader knows`, {
      file,
    });
  }
  if (base + 48 > buf.length) throw new LobesError('truncated header', { file });
  const n = buf.readUInt32LE(base + 20);
  if (base + 48 + n * 24 > buf.length)
    throw new LobesError(`${n} entries do not fit in the ${buf.length}-byte file`, { file });
  const str = (off: number) => {
    const at = base + off;
    if (at >= buf.length) throw new LobesError(`string offset ${off} past the end of the file`, { file });
    const end = buf.indexOf(0, at);
    return buf.toString('utf8', at, end < 0 ? buf.length : end);
  };
  const out: LdCacheEntry[] = [];
  for (let i = 0; i < n; i++) {
    const o = base + 48 + i * 24;
    out.push({ flags: buf.readInt32LE(o), soname: str(buf.readUInt32LE(o + 4)), path: str(buf.readUInt32LE(o + 8)) });
  }
  return out;
}

/**
 * Soname → paths for libraries of this architecture (in cache order, which is ld.so's
 * preference order). An absent or unreadable cache gives an empty map.
 */
export function readLdCache(file = LD_SO_CACHE, arch = process.arch): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!existsSync(file)) return out;
  let entries: LdCacheEntry[];
  try {
    entries = parseLdCache(readFileSync(file), file);
  } catch {
    return out;
  }
  const want = ARCH_FLAGS[arch];
  for (const e of entries) {
    if (want !== undefined && (e.flags & 0xff00) !== want) continue;
    const list = out.get(e.soname);
    if (list) list.push(e.path);
    else out.set(e.soname, [e.path]);
  }
  return out;
}
