/**
 * Test-side readers written independently of src/: a safetensors parser following the
 * published format (8-byte LE header length, JSON header, raw little-endian data), an fp16
 * decoder, and a byte-level comparison of two run folders.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

export interface ParsedTensor {
  dtype: string;
  shape: number[];
  values: Float64Array;
}

function decodeHalf(h: number): number {
  const sign = h >> 15 ? -1 : 1;
  const exp = (h >> 10) & 31;
  const frac = h & 1023;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function parseSafetensors(
  file: string,
): { metadata: Record<string, string>; tensors: Record<string, ParsedTensor>; headerBytes: number } {
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  if (8 + n > buf.length) throw new Error(`${file}: header length ${n} beyond file size ${buf.length}`);
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const base = 8 + n;
  const tensors: Record<string, ParsedTensor> = {};
  let metadata: Record<string, string> = {};
  let covered = 0;
  for (const [name, info] of Object.entries<any>(header)) {
    if (name === '__metadata__') {
      metadata = info;
      continue;
    }
    const [b, e] = info.data_offsets;
    const count = info.shape.reduce((a: number, x: number) => a * x, 1);
    const width = info.dtype === 'F16' ? 2 : info.dtype === 'F32' ? 4 : NaN;
    if (e - b !== count * width) throw new Error(`${file}: ${name} spans ${e - b} bytes, expected ${count * width}`);
    if (base + e > buf.length) throw new Error(`${file}: ${name} beyond end of file`);
    const values = new Float64Array(count);
    for (let i = 0; i < count; i++)
      values[i] = info.dtype === 'F16'
        ? decodeHalf(buf.readUInt16LE(base + b + 2 * i))
        : buf.readFloatLE(base + b + 4 * i);
    tensors[name] = { dtype: info.dtype, shape: info.shape, values };
    covered += e - b;
  }
  if (base + covered !== buf.length) throw new Error(`${file}: ${buf.length - base - covered} trailing bytes`);
  return { metadata, tensors, headerBytes: n };
}

/** Every file under a folder, relative paths, sorted. */
export function listFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(dir, rel)).sort()) {
    const r = rel ? `${rel}/${name}` : name;
    if (statSync(path.join(dir, r)).isDirectory()) out.push(...listFiles(dir, r));
    else out.push(r);
  }
  return out;
}

/** Paths (relative) under `sub` whose bytes differ between two folders, plus files only in one. */
export function diffTrees(a: string, b: string, sub: string): string[] {
  const fa = listFiles(path.join(a, sub));
  const fb = listFiles(path.join(b, sub));
  const diffs: string[] = [];
  const all = new Set([...fa, ...fb]);
  for (const f of all) {
    if (!fa.includes(f)) diffs.push(`only in ${b}: ${f}`);
    else if (!fb.includes(f)) diffs.push(`only in ${a}: ${f}`);
    else if (!readFileSync(path.join(a, sub, f)).equals(readFileSync(path.join(b, sub, f))))
      diffs.push(`differs: ${f}`);
  }
  return diffs;
}
