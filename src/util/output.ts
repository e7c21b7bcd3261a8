/**
 * Which folders and files are lobes' own outputs, so that lobes replaces only what it wrote.
 *
 * An output folder (RUN/wanda, RUN/cluster, an eval or attend folder, ...) carries a marker
 * file, `.lobes-output.json` = {format: "lobes-output", kind, lobesVersion, createdAt},
 * written inside the folder as part of the folder (writeDirAtomic writes it last, before the
 * folder is renamed into place). An existing folder is replaced only when it carries a marker
 * of the same kind, or when it is positively an output of that kind written by a lobes that
 * had no marker yet (`LEGACY` below: its settings.json has that command's fields and every
 * entry is a file that command writes). Everything else is refused before anything is
 * written, with one line naming the folder and what to do:
 *
 * - a folder without a marker that is not empty (the user's files: a thesis.tex next to a
 *   settings.json is not an output);
 * - a folder of another kind (`lobes cluster RUN --out RUN/wanda`);
 * - a run folder (manifest.json), a file, a symbolic link;
 * - a place inside a run's own files (RUN/activations/..., RUN/manifest.json) or inside
 *   another output folder (which replaces its whole content when it is written again).
 *
 * Single-file outputs (report and compare pages, exported figures) follow the same rule:
 * an existing file is overwritten only when lobes recognises it as its own (`recognise`:
 * the page's generator meta tag, the PNG's Software text chunk, the SVG's comment), and
 * never inside a run's own files or inside an output folder.
 */
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError } from './errors.js';
import { LOBES_VERSION } from '../version.js';
import type { MarkedAnalysisId } from '../analysis/registry.js';

/** The marker file inside every lobes output folder. */
export const OUTPUT_MARKER = '.lobes-output.json';

/**
 * Kinds of output folders lobes writes (one per command that writes a folder): every registered
 * analysis whose folder carries the marker (src/analysis/registry.ts), and the outputs that are no
 * analysis of a run. A type-only import: util/ imports nothing at run time from above it.
 */
export type OutputKind = MarkedAnalysisId | 'figures' | 'convert' | 'extract';

/** The content of the marker file. */
export interface OutputMarker {
  format: 'lobes-output';
  kind: OutputKind;
  lobesVersion: string;
  createdAt: string;
  /**
   * The entries lobes wrote at the top of the folder (writeDirAtomic records them): the
   * folder is replaced only while it holds nothing else. Absent for folders that lobes fills
   * over time (then the kind alone decides).
   */
  files?: string[];
  /**
   * Lineage (src/store/lineage.ts): the size and sha256 of every file lobes wrote in the folder,
   * by path relative to it (readers check the files they read against it). Absent in folders
   * written by an older lobes and in folders lobes fills over time.
   */
  outputs?: Record<string, OutputFileRecord>;
  /** Lineage: what the output read, each input with its content hash (src/store/lineage.ts names them). */
  inputs?: LineageInput[];
}

/** Size and sha256 of one file an output wrote. */
export interface OutputFileRecord {
  bytes: number;
  sha256: string;
}

/** One input an output read: its name (src/store/lineage.ts), its content hash, and where it was read from (informative). */
export interface LineageInput {
  name: string;
  sha256: string;
  from?: string;
}

/** The lineage of a folder written whole: its inputs, and (computed when it is written) its files. */
export interface MarkerLineage {
  inputs: LineageInput[];
  outputs?: Record<string, OutputFileRecord>;
}

/** The marker of a folder of `kind`, as written now (with the entries written, when known, and its lineage). */
export function outputMarker(kind: OutputKind, files?: string[], lineage?: MarkerLineage): OutputMarker {
  return {
    format: 'lobes-output',
    kind,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
    ...(files ? { files: [...files].sort() } : {}),
    ...(lineage?.outputs ? { outputs: lineage.outputs } : {}),
    ...(lineage ? { inputs: lineage.inputs } : {}),
  };
}

/** The text of the marker file of a folder of `kind`. */
export function outputMarkerText(kind: OutputKind, files?: string[], lineage?: MarkerLineage): string {
  return JSON.stringify(outputMarker(kind, files, lineage), null, 2) + '\n';
}

/**
 * Size and sha256 of every regular file under `dir` (paths relative to it, '/'-separated, sorted),
 * lobes' marker file left out: what an output folder records as the files it wrote.
 */
