import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseNpy, readNpy, encodeNpy } from '../../src/cluster/npy.js';
import { floatToHalf } from '../../src/util/half.js';

/** Build .npy bytes by hand: magic, version, header length, padded dict, data. */
function npyBytes(major: number, dict: string, data: Uint8Array): Uint8Array {
  const lenBytes = major === 1 ? 2 : 4;
  const pre = 6 + 2 + lenBytes;
  let h = dict;
  while ((pre + h.length + 1) % 64 !== 0) h += ' ';
  h += '\n';
  const hb = Buffer.from(h, major === 3 ? 'utf8' : 'latin1');
  const out = new Uint8Array(pre + hb.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0], 0);
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, hb.length, true);
  else dv.setUint32(8, hb.length, true);
  out.set(hb, pre);
  out.set(data, pre + hb.length);
  return out;
}

function le(values: number[], bytes: 2 | 4 | 8): Uint8Array {
  const out = new Uint8Array(values.length * bytes);
  const dv = new DataView(out.buffer);
  values.forEach((v, i) => {
    if (bytes === 4) dv.setFloat32(i * 4, v, true);
    else if (bytes === 8) dv.setFloat64(i * 8, v, true);
    else dv.setUint16(i * 2, floatToHalf(v), true);
  });
  return out;
}

describe('npy parser', () => {
  const vals = [1.5, -2, 3.25, 0, 1e-3, 7];
  it('reads v1 <f4, C order, shape (2, 3)', () => {
    const b = npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", le(vals, 4));
    const r = parseNpy(b);
    expect(r.shape).toEqual([2, 3]);
    expect(Array.from(r.data)).toEqual(vals.map((v) => Math.fround(v)));
  });
  it('reads v2 <f8 and v3 <f2', () => {
    const b2 = npyBytes(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", le(vals, 8));
    const r2 = parseNpy(b2);
    expect(r2.header.version[0]).toBe(2);
    expect(r2.shape).toEqual([3, 2]);
    expect(Array.from(r2.data)).toEqual(vals.map((v) => Math.fround(v)));
    const b3 = npyBytes(3, "{'descr': '<f2', 'fortran_order': False, 'shape': (6,), }",
      le([1, -2, 0.5, 0.25, 3, 1024], 2));
    const r3 = parseNpy(b3);
    expect(r3.shape).toEqual([6]);
    expect(Array.from(r3.data)).toEqual([1, -2, 0.5, 0.25, 3, 1024]);
  });
  it('reads a file from disk as [rows, cols]', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-npy-'));
    const f = path.join(dir, 'x.npy');
    writeFileSync(f, npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", le(vals, 4)));
    const r = readNpy(f);
    expect([r.rows, r.cols]).toEqual([3, 2]);
    expect(r.data[5]).toBe(7);
  });
  it('round-trips encodeNpy', () => {
    const x = Float64Array.from([1, 2, 3, 4, 5, 6.5]);
    const r = parseNpy(encodeNpy(x, [2, 3]));
    expect(r.shape).toEqual([2, 3]);
    expect(Array.from(r.data)).toEqual([1, 2, 3, 4, 5, 6.5]);
    expect((r.header.dataOffset) % 64).toBe(0);
  });
  it('rejects fortran order, other dtypes, bad magic and short data with a clear error', () => {
    expect(() =>
      parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", le(vals, 4)), 'f.npy')
    ).toThrow(/f\.npy.*Fortran order/);
    expect(() =>
      parseNpy(npyBytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", le(vals, 4)), 'i.npy')
    ).toThrow(/unsupported dtype "<i4"/);
    expect(() => parseNpy(npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", le(vals, 4))))
      .toThrow(/unsupported dtype ">f4"/);
    expect(() => parseNpy(new Uint8Array(20), 'z.npy')).toThrow(/z\.npy.*not a \.npy file/);
    expect(() =>
      parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", le(vals, 4)), 's.npy')
    ).toThrow(/needs 48 data bytes, the file has 24/);
    expect(() => parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }", le(vals, 4))))
      .toThrow(/a matrix \[N, d\] is needed/);
  });
});
