/**
 * The doctor's file readers against independent oracles: ELF dynamic sections against
 * binutils' `readelf -d` and against the fixture build script's linker flags; ld.so.cache
 * against `ldconfig -p`; zip members against Info-ZIP's `unzip -p`. Tests whose tool is
 * absent skip, saying why.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { readElfDynamic, isElf } from '../../src/doctor/elf.js';
import { parseLdCache, readLdCache } from '../../src/doctor/ldcache.js';
import { listZip, extractZipMember, readZipMember, crc32 } from '../../src/doctor/zip.js';
import { parseWheelName } from '../../src/doctor/cuda.js';

const ROOT = path.resolve(__dirname, '..', '..');
const FIX = path.join(__dirname, 'fixtures');
const WHEELS = path.join(FIX, 'wheels');
const ORT = path.join(ROOT, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux');
const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-doctor-elf-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const have = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const READELF = have('readelf');
const LDCONFIG = existsSync('/sbin/ldconfig') || have('ldconfig');
const UNZIP = have('unzip');
if (!READELF) console.log('doctor ELF tests against readelf skipped: readelf (binutils) is not installed');
if (!LDCONFIG) console.log('doctor ld.so.cache test against ldconfig skipped: ldconfig is not installed');
if (!UNZIP) console.log('doctor zip test against unzip skipped: unzip is not installed');

/** NEEDED, SONAME, RPATH and RUNPATH as readelf -d prints them. */
function readelf(file: string) {
  const out = spawnSync('readelf', ['-d', file], { encoding: 'utf8' }).stdout;
  const all = (tag: string) =>
    [...out.matchAll(new RegExp(`\\(${tag}\\)\\s+[^\\[]*\\[([^\\]]*)\\]`, 'g'))].map((m) => m[1]!);
  return { needed: all('NEEDED'), soname: all('SONAME')[0] ?? null, rpath: all('RPATH').flatMap((s) => s.split(':')),
    runpath: all('RUNPATH').flatMap((s) => s.split(':')) };
}

/** Every fixture library, extracted from the fixture wheels with the zip reader. */
async function extractFixtures(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const w of readdirSync(WHEELS)) {
    for (const m of listZip(path.join(WHEELS, w))) {
      if (!m.name.endsWith('.so') && !/\.so\.\d+$/.test(m.name)) continue;
      const dest = path.join(tmp, `${w}-${path.basename(m.name)}`);
      await extractZipMember(path.join(WHEELS, w), m, dest, 0o755);
      out.set(`${w}:${path.basename(m.name)}`, dest);
    }
  }
  return out;
}

describe('ELF dynamic sections', () => {
  it('match the fixture build script (sonames, DT_NEEDED order, RPATH vs RUNPATH)', async () => {
    const libs = await extractFixtures();
    const get = (suffix: string) =>
      [...libs].find(([k]) => k.endsWith(suffix) && !k.startsWith('onnxruntime_gpu-1.29'))![1];
    const prov = readElfDynamic(get(':libonnxruntime_providers_cuda.so'));
    // make-fixtures.py: build(prov, ..., [lt, cublas, curand, cudart, cuda], libc=True)
    expect(prov.soname).toBe('libonnxruntime_providers_cuda.so');
    expect(prov.needed).toEqual(['libcublasLt.so.13', 'libcublas.so.13', 'libcurand.so.10', 'libcudart.so.13',
      'libcuda.so.1', 'libc.so.6']);
    expect(prov.bits).toBe(64);
    const curand = readElfDynamic(get(':libcurand.so.10'));
    expect(curand.rpath).toEqual(['$ORIGIN/../rp', '/opt/none']);
    expect(curand.runpath).toEqual([]);
    const graph = readElfDynamic(get(':libcudnn_graph.so.9'));
    expect(graph.runpath).toEqual(['$ORIGIN']);
    expect(graph.needed).toEqual(['libcudnn.so.9']);
    const driver = readElfDynamic(path.join(FIX, 'driver', 'libcuda.so.1'));
    expect(driver).toMatchObject({ soname: 'libcuda.so.1', needed: [] });
  });

  it.skipIf(!READELF)('match readelf -d on onnxruntime-node and the fixtures (x86-64 and AArch64)', async () => {
    const files = [path.join(ORT, 'x64', 'onnxruntime_binding.node'), path.join(ORT, 'x64', 'libonnxruntime.so.1'),
      path.join(ORT, 'arm64', 'libonnxruntime.so.1'), ...(await extractFixtures()).values()];
    for (const f of files.filter(existsSync)) {
      const mine = readElfDynamic(f);
      expect({ needed: mine.needed, soname: mine.soname, rpath: mine.rpath, runpath: mine.runpath }, f).toEqual(
        readelf(f),
      );
    }
    if (existsSync(path.join(ORT, 'arm64', 'libonnxruntime.so.1')))
      expect(readElfDynamic(path.join(ORT, 'arm64', 'libonnxruntime.so.1')).machine).toBe(183);
  });

  it('refuses what is not an ELF library with a one-line error naming the file', () => {
    const f = path.join(FIX, 'make-fixtures.py');
    expect(isElf(f)).toBe(false);
    expect(() => readElfDynamic(f)).toThrow(
      new RegExp(`${f.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: not a usable ELF shared library: no ELF magic`),
    );
  });
});