export function hashFolderFiles(dir: string): Record<string, OutputFileRecord> {
  const out: Record<string, OutputFileRecord> = {};
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p, r);
      else if (st.isFile() && r !== OUTPUT_MARKER) {
        const bytes = readFileSync(p);
        out[r] = { bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
      }
    }
  };
  walk(dir, '');
  return out;
}

/** The marker of `dir`, or null when it has none (or an unreadable one). */
export function readOutputMarker(dir: string): OutputMarker | null {
  const f = path.join(dir, OUTPUT_MARKER);
  try {
    if (!statSync(f).isFile()) return null;
    const m = JSON.parse(readFileSync(f, 'utf8'));
    if (m?.format === 'lobes-output' && typeof m.kind === 'string') return m as OutputMarker;
  } catch {
    // absent or not lobes' marker
  }
  return null;
}

/**
 * The entries of a run folder that are the run itself (src/store/layout.ts and labels.ts):
 * nothing is written inside them or over them by another command.
 */
export const RUN_OWN_ENTRIES = ['manifest.json', 'samples.jsonl', 'activations', 'labels'];

/** Whether `dir` is a lobes run folder (its manifest.json says so). */
export function isRunFolder(dir: string): boolean {
  const m = path.join(dir, 'manifest.json');
  if (!existsSync(m)) return false;
  return jsonField(m, 'format') === 'lobes-run' || existsSync(path.join(dir, 'activations')) ||
    existsSync(path.join(dir, 'samples.jsonl'));
}

function jsonField(file: string, field: string): unknown {
  try {
    if (!statSync(file).isFile()) return undefined;
    return JSON.parse(readFileSync(file, 'utf8'))?.[field];
  } catch {
    return undefined;
  }
}

/**
 * Output folders written by a lobes that wrote no marker, recognised positively: settings.json
 * (or summary.json, eval.json) with the fields that command writes, and nothing in the folder
 * but the files that command writes.
 */
const LEGACY: Partial<Record<OutputKind, { json: string; fields: string[]; files: string[] }>> = {
  wanda: { json: 'settings.json', fields: ['by', 'block', 'statistic', 'permutations', 'resolution'],
    files: ['settings.json', 'pooled.safetensors', 'regions.json', 'metrics.json', 'metrics.csv'] },
  cluster: { json: 'settings.json', fields: ['point', 'by', 'perplexity', 'pcaDims', 'theta', 'iterations'],
    files: ['settings.json', 'coords.json', 'coords.csv', 'items.json', 'metrics.csv', 'metrics.json', 'sweep.json'] },
};

/** Whether `dir` is an output of `kind` written before lobes marked its folders. */
export function isLegacyOutput(dir: string, kind: OutputKind): boolean {
  const l = LEGACY[kind];
  if (!l) return false;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return false;
  }
  if (!names.includes(l.json) || !names.every((n) => l.files.includes(n))) return false;
  try {
    const s = JSON.parse(readFileSync(path.join(dir, l.json), 'utf8'));
    return typeof s === 'object' && s !== null && l.fields.every((f) => f in s);
  } catch {
    return false;
  }
}

/** What kind of lobes output `dir` is (marker first, then the legacy forms), or null. */
export function outputKindOf(dir: string): OutputKind | null {
  const m = readOutputMarker(dir);
  if (m) return m.kind;
  for (const k of Object.keys(LEGACY) as OutputKind[]) if (isLegacyOutput(dir, k)) return k;
  return null;
}

/**
 * Refuse an output path (folder or file) that lies inside a run's own files or inside an
 * output folder of lobes: such a place is rewritten or read by another command. `what` names
 * the output in the message ('output folder', 'report file'); `allowIn`: folders in which a
 * direct child is allowed (checkOwnedOutputFile).
 */
