/**
 * Helpers for the run-integrity tests: the lobes command line in process (exit code, stdout,
 * stderr), in a child process with a simulated full disk, and small input files written
 * here independently of src/ (.npy, safetensors, JSONL).
 */
import { vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { main } from '../../src/cli/main.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const TINY = path.join(ROOT, 'models/tiny-llama');
export const GENAI = path.resolve(ROOT, '../shared/models/ort-genai-tiny-llama-fp16');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `lobes ARGS` in this process through the CLI entry point, capturing its output. */
export async function lobes(args: string[]): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((s: any) => (out.push(String(s)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((s: any) => (err.push(String(s)), true));
  try {
    const code = await main(args);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

/**
 * Run `lobes ARGS` in a child process whose writes under `dir` fail with ENOSPC after
 * `bytes` bytes (test/integrity/enospc.mjs), as on a full disk.
 */
export function lobesOnFullDisk(args: string[], dir: string, bytes: number): CliResult {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--import', path.join(ROOT, 'test/integrity/enospc.mjs'),
    path.join(ROOT, 'src/cli/bin.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, LOBES_TEST_ENOSPC_DIR: dir, LOBES_TEST_ENOSPC_BYTES: String(bytes) },
    encoding: 'utf8',
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** sha256 of every file under `dir` (relative path → hash), hidden entries included. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const p = path.join(dir, r);
      if (statSync(p).isDirectory()) walk(r);
      else out[r] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk('');
  return out;
}

/** Names in a folder that start with '.' (temporary files or folders left behind). */
export function hidden(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.startsWith('.'));
}

/** A float32 .npy matrix [rows, cols] (format 1.0, little-endian, C order). */
export function writeNpy(file: string, rows: number, cols: number, data: Float32Array): void {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
  while ((10 + header.length + 1) % 64 !== 0) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  Buffer.from([0x93, ...Buffer.from('NUMPY'), 1, 0]).copy(pre);
  pre.writeUInt16LE(header.length, 8);
  writeFileSync(file,
    Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

/** A safetensors file of float32 tensors: 8-byte LE header length, JSON header, data. */
export function writeSt(file: string, tensors: Record<string, { shape: number[]; data: Float32Array }>): void {
  const header: Record<string, unknown> = {};
  const parts: Buffer[] = [];
  let off = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + t.data.byteLength] };
    parts.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    off += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  while (json.length % 8) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(file, Buffer.concat([len, Buffer.from(json), ...parts]));
}

/** One JSON object per line. */
export function writeJsonl(file: string, rows: object[]): void {
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

/** Seeded values in [-1, 1). */
export function values(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return a;
}
