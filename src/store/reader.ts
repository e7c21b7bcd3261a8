/**
 * RunReader over a run directory. Activations are never loaded whole: read() fetches only
 * the requested rows and iterate() streams fixed-size row blocks.
 *
 * Verified reads: the first time a chunk file is touched it is read whole and checked
 * against the index while its bytes are in memory: size, sha256, the safetensors header
 * (tensor named after the hook, dtype, shape [rows, dim]) and its metadata (hook, and
 * row_start = the chunk's first dataset row, so a chunk file copied into another chunk's
 * slot is refused). The rows asked for are decoded from those same bytes. A verified file
 * is remembered, for this reader only, by its device, inode, size, modification and change
 * times; later reads of an unchanged file are positional reads of just the rows asked for.
 * Opening checks the manifest against its own identity, the samples table against its
 * sha256 (and, for a whole-dataset run, the items sha256), and the index against the
 * manifest's capture points.
 */
import { nearest } from '../util/suggest.js';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, LobesErrors, opt } from '../util/errors.js';
import { halfArrayToFloat } from '../util/half.js';
import { RangeFile } from '../util/io.js';
import type { HookInfo, RowChunk, RunManifest, RunReader, SampleRow } from './types.js';
import { ACTIVATIONS, INDEX, MANIFEST, SAMPLES } from './layout.js';
import { readManifest, readSamples } from './manifest.js';
import { type ChunkEntry, type ChunkIndex, readChunkIndex, checkChunkBytes, REPAIR_HINT } from './chunks.js';
import { hashItems, runIdentity } from './provenance.js';
import { overlaySha256, readLabelOverlays, type LabelOverlay } from './labels.js';

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
  /** RangeFile.statKey() of the file when it was verified. */
  key: string;
}

/** A chunk file opened for reading: checked, and its bytes when this open verified it. */
interface OpenChunk {
  rf: RangeFile;
  cf: CheckedFile;
  bytes: Uint8Array | null;
}

export class Run implements RunReader {
  readonly samples: SampleRow[];
  readonly index: ChunkIndex;
  /** Dataset row of this run's row 0. */
  readonly rowOffset: number;
  private readonly hookMap = new Map<string, HookInfo>();
  private readonly checked = new Map<string, CheckedFile>();
  private readonly consumed = new Set<string>();
  private readonly consumedOverlays = new Set<string>();
  private axesCache: string[] | null = null;
  private overlays: Map<string, LabelOverlay> | null = null;
  /** Bytes of chunk files hashed by this reader so far. */
  verifiedBytes = 0;

  constructor(
    readonly dir: string,
    readonly manifest: RunManifest,
    opts: OpenRunOptions = {},
  ) {
    const mfile = path.join(dir, MANIFEST);
    if (manifest.identity !== undefined && manifest.identity !== runIdentity(manifest)) {
      throw new LobesError('manifest was edited: its run identity does not match the settings and hashes it lists', {
        file: mfile,
        hint: 'restore the manifest or extract the run again',
      });
    }
    this.samples = readSamples(dir, manifest.samplesSha256);
    this.index = readChunkIndex(dir);
    this.rowOffset = manifest.layout?.rowStart ?? 0;
    for (const h of this.index.hooks) this.hookMap.set(h.name, h);
    if (this.samples.length !== manifest.counts.samples) {
      throw new LobesError(
        `manifest counts ${manifest.counts.samples} samples but samples.jsonl has ${this.samples.length}`,
        { file: mfile },
      );
    }
    this.checkConsistency();
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

  /** The samples table, the index and the manifest must describe the same rows and points. */
  private checkConsistency(): void {
    const m = this.manifest;
    const points = m.capture?.points ?? [];
    const same = points.length === this.index.hooks.length &&
      points.every((p, i) =>
        p.name === this.index.hooks[i].name && p.dim === this.index.hooks[i].dim &&
        p.dtype === this.index.hooks[i].dtype
      );
    if (!same)
      throw new LobesError('the chunk index lists other capture points than the manifest', {
        file: path.join(this.dir, INDEX),
        hint: 'the folder was edited by hand; extract the run again',
      });
    if (m.settings && m.settings.chunkRows !== this.index.chunkRows)
      throw new LobesError(
        `the chunk index uses ${this.index.chunkRows} rows per chunk, the manifest ${m.settings.chunkRows}`,
        { file: path.join(this.dir, INDEX) },
      );
    const runEnd = this.rowOffset + this.samples.length;
    for (const c of this.index.chunks) {
      if (c.start < this.rowOffset || c.start + c.rows > runEnd) {
        throw new LobesError(
          `chunk ${c.chunk} holds dataset rows ${c.start}..${
            c.start + c.rows - 1
          }, outside this run's rows ${this.rowOffset}..${runEnd - 1}`,
          { file: path.join(this.dir, INDEX) },
        );
      }
    }
    let tokens = 0;
    for (const s of this.samples) tokens += s.tokens;
    if (Number.isFinite(m.counts.tokens) && tokens !== m.counts.tokens) {
      throw new LobesError(`samples.jsonl counts ${tokens} tokens but the manifest ${m.counts.tokens}`, {
        file: path.join(this.dir, SAMPLES),
        hint: 'rerun the lobes extract command with --repair to write it again',
      });
    }
    // A run of the whole dataset carries every item: its ids, texts and labels must hash to the items sha256.
    const whole = !m.layout || (m.layout.rowStart === 0 && m.layout.rowEnd === m.dataset.count);
    if (whole && m.dataset?.itemsSha256 && this.samples.length === m.dataset.count &&
      this.samples.every((s) => typeof s.text === 'string'))
    {
      if (hashItems(this.samples) !== m.dataset.itemsSha256) {
        throw new LobesError(
          'samples.jsonl does not hold the items the run was extracted from (ids, texts or labels differ from the items sha256)',
          {
            file: path.join(this.dir, SAMPLES),
            hint: 'rerun the lobes extract command with --repair to write it again',
          },
        );
      }
    }
  }

  hooks(): HookInfo[] {
    return [...this.hookMap.values()];
  }

  /** The capture points read so far through this reader (sorted): what an analysis consumed. */
  consumedHooks(): string[] {
    return [...this.consumed].sort();
  }

  /** The label overlays (RUN/labels/AXIS.json) whose values were read, by axis, with the sha256 of each file as read. */
  consumedOverlayHashes(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const axis of [...this.consumedOverlays].sort()) out[axis] = overlaySha256(this.dir, axis) ?? 'missing';
    return out;
  }

