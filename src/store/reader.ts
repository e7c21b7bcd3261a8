/**
 * RunReader over a run directory. Activations are never loaded whole: read() fetches only
 * the requested rows with positional reads (consecutive rows of a chunk in one read) and
 * iterate() streams fixed-size row blocks. Chunk files are checked lazily (header, shape,
 * dtype and size against the index) when first touched; verify() hashes them all.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, LobesErrors } from '../util/errors.js';
import { halfArrayToFloat } from '../util/half.js';
import { RangeFile } from '../util/io.js';
import { readSafetensorsHeader } from '../formats/safetensors.js';
import type { HookInfo, RowChunk, RunManifest, RunReader, SampleRow } from './types.js';
import { ACTIVATIONS } from './layout.js';
import { readManifest, readSamples } from './manifest.js';
import { type ChunkEntry, type ChunkIndex, readChunkIndex, checkChunkFile } from './chunks.js';
import { readLabelOverlays, type LabelOverlay } from './labels.js';

export interface OpenRunOptions {
  /** Open a run whose extraction has not finished (rows of missing chunks cannot be read). */
  allowIncomplete?: boolean;
}

interface ChunkLoc {
  entry: ChunkEntry;
  /** First row of this run (0-based within the run) held by the chunk. */
  runStart: number;
}

interface CheckedFile {
  file: string;
  /** Absolute byte offset of the tensor data. */
  dataOffset: number;
  rowBytes: number;
}

export class Run implements RunReader {
  readonly samples: SampleRow[];
  readonly index: ChunkIndex;
  /** Dataset row of this run's row 0. */
  readonly rowOffset: number;
  private readonly hookMap = new Map<string, HookInfo>();
  private readonly checked = new Map<string, CheckedFile>();
  private axesCache: string[] | null = null;
  private overlays: Map<string, LabelOverlay> | null = null;

  constructor(
    readonly dir: string,
    readonly manifest: RunManifest,
    opts: OpenRunOptions = {},
  ) {
    this.samples = readSamples(dir);
    this.index = readChunkIndex(dir);
    this.rowOffset = manifest.layout?.rowStart ?? 0;
    for (const h of this.index.hooks) this.hookMap.set(h.name, h);
    const mfile = path.join(dir, 'manifest.json');
    if (this.samples.length !== manifest.counts.samples) {
      throw new LobesError(`manifest counts ${manifest.counts.samples} samples but samples.jsonl has ${this.samples.length}`, { file: mfile });
    }
    if (!opts.allowIncomplete) {
      const have = this.index.chunks.reduce((a, c) => a + c.rows, 0);
      if (!manifest.complete || have !== this.samples.length) {
        throw new LobesError(`run is incomplete: ${have} of ${this.samples.length} rows extracted`, {
          file: mfile,
          hint: 'rerun the same lobes extract command to resume it',
        });
      }
    }
  }

  hooks(): HookInfo[] {
    return [...this.hookMap.values()];
  }

  hook(name: string): HookInfo {
    const h = this.hookMap.get(name);
    if (!h) {
      const names = [...this.hookMap.keys()];
      throw new LobesError(`capture point ${JSON.stringify(name)} is not in this run (it has ${names.slice(0, 6).join(', ')}${names.length > 6 ? `, … ${names.length} in all` : ''})`, {
        file: path.join(this.dir, 'manifest.json'),
      });
    }
    return h;
  }

  /** Label axes added after extraction (RUN/labels/, e.g. `correct` from lobes eval label). */
  private labelOverlays(): Map<string, LabelOverlay> {
    this.overlays ??= readLabelOverlays(this.dir);
    return this.overlays;
  }

  labelAxes(): string[] {
    if (!this.axesCache) {
      const axes = this.manifest.dataset.axes?.length ? this.manifest.dataset.axes : Object.keys(this.samples[0]?.labels ?? {});
      this.axesCache = [...axes, ...[...this.labelOverlays().keys()].filter((a) => !axes.includes(a))];
    }
    return this.axesCache;
  }

  labels(axis: string): string[] {
    if (!this.labelAxes().includes(axis)) {
      throw new LobesError(`label axis ${JSON.stringify(axis)} is not in this run (axes: ${this.labelAxes().join(', ') || 'none'})`, { file: path.join(this.dir, 'samples.jsonl') });
    }
    const o = this.labelOverlays().get(axis);
    if (o && !(this.manifest.dataset.axes ?? []).includes(axis)) return this.samples.map((s) => o.values[s.id] ?? o.default);
    return this.samples.map((s) => s.labels[axis]);
  }

  select(axis: string, value: string): Int32Array {
    const labels = this.labels(axis);
    let n = 0;
    for (const l of labels) if (l === value) n++;
    const out = new Int32Array(n);
    let k = 0;
    for (let i = 0; i < labels.length; i++) if (labels[i] === value) out[k++] = i;
    return out;
  }