export function checkOutputPlace(target: string, what: string, allowIn: readonly string[] = []): void {
  const abs = path.resolve(target);
  const allowed = allowIn.map((d) => path.resolve(d));
  for (let p = path.dirname(abs);; p = path.dirname(p)) {
    // a file directly in an allowed folder (a report beside the results it shows)
    const beside = p === path.dirname(abs) && allowed.includes(p);
    if (existsSync(p)) {
      const kind = beside ? null : outputKindOf(p);
      if (kind) {
        throw new LobesError(
          `${what} is inside the lobes ${kind} folder ${p}, which is replaced whole when it is written again; it is not written there`,
          { file: target, hint: 'give a path outside that folder' },
        );
      }
      if (isRunFolder(p)) {
        const first = path.relative(p, abs).split(path.sep)[0]!;
        if (RUN_OWN_ENTRIES.includes(first)) {
          throw new LobesError(`${what} is among the run's own files (${path.join(p, first)}); it is not written there`,
            { file: target, hint: 'give a path outside the run folder, or a new name in it' });
        }
      }
    }
    if (p === path.dirname(p)) return;
  }
}

/** What refusing an existing folder says about it. */
function folderProblem(dir: string, kind: OutputKind): string | null {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) return 'is a symbolic link; an output folder is not written over it';
  if (!st.isDirectory()) return 'exists and is not a folder; an output folder is written here';
  const names = readdirSync(dir);
  if (!names.length) return null;
  const m = readOutputMarker(dir);
  if (m && m.kind !== kind) return `folder holds lobes ${m.kind} results; lobes ${kind} does not replace them`;
  if (m) {
    const foreign = Array.isArray(m.files) ? names.filter((n) => n !== OUTPUT_MARKER && !m.files!.includes(n)) : [];
    if (!foreign.length) return null;
    return `folder holds an earlier lobes ${kind} result and files lobes did not write there (${
      foreign.slice(0, 3).join(', ')
    }${foreign.length > 3 ? ', …' : ''}); it is not replaced`;
  }
  if (isLegacyOutput(dir, kind)) return null;
  if (isRunFolder(dir)) return 'folder is a lobes run (manifest.json); it is not replaced';
  const other = outputKindOf(dir);
  if (other) return `folder holds lobes ${other} results; lobes ${kind} does not replace them`;
  const list = names.slice(0, 3).join(', ') + (names.length > 3 ? ', …' : '');
  return `folder exists and was not written by lobes ${kind} (it holds ${list}); it is not replaced`;
}

/**
 * Check, before any work is done, that an output folder of `kind` may be written at `dir`:
 * it is absent or empty, or an earlier output of the same kind (marker or legacy form), and
 * it does not lie inside a run's own files or another output folder. Throws a one-line
 * LobesError naming the folder and what to do otherwise.
 */
export function checkOutputDir(dir: string, kind: OutputKind): void {
  checkOutputPlace(dir, 'output folder');
  let exists = true;
  try {
    lstatSync(dir);
  } catch {
    exists = false;
  }
  if (!exists) return;
  const problem = folderProblem(dir, kind);
  if (problem) throw new LobesError(problem, { file: dir, hint: 'give a new or empty folder', code: 'E_EXISTS' });
}

/**
 * Check that a single output file may be written at `file`: not a folder or special file,
 * not inside a run's own files or an output folder, and, when it exists, a file lobes wrote
 * (`recognise` reads it and says so). `what` names the file in the message; a file directly
 * inside one of the `allowIn` folders is allowed even when that folder is an output folder
 * (the page of a lobes attend folder beside its results).
 */
export function checkOwnedOutputFile(file: string, what: string, recognise: (file: string) => boolean,
  allowIn: readonly string[] = []): void
{
  let st;
  try {
    st = lstatSync(file);
  } catch {
    st = null;
  }
  if (st?.isDirectory())
    throw new LobesError('is a folder; a file is written here', { file,
      hint: 'give a file path inside the folder, not the folder itself' });
  if (st && !st.isFile())
    throw new LobesError('is not a regular file (a link, pipe or device); a file is written here', { file,
      hint: 'give the path of a new file' });
  checkOutputPlace(file, what, allowIn);
  if (st && !recognise(file))
    throw new LobesError(`${what} exists and was not written by lobes; it is not overwritten`, { file,
      hint: 'give a new file name, or move the file away', code: 'E_EXISTS' });
}

/** The first `n` bytes of a file (fewer when it is shorter; empty when unreadable). */
export function fileHead(file: string, n: number): Buffer {
  const b = Buffer.alloc(n);
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    let got = 0;
    for (let k = 1; got < n && k > 0; got += k) k = readSync(fd, b, got, n - got, got);
    return b.subarray(0, got);
  } catch {
    return Buffer.alloc(0);
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
