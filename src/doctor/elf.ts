/**
 * The dynamic section of an ELF shared library: which libraries it needs (DT_NEEDED), its own
 * name (DT_SONAME) and where it asks the loader to look (DT_RPATH, DT_RUNPATH), read the way
 * `readelf -d` shows them. Only the ELF header, the program headers, the dynamic array and
 * the string table are read, so a 300 MB library costs a few kilobytes of I/O.
 *
 * Layout (System V gABI): the program header of type PT_DYNAMIC locates an array of
 * (tag, value) pairs; DT_STRTAB gives the virtual address of the string table, mapped to a
 * file offset through the PT_LOAD segment that contains it; string-valued tags are offsets
 * into that table.
 */
import { LobesError } from '../util/errors.js';
import { RangeFile } from '../util/io.js';

export interface ElfDynamic {
  file: string;
  /** 32 or 64. */
  bits: 32 | 64;
  /** e_machine: 62 x86-64, 183 AArch64, 3 i386, 40 ARM. */
  machine: number;
  soname: string | null;
  needed: string[];
  /** DT_RPATH entries (colon-separated in the file), unexpanded. */
  rpath: string[];
  /** DT_RUNPATH entries, unexpanded. */
  runpath: string[];
}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const DT_NEEDED = 1;
const DT_STRTAB = 5;
const DT_STRSZ = 10;
const DT_SONAME = 14;
const DT_RPATH = 15;
const DT_RUNPATH = 29;

/** e_machine of the running process's architecture (null when lobes does not know it). */
export function hostMachine(arch = process.arch): number | null {
  return ({ x64: 62, arm64: 183, ia32: 3, arm: 40 } as Record<string, number>)[arch] ?? null;
}

/** Is this file an ELF object? (reads 4 bytes; false for anything unreadable) */
export function isElf(file: string): boolean {
  let f: RangeFile | null = null;
  try {
    f = RangeFile.open(file, 'file');
    if (f.size < 52) return false;
    const m = f.read(0, 4);
    return m[0] === 0x7f && m[1] === 0x45 && m[2] === 0x4c && m[3] === 0x46;
  } catch {
    return false;
  } finally {
    f?.close();
  }
}

/** Read the dynamic section of an ELF shared library or executable. */
export function readElfDynamic(file: string): ElfDynamic {
  const f = RangeFile.open(file, 'shared library');
  try {
    const size = f.size;
    const bad = (why: string) => new LobesError(`not a usable ELF shared library: ${why}`, { file });
    if (size < 52) throw bad(`${size} bytes, shorter than an ELF header`);
    const id = f.read(0, 64 <= size ? 64 : 52);
    if (id[0] !== 0x7f || id[1] !== 0x45 || id[2] !== 0x4c || id[3] !== 0x46) throw bad('no ELF magic at byte 0');
    const bits = id[4] === 2 ? 64 : id[4] === 1 ? 32 : null;
    if (bits === null) throw bad(`unknown ELF class ${id[4]}`);
    if (id[5] !== 1 && id[5] !== 2) throw bad(`unknown ELF data encoding ${id[5]}`);
    const le = id[5] === 1;
    const h = new DataView(id.buffer, id.byteOffset, id.byteLength);
    const machine = h.getUint16(18, le);
    const word = (dv: DataView,
      off: number) => (bits === 64 ? Number(dv.getBigUint64(off, le)) : dv.getUint32(off, le));
    const phoff = bits === 64 ? word(h, 0x20) : h.getUint32(0x1c, le);
    const phentsize = h.getUint16(bits === 64 ? 0x36 : 0x2a, le);
    const phnum = h.getUint16(bits === 64 ? 0x38 : 0x2c, le);
    if (phnum === 0) throw bad('no program headers');
    if (phentsize < (bits === 64 ? 56 : 32) || phoff + phentsize * phnum > size)
      throw bad(`program headers [${phoff}, +${phentsize}×${phnum}) run past the ${size}-byte file`);
    const ph = f.read(phoff, phentsize * phnum);
    const pv = new DataView(ph.buffer);
    const loads: { vaddr: number; offset: number; filesz: number }[] = [];
    let dyn: { offset: number; filesz: number } | null = null;
    for (let i = 0; i < phnum; i++) {
      const o = i * phentsize;
      const type = pv.getUint32(o, le);
      // ELF64: type, flags, offset, vaddr, paddr, filesz; ELF32: type, offset, vaddr, paddr, filesz
      const offset = bits === 64 ? word(pv, o + 8) : pv.getUint32(o + 4, le);
      const vaddr = bits === 64 ? word(pv, o + 16) : pv.getUint32(o + 8, le);
      const filesz = bits === 64 ? word(pv, o + 32) : pv.getUint32(o + 16, le);
      if (type === PT_LOAD) loads.push({ vaddr, offset, filesz });
      else if (type === PT_DYNAMIC) dyn = { offset, filesz };
    }
    const out: ElfDynamic = { file, bits, machine, soname: null, needed: [], rpath: [], runpath: [] };
    if (!dyn) return out; // statically linked: needs nothing
    if (dyn.offset + dyn.filesz > size)
      throw bad(`dynamic section [${dyn.offset}, +${dyn.filesz}) runs past the ${size}-byte file`);
    const dv = new DataView(f.read(dyn.offset, dyn.filesz).buffer);
    const ent = bits === 64 ? 16 : 8;
    const entries: [number, number][] = [];
    let strtab = -1;
    let strsz = 0;
    for (let o = 0; o + ent <= dyn.filesz; o += ent) {
      const tag = bits === 64 ? Number(dv.getBigInt64(o, le)) : dv.getInt32(o, le);
      const val = bits === 64 ? word(dv, o + 8) : dv.getUint32(o + 4, le);
      if (tag === 0) break;
      if (tag === DT_STRTAB) strtab = val;
      else if (tag === DT_STRSZ) strsz = val;
      else if (tag === DT_NEEDED || tag === DT_SONAME || tag === DT_RPATH || tag === DT_RUNPATH)
        entries.push([tag, val]);
    }
    if (entries.length === 0) return out;
    if (strtab < 0 || strsz <= 0) throw bad('dynamic section without a string table');
    const seg = loads.find((l) => strtab >= l.vaddr && strtab < l.vaddr + l.filesz);
    if (!seg) throw bad(`string table address 0x${strtab.toString(16)} is in no loaded segment`);
    const stroff = seg.offset + (strtab - seg.vaddr);
    const len = Math.min(strsz, size - stroff);
    const strs = Buffer.from(f.read(stroff, len).buffer);
    const str = (off: number) => {
      if (off >= len) throw bad(`string offset ${off} past the ${len}-byte string table`);
      const end = strs.indexOf(0, off);
      return strs.toString('utf8', off, end < 0 ? len : end);
    };
    for (const [tag, val] of entries) {
      const s = str(val);
      if (tag === DT_NEEDED) out.needed.push(s);
      else if (tag === DT_SONAME) out.soname = s;
      else if (tag === DT_RPATH) out.rpath.push(...s.split(':').filter(Boolean));
      else out.runpath.push(...s.split(':').filter(Boolean));
    }
    return out;
  } finally {
    f.close();
  }
}
