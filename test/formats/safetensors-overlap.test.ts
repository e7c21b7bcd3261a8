/**
 * A safetensors header whose two tensors share data_offsets is refused in one line naming
 * both tensors (as the GGUF reader refuses overlapping tensors); the file is left as it is.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSafetensorsHeader } from '../../src/formats/safetensors.js';
import { LobesError } from '../../src/util/errors.js';

/** A safetensors file from a header object and a data length, written byte by byte here. */
function writeSt(file: string, header: Record<string, unknown>, dataBytes: number): void {
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(file, Buffer.concat([len, json, Buffer.alloc(dataBytes, 7)]));
}

describe('safetensors data_offsets', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lobes-st-'));

  it('refuses two tensors that share bytes, and reads disjoint ones', () => {
    const ok = path.join(dir, 'ok.safetensors');
    writeSt(ok, { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      b: { dtype: 'F32', shape: [2], data_offsets: [8, 16] }, e: { dtype: 'F32', shape: [0], data_offsets: [8, 8] } },
      16);
    expect([...readSafetensorsHeader(ok).tensors.keys()].sort()).toEqual(['a', 'b', 'e']);
    const bad = path.join(dir, 'shared.safetensors');
    writeSt(bad, { 'model.layers.0.mlp.up_proj.weight': { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      'model.layers.0.mlp.down_proj.weight': { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, 8);
    const before = readFileSync(bad);
    let e: unknown;
    try {
      readSafetensorsHeader(bad);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(LobesError);
    expect((e as Error).message).toBe(
      `${bad}: tensor "model.layers.0.mlp.up_proj.weight": data_offsets overlap those of tensor "model.layers.0.mlp.down_proj.weight": two tensors share bytes 0..8`,
    );
    expect(readFileSync(bad).equals(before)).toBe(true);
  });
});