describe('ld.so.cache', () => {
  it.skipIf(!LDCONFIG || !existsSync('/etc/ld.so.cache'))('lists what ldconfig -p lists for this architecture', () => {
    const out =
      spawnSync(existsSync('/sbin/ldconfig') ? '/sbin/ldconfig' : 'ldconfig', ['-p'], { encoding: 'utf8' }).stdout;
    const arch = process.arch === 'x64' ? 'x86-64' : process.arch === 'arm64' ? 'AArch64' : null;
    const expected = new Map<string, string[]>();
    for (const m of out.matchAll(/^\s+(\S+) \(([^)]*)\)(?: OS ABI: [^=]*)? => (\S+)$/gm)) {
      const flags = m[2]!;
      if (arch && process.arch === 'x64' && !flags.includes('x86-64')) continue;
      if (arch && process.arch === 'arm64' && !flags.includes('AArch64')) continue;
      const l = expected.get(m[1]!) ?? [];
      l.push(m[3]!);
      expected.set(m[1]!, l);
    }
    const mine = readLdCache();
    expect(mine.size).toBeGreaterThan(10);
    expect(Object.fromEntries(mine)).toEqual(Object.fromEntries(expected));
  });

  it('reads a cache with an old-format table in front (hand-built per glibc dl-cache.h)', () => {
    // old: "ld.so-1.7.0" + pad to 12, u32 nlibs=1, one 12-byte entry; new table at the next multiple of 8.
    const strings = ['libfoo.so.1\0', '/x/libfoo.so.1\0'];
    const oldLen = 16 + 12; // 28 -> new table at 32
    const newAt = 32;
    const strStart = 48 + 24; // relative to the new table
    const buf = Buffer.alloc(newAt + strStart + strings.join('').length);
    buf.write('ld.so-1.7.0', 0, 'latin1');
    buf.writeUInt32LE(1, 12);
    expect(oldLen).toBeLessThanOrEqual(newAt);
    buf.write('glibc-ld.so.cache1.1', newAt, 'latin1');
    buf.writeUInt32LE(1, newAt + 20);
    buf.writeInt32LE(0x0303, newAt + 48); // libc6, x86-64
    buf.writeUInt32LE(strStart, newAt + 52);
    buf.writeUInt32LE(strStart + strings[0]!.length, newAt + 56);
    buf.write(strings.join(''), newAt + strStart, 'utf8');
    expect(parseLdCache(buf)).toEqual([{ flags: 0x0303, soname: 'libfoo.so.1', path: '/x/libfoo.so.1' }]);
    expect(() => parseLdCache(Buffer.from('garbage, not a cache'), 'c')).toThrow(/c: no "glibc-ld.so.cache1.1" table/);
  });
});

describe('wheels (zip)', () => {
  it.skipIf(!UNZIP)('extracts members byte for byte as unzip does, and reads METADATA', async () => {
    const w = path.join(WHEELS, readdirSync(WHEELS).find((f) => f.startsWith('nvidia_cublas-'))!);
    const members = listZip(w);
    expect(members.map((m) => m.name).sort()).toEqual(
      spawnSync('unzip', ['-Z1', w], { encoding: 'utf8' }).stdout.trim().split('\n').sort(),
    );
    for (const m of members) {
      const dest = path.join(tmp, 'm-' + path.basename(m.name));
      await extractZipMember(w, m, dest);
      const ref = spawnSync('unzip', ['-p', w, m.name]).stdout as Buffer;
      expect(readFileSync(dest).equals(ref), m.name).toBe(true);
    }
    const meta = members.find((m) => m.name.endsWith('METADATA'))!;
    expect((await readZipMember(w, meta)).toString()).toContain('Version: 13.1.0.3');
  });

  it('detects a damaged member by its CRC-32 and leaves no file', async () => {
    const w = path.join(WHEELS, readdirSync(WHEELS).find((f) => f.startsWith('nvidia_curand-'))!);
    const m = listZip(w).find((x) => x.name.endsWith('.so.10'))!;
    const dest = path.join(tmp, 'bad.so');
    await expect(extractZipMember(w, { ...m, crc32: (m.crc32 ^ 1) >>> 0 }, dest)).rejects.toThrow(/CRC-32 mismatch/);
    expect(existsSync(dest)).toBe(false);
    // crc32 of "123456789" is 0xcbf43926 (the standard check value)
    expect(crc32(Buffer.from('123456789')) >>> 0).toBe(0xcbf43926);
  });

  it('parses wheel file names (PEP 427)', () => {
    expect(parseWheelName('onnxruntime_gpu-1.30.0-cp311-cp311-manylinux_2_28_x86_64.whl')).toEqual({
      name: 'onnxruntime-gpu',
      version: '1.30.0',
    });
    expect(parseWheelName('nvidia_cudnn_cu13-9.13.0.50-py3-none-manylinux_2_27_x86_64.whl')).toEqual({
      name: 'nvidia-cudnn-cu13',
      version: '9.13.0.50',
    });
    expect(parseWheelName('pkg-1.0-1-py3-none-any.whl')).toEqual({ name: 'pkg', version: '1.0' });
    expect(parseWheelName('notawheel.zip')).toBeNull();
  });
});
