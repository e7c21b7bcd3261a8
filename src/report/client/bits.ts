/** Decoding of the payload's base64 bitsets and byte arrays. */

const cache = new Map<string, Uint8Array>();

/** The bytes of a base64 string (decoded once per distinct string). */
export function bytes(s: string): Uint8Array {
  const hit = cache.get(s);
  if (hit) return hit;
  const bin = atob(s);
  const n = bin.length;
  const u = new Uint8Array(n);
  for (let i = 0; i < n; i++) u[i] = bin.charCodeAt(i);
  cache.set(s, u);
  return u;
}

/** Bit i of a little-endian bitset. */
export function bit(u: Uint8Array, i: number): number {
  return (u[i >> 3]! >> (i & 7)) & 1;
}
