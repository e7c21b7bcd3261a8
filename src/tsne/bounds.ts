/** The bounding box of 2-D points (interleaved x, y), shared by the quadtree and the FFT grid. */

export interface Bounds {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** The bounding box of points lo … hi − 1 of Y, or of points idx[lo], …, idx[hi − 1] when idx is given. */
export function bounds(Y: Float64Array, lo: number, hi: number, idx: Int32Array | null = null): Bounds {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (let t = lo; t < hi; t++) {
    const i = idx ? idx[t] : t;
    const x = Y[2 * i];
    const y = Y[2 * i + 1];
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  return { minX, minY, maxX, maxY };
}