  analysisDir(name: string): string {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name) || name.includes('..') || name === ACTIVATIONS) {
      throw new LobesError(`analysis folder name ${JSON.stringify(name)} is not allowed`);
    }
    const d = path.join(this.dir, name);
    mkdirSync(d, { recursive: true });
    return d;
  }

  /** The chunk holding run row `row`. */
  private locate(row: number): ChunkLoc {
    const chunkRows = this.index.chunkRows;
    const global = row + this.rowOffset;
    const c = Math.floor(global / chunkRows);
    // Chunks are sorted; binary search by chunk number.
    const cs = this.index.chunks;
    let lo = 0;
    let hi = cs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cs[mid].chunk === c) return { entry: cs[mid], runStart: cs[mid].start - this.rowOffset };
      if (cs[mid].chunk < c) lo = mid + 1;
      else hi = mid - 1;
    }
    throw new LobesError(`row ${row} (sample ${this.samples[row]?.id ?? '?'}) is in chunk ${c}, which has not been extracted`, {
      file: path.join(this.dir, 'activations/index.json'),
      hint: 'rerun the extract command to finish the run',
    });
  }

  /** Lazily check a chunk file's header against the index and the hook. */
  private chunkFile(h: HookInfo, entry: ChunkEntry): CheckedFile {
    const rel = entry.files[h.name].path;
    const got = this.checked.get(rel);
    if (got) return got;
    const problem = checkChunkFile(this.dir, entry.files[h.name], false);
    if (problem) throw new LobesError(problem, { hint: 'run lobes extract again with --repair to rewrite bad chunks' });
    const file = path.join(this.dir, ACTIVATIONS, rel);
    const hdr = readSafetensorsHeader(file);
    const t = hdr.tensors.get(h.name);
    if (!t || t.dtype !== h.dtype || t.shape.length !== 2 || t.shape[0] !== entry.rows || t.shape[1] !== h.dim) {
      throw new LobesError(`chunk file does not hold ${h.name} as ${h.dtype} [${entry.rows}, ${h.dim}]`, { file });
    }
    const c: CheckedFile = { file, dataOffset: t.offset, rowBytes: h.dim * (h.dtype === 'F16' ? 2 : 4) };
    this.checked.set(rel, c);
    return c;
  }

  async read(hookName: string, rows?: ArrayLike<number>): Promise<Float32Array> {
    const h = this.hook(hookName);
    const n = this.samples.length;
    if (rows === undefined) return this.readRange(h, 0, n);
    const out = new Float32Array(rows.length * h.dim);
    const files = new Map<string, RangeFile>();
    try {
      let i = 0;
      while (i < rows.length) {
        const r = rows[i];
        if (!Number.isInteger(r) || r < 0 || r >= n) throw new LobesError(`row ${r} is out of range for ${n} samples`, { file: path.join(this.dir, 'samples.jsonl') });
        const loc = this.locate(r);
        const end = loc.runStart + loc.entry.rows;
        // Coalesce consecutive rows inside the same chunk.
        let j = i + 1;
        while (j < rows.length && rows[j] === rows[j - 1] + 1 && rows[j] < end) j++;
        const f = this.chunkFile(h, loc.entry);
        let rf = files.get(f.file);
        if (rf === undefined) {
          rf = RangeFile.open(f.file, 'chunk file');
          files.set(f.file, rf);
        }
        this.readRows(rf, f, h, r - loc.runStart, j - i, out.subarray(i * h.dim, j * h.dim));
        i = j;
      }
    } finally {
      for (const rf of files.values()) rf.close();
    }
    return out;
  }

  /** Rows [start, end) of the run as one matrix. */
  async readRange(h: HookInfo, start: number, end: number): Promise<Float32Array> {
    const out = new Float32Array((end - start) * h.dim);
    let r = start;
    while (r < end) {
      const loc = this.locate(r);
      const stop = Math.min(end, loc.runStart + loc.entry.rows);
      const f = this.chunkFile(h, loc.entry);
      const rf = RangeFile.open(f.file, 'chunk file');
      try {
        this.readRows(rf, f, h, r - loc.runStart, stop - r, out.subarray((r - start) * h.dim, (stop - start) * h.dim));
      } finally {
        rf.close();
      }
      r = stop;
    }
    return out;
  }

  private readRows(rf: RangeFile, f: CheckedFile, h: HookInfo, first: number, count: number, out: Float32Array): void {
    const pos = f.dataOffset + first * f.rowBytes;
    if (h.dtype === 'F32') {
      rf.readInto(out.subarray(0, count * h.dim), pos);
    } else {
      const tmp = new Uint16Array(count * h.dim);
      rf.readInto(tmp, pos);
      halfArrayToFloat(tmp, out as Float32Array<ArrayBuffer>);
    }
  }

  async *iterate(hookName: string, chunkRows?: number): AsyncIterable<RowChunk> {
    const h = this.hook(hookName);
    const step = Math.max(1, Math.floor(chunkRows ?? this.index.chunkRows));
    const n = this.samples.length;
    for (let s = 0; s < n; s += step) {
      const e = Math.min(n, s + step);
      yield { start: s, rows: e - s, data: await this.readRange(h, s, e) };
    }
  }

  /**
   * Hash every chunk file and compare with the index; also checks that every row has a
   * chunk. Throws a LobesErrors naming every bad file; returns the number of files checked.
   */
  async verify(): Promise<number> {
    const problems: LobesError[] = [];
    let files = 0;
    for (const c of this.index.chunks) {
      for (const h of this.index.hooks) {
        files++;
        const p = checkChunkFile(this.dir, c.files[h.name], true);
        if (p) problems.push(new LobesError(p));
      }
    }
    const have = this.index.chunks.reduce((a, c) => a + c.rows, 0);
    if (have !== this.samples.length) problems.push(new LobesError(`${this.samples.length - have} of ${this.samples.length} rows have no chunk yet`, { file: path.join(this.dir, 'activations/index.json') }));
    if (problems.length === 1) throw problems[0];
    if (problems.length) throw new LobesErrors(`run ${this.dir} failed verification`, problems);
    return files;
  }
}

export async function openRunDir(dir: string, opts: OpenRunOptions = {}): Promise<Run> {
  const m = readManifest(dir);
  return new Run(dir, m, opts);
}