  hook(name: string): HookInfo {
    const h = this.hookMap.get(name);
    if (!h) {
      const names = [...this.hookMap.keys()];
      throw new LobesError(
        `capture point ${JSON.stringify(name)} is not in this run (it has ${names.slice(0, 6).join(', ')}${
          names.length > 6 ? `, … ${names.length} in all` : ''
        })`,
        {
          file: path.join(this.dir, MANIFEST),
        },
      );
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
      const axes = this.manifest.dataset.axes?.length
        ? this.manifest.dataset.axes
        : Object.keys(this.samples[0]?.labels ?? {});
      this.axesCache = [...axes, ...[...this.labelOverlays().keys()].filter((a) => !axes.includes(a))];
    }
    return this.axesCache;
  }

  labels(axis: string): string[] {
    if (!this.labelAxes().includes(axis)) {
      const near = nearest(axis, this.labelAxes());
      // a label the user named that the run lacks is a usage error (exit 2), as README says
      throw new LobesError(
        `label axis ${JSON.stringify(axis)} is not in this run (axes: ${this.labelAxes().join(', ') || 'none'})`,
        { file: path.join(this.dir, SAMPLES), exitCode: 2,
          ...(near ? { hint: `did you mean ${opt('by', near)}?` } : {}) },
      );
    }
    const o = this.labelOverlays().get(axis);
    if (o && !(this.manifest.dataset.axes ?? []).includes(axis)) {
      this.consumedOverlays.add(axis);
      return this.samples.map((s) => o.values[s.id] ?? o.default);
    }
    return this.samples.map((s) => s.labels[axis]);
  }

  labelled(axis: string): boolean[] {
    const labels = this.labels(axis);
    const o = this.labelOverlays().get(axis);
    const overlay = !!o && !(this.manifest.dataset.axes ?? []).includes(axis);
    return this.samples.map((s, i) =>
      labels[i] !== '' && labels[i] !== undefined && (!overlay || Object.prototype.hasOwnProperty.call(o!.values, s.id))
    );
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
    return path.resolve(this.dir, name);
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
    throw new LobesError(
      `row ${row} (sample ${this.samples[row]?.id ?? '?'}) is in chunk ${c}, which has not been extracted`,
      {
        file: path.join(this.dir, INDEX),
        hint: 'rerun the extract command to finish the run',
      },
    );
  }

