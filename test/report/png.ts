/** Minimal PNG decoder for tests: 8-bit greyscale/RGB/RGBA, non-interlaced. */
import { inflateSync } from 'node:zlib';

export interface Png {
  width: number;
  height: number;
  channels: number;
  pixels: Uint8Array;
}

export function decodePng(buf: Uint8Array): Png {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const sig = [137, 80, 78, 71, 13, 10, 26, 10];
  sig.forEach((v, i) => {
    if (b[i] !== v) throw new Error('not a PNG');
  });
  let off = 8;
  let width = 0, height = 0, depth = 0, colour = 0, interlace = 0;
  const idat: Buffer[] = [];
  while (off < b.length) {
    const len = b.readUInt32BE(off);
    const type = b.toString('latin1', off + 4, off + 8);
    const data = b.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8]!;
      colour = data[9]!;
      interlace = data[12]!;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  if (depth !== 8 || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, interlace ${interlace}`);
  const channels = ({ 0: 1, 2: 3, 4: 2, 6: 4 } as Record<number, number>)[colour];
  if (!channels) throw new Error(`unsupported PNG colour type ${colour}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)]!;
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = px.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? px.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? row[x - channels]! : 0;
      const up = prev[x]!;
      const c = x >= channels ? prev[x - channels]! : 0;
      let v = src[x]!;
      if (f === 1) v += a;
      else if (f === 2) v += up;
      else if (f === 3) v += (a + up) >> 1;
      else if (f === 4) {
        const p = a + up - c, pa = Math.abs(p - a), pb = Math.abs(p - up), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
      } else if (f !== 0) throw new Error(`bad PNG filter ${f}`);
      row[x] = v & 255;
    }
  }
  return { width, height, channels, pixels: px };
}

/** Number of distinct colours (capped) in a decoded PNG. */
export function distinctColours(p: Png, cap = 1000): number {
  const seen = new Set<number>();
  for (let i = 0; i < p.pixels.length && seen.size < cap; i += p.channels) {
    let v = 0;
    for (let c = 0; c < p.channels; c++) v = v * 256 + p.pixels[i + c]!;
    seen.add(v);
  }
  return seen.size;
}
