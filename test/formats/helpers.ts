/** Shared fixtures for the GGUF / GGML tests: the goldens made by the gguf package, temp files, JSON forms. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { LobesError } from '../../src/util/errors.js';
import type { GgufArray, GgufValue } from '../../src/formats/gguf.js';

export const REF = path.resolve(import.meta.dirname, '../../test/goldens/gguf');
export const GOLDEN_GGUF = path.join(REF, 'goldens.gguf');
export const SMOL = path.resolve(import.meta.dirname,
  '../../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');

export interface GoldenTensor {
  name: string;
  type: string;
  typeId: number;
  dims: number[];
  offset: number;
  nbytes: number;
  sha256: string;
  golden?: [number, number];
}

export interface Goldens {
  version: number;
  alignment: number;
  dataStart: number;
  metadata: Array<{ key: string; type: string; value: unknown }>;
  tensors: GoldenTensor[];
  quantSizes: Record<string, [number, number, number]>;
}

export function goldens(): Goldens {
  return JSON.parse(readFileSync(path.join(REF, 'goldens.json'), 'utf8'));
}

/** The float32 dequantization the gguf package produced for a golden tensor. */
export function goldenValues(t: GoldenTensor): Float32Array {
  const bin = readFileSync(path.join(REF, 'goldens.bin'));
  const [start, count] = t.golden!;
  return new Float32Array(bin.buffer.slice(bin.byteOffset + start * 4, bin.byteOffset + (start + count) * 4));
}

const created: string[] = [];

export function tmpDir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'lobes-gguf-'));
  created.push(d);
  return d;
}

export function cleanupTmp(): void {
  for (const d of created.splice(0)) rmSync(d, { recursive: true, force: true });
}

export function sha256(b: Uint8Array | string): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Run fn and return the LobesError it throws, checking that its message is one line. */
export function lobesError(fn: () => unknown): LobesError {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof LobesError)) throw e;
    expect(e.message).not.toMatch(/[\r\n]/);
    return e;
  }
  throw new Error('expected a LobesError');
}

function arrayJson(a: GgufArray): unknown {
  if (a.itemType === 'array') return { itemType: 'array', items: a.items.map(arrayJson) };
  const items = Array.from(a.items as ArrayLike<unknown>).map((x) => (typeof x === 'bigint' ? x.toString() : x));
  return { itemType: a.itemType, items };
}

/** A metadata value in the JSON form make_gguf_goldens.py writes (64-bit integers as strings). */
export function valueJson(v: GgufValue): { type: string; value: unknown } {
  if (v.type === 'array') return { type: 'array', value: arrayJson(v.value) };
  if (v.type === 'uint64' || v.type === 'int64') return { type: v.type, value: v.value.toString() };
  return { type: v.type, value: v.value };
}

/** Bit patterns of float32 values, for exact comparison (NaN payloads and -0 included). */
export function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

/** Index of the first differing float32 bit pattern, or -1. */
export function firstBitDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const x = bits(a);
  const y = bits(b);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

/** Index of the first value that differs as a number (so -0 equals +0; no NaNs expected), or -1. */
export function firstValueDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}