  /**
   * Open a chunk file of hook `h`. Unless this reader already verified the file in its
   * current state, its bytes are read whole and checked (checkChunkBytes); they are
   * returned so the caller decodes rows from them instead of reading again.
   */
  private openChunk(h: HookInfo, entry: ChunkEntry): OpenChunk {
    const rel = entry.files[h.name]!.path;
    const file = path.join(this.dir, ACTIVATIONS, rel);
    if (!existsSync(file)) throw new LobesError('chunk file is missing', { file, hint: REPAIR_HINT });
    this.consumed.add(h.name);
    const rf = RangeFile.open(file, 'chunk file');
    try {
      const key = rf.statKey();
      const got = this.checked.get(rel);
      if (got && got.key === key) return { rf, cf: got, bytes: null };
      if (rf.size !== entry.files[h.name]!.bytes) {
        throw new LobesError(
          `chunk file has ${rf.size} bytes, the index records ${entry.files[h.name]!.bytes} (truncated or overwritten)`,
          { file, hint: REPAIR_HINT },
        );
      }
      const bytes = rf.read(0, rf.size);
      const dataOffset = checkChunkBytes(bytes, file, h, entry);
      this.verifiedBytes += bytes.byteLength;
      const cf: CheckedFile = { file, dataOffset, rowBytes: h.dim * (h.dtype === 'F16' ? 2 : 4), key };
      this.checked.set(rel, cf);
      return { rf, cf, bytes };
    } catch (e) {
      rf.close();
      throw e;
    }
  }

  async read(hookName: string, rows?: ArrayLike<number>): Promise<Float32Array> {
    const h = this.hook(hookName);
    const n = this.samples.length;
    if (rows === undefined) return this.readRange(h, 0, n);
    const out = new Float32Array(rows.length * h.dim);
    const files = new Map<string, OpenChunk>();
    try {
      let i = 0;
      while (i < rows.length) {
        const r = rows[i];
        if (!Number.isInteger(r) || r < 0 || r >= n)
          throw new LobesError(`row ${r} is out of range for ${n} samples`, { file: path.join(this.dir, SAMPLES) });
        const loc = this.locate(r);
        const end = loc.runStart + loc.entry.rows;
        // Coalesce consecutive rows inside the same chunk.
        let j = i + 1;
        while (j < rows.length && rows[j] === rows[j - 1] + 1 && rows[j] < end) j++;
        const rel = loc.entry.files[h.name]!.path;
        let oc = files.get(rel);
        if (oc === undefined) {
          oc = this.openChunk(h, loc.entry);
          files.set(rel, oc);
        }
        this.readRows(oc, h, r - loc.runStart, j - i, out.subarray(i * h.dim, j * h.dim));
        i = j;
      }
    } finally {
      for (const oc of files.values()) oc.rf.close();
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
      const oc = this.openChunk(h, loc.entry);
      try {
        this.readRows(oc, h, r - loc.runStart, stop - r, out.subarray((r - start) * h.dim, (stop - start) * h.dim));
      } finally {
        oc.rf.close();
      }
      r = stop;
    }
    return out;
  }

  /** Rows [first, first + count) of an open chunk: from its verified bytes, else by positional reads. */
  private readRows(oc: OpenChunk, h: HookInfo, first: number, count: number, out: Float32Array): void {
    const { cf, bytes } = oc;
    const pos = cf.dataOffset + first * cf.rowBytes;
    const n = count * h.dim;
    if (bytes) {
      const at = bytes.byteOffset + pos;
      if (h.dtype === 'F32') {
        if (at % 4 === 0) out.set(new Float32Array(bytes.buffer, at, n));
        else new Uint8Array(out.buffer, out.byteOffset, n * 4).set(bytes.subarray(pos, pos + n * 4));
      } else {
        const half = at % 2 === 0
          ? new Uint16Array(bytes.buffer, at, n)
          : new Uint16Array(bytes.slice(pos, pos + n * 2).buffer);
        halfArrayToFloat(half as Uint16Array<ArrayBuffer>, out as Float32Array<ArrayBuffer>);
      }
      return;
    }
    if (h.dtype === 'F32') {
      oc.rf.readInto(out.subarray(0, n), pos);
    } else {
      const tmp = new Uint16Array(n);
      oc.rf.readInto(tmp, pos);
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
    this.checked.clear();
    const consumed = new Set(this.consumed);
    for (const c of this.index.chunks) {
      for (const h of this.index.hooks) {
        files++;
        try {
          this.openChunk(h, c).rf.close();
        } catch (e) {
          if (e instanceof LobesError) problems.push(e);
          else throw e;
        }
      }
    }
    // Verifying is not reading: what an analysis consumed stays as it was.
    this.consumed.clear();
    for (const h of consumed) this.consumed.add(h);
    const have = this.index.chunks.reduce((a, c) => a + c.rows, 0);
    if (have !== this.samples.length)
      problems.push(
        new LobesError(`${this.samples.length - have} of ${this.samples.length} rows have no chunk yet`, {
          file: path.join(this.dir, INDEX),
        }),
      );
    if (problems.length === 1) throw problems[0];
    if (problems.length) throw new LobesErrors(`run ${this.dir} failed verification`, problems);
    return files;
  }
}

export async function openRunDir(dir: string, opts: OpenRunOptions = {}): Promise<Run> {
  const m = readManifest(dir);
  return new Run(dir, m, opts);
}
