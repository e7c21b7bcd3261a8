/**
 * The wanda results folder, RUN/wanda/ (src/wanda/types.ts, docs/run-format.md): its file
 * names, how `lobes wanda` writes them and how the report reads them back. No other module
 * names these files.
 *
 *   settings.json        WandaSettings (with the provenance of the run it read)
 *   regions.json         WandaRegions
 *   metrics.json         WandaMetrics (metrics.csv, channels.csv, sensitivity.csv: tables of it)
 *   pooled.safetensors   one F32 tensor per (group, matrix), named `${group}|${matrix}`
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { readSafetensorsHeader, readTensorFloat32, writeSafetensors, type StHeader,
  type StWriteTensor } from '../formats/safetensors.js';
import { need, isObj, isStrArr, writeJsonAtomic } from '../store/json.js';
import { checkOutputCurrent, readOutputFile, readOutputJson, runFileInput,
  type LineageInput } from '../store/lineage.js';
import { analysisFolderName, analysisFolders } from '../store/analyses.js';
import { readOutputMarker } from '../util/output.js';
import type { RunManifest } from '../store/types.js';
import type { WandaSettings, WandaRegions, WandaMetrics } from './types.js';

/** The folder of a run that `lobes wanda` writes (RunReader.analysisDir(WANDA_DIR)). */
export const WANDA_DIR = 'wanda';
const SETTINGS = 'settings.json';
const REGIONS = 'regions.json';
const METRICS = 'metrics.json';
const METRICS_CSV = 'metrics.csv';
const CHANNELS_CSV = 'channels.csv';
const SENSITIVITY_CSV = 'sensitivity.csv';
const POOLED = 'pooled.safetensors';

/** A wanda folder's settings.json or regions.json. */
export function wandaFile(dir: string, which: 'settings' | 'regions'): string {
  return path.join(dir, which === 'settings' ? SETTINGS : REGIONS);
}

/**
 * The wanda folder of a run: RUN/wanda for the run's default axis (src/store/analyses.ts), else
 * RUN/wanda.by-AXIS; RUN/wanda when no axis is given.
 */
export function wandaDir(runDir: string, by?: { manifest: Pick<RunManifest, 'dataset'>; axis: string }): string {
  return path.join(runDir, by ? analysisFolderName(WANDA_DIR, by.manifest, { by: by.axis }) : WANDA_DIR);
}

/** Every wanda folder of a run (RUN/wanda and its per-axis siblings). */
export function wandaDirs(runDir: string): string[] {
  return analysisFolders(runDir, WANDA_DIR, 'wanda');
}

/** The inputs a wanda result's regions stand on, for an output that reads them (ablate): its settings and regions files. */
export function wandaRegionInputs(runDir: string, dir: string): LineageInput[] {
  return [runFileInput(runDir, path.join(dir, SETTINGS)), runFileInput(runDir, path.join(dir, REGIONS))];
}

/** What one wanda result holds; the tables and the pooled scores are optional (the synthetic runs leave some out). */
export interface WandaOutputs {
  settings: WandaSettings;
  regions: WandaRegions;
  metrics: WandaMetrics;
  /** metrics.csv, channels.csv, sensitivity.csv as text. */
  tables?: { metrics?: string; channels?: string; sensitivity?: string };
  pooled?: { tensors: StWriteTensor[]; meta: Record<string, string> };
}

/** Write a wanda result's files into `dir` (a temporary folder that writeDirAtomic swaps in, or a synthetic run's). */
export function writeWandaFiles(dir: string, o: WandaOutputs): void {
  if (o.pooled) writeSafetensors(path.join(dir, POOLED), o.pooled.tensors, o.pooled.meta);
  writeJsonAtomic(path.join(dir, REGIONS), o.regions);
  writeJsonAtomic(path.join(dir, METRICS), o.metrics, 1);
  if (o.tables?.metrics !== undefined) writeFileAtomicSync(path.join(dir, METRICS_CSV), o.tables.metrics);
  if (o.tables?.channels !== undefined) writeFileAtomicSync(path.join(dir, CHANNELS_CSV), o.tables.channels);
  if (o.tables?.sensitivity !== undefined) writeFileAtomicSync(path.join(dir, SENSITIVITY_CSV), o.tables.sensitivity);
  writeJsonAtomic(path.join(dir, SETTINGS), o.settings, 2);
}

/** What the report reads of a wanda result. */
export interface WandaData {
  dir: string;
  settings: WandaSettings;
  regions: WandaRegions;
  metrics: WandaMetrics | null;
  /** Pooled block scores of one group for one matrix, [rowBlocks * colBlocks]; null when pooled.safetensors is absent. */
  pooled: ((group: string, matrix: string) => Float32Array | null) | null;
}

/**
 * RUN/wanda checked against its contract and against the run (checkProvenance: a result of
 * another run, or of this run before it was extracted again, throws a ProvenanceError); null
 * when the run has no wanda result. Other breaks of the contract throw naming file and place.
 */
export function readWanda(runDir: string, manifest: RunManifest, wd: string = wandaDir(runDir)): WandaData | null {
  const rf = path.join(wd, REGIONS);
  if (!existsSync(rf)) return null;
  const sfile = path.join(wd, SETTINGS);
  // Every file is read only as lobes wanda wrote it (lineage: the sha256 in the folder's marker).
  const marker = readOutputMarker(wd);
  const settings = readOutputJson(wd, SETTINGS, marker);
  need(isObj(settings) && isStrArr(settings.groups) && typeof settings.by === 'string', sfile, 'groups',
    'settings need "by" (string) and "groups" (string array)');
  checkOutputCurrent(wd, { runDir, manifest }, 'the wanda results', sfile, 'lobes wanda', settings.provenance);
  const regions = readOutputJson(wd, REGIONS, marker);
  need(isObj(regions) && Array.isArray(regions.matrices), rf, 'matrices', 'expected a "matrices" array');
  const names = new Set<string>();
  const sizes = new Map<string, number>();
  regions.matrices.forEach((m: any, i: number) => {
    const ok = isObj(m) && typeof m.name === 'string' && typeof m.proj === 'string' && Number.isInteger(m.layer) &&
      Number.isInteger(m.rowBlocks) && Number.isInteger(m.colBlocks) && m.rowBlocks > 0 && m.colBlocks > 0;
    need(ok, rf, `matrices[${i}]`, 'a matrix needs name, layer, proj, rowBlocks and colBlocks');
    need(!names.has(m.name), rf, `matrices[${i}]`, `duplicate matrix ${JSON.stringify(m.name)}`);
    names.add(m.name);
    sizes.set(m.name, m.rowBlocks * m.colBlocks);
  });
  const checkSet = (set: any, where: string) => {
    need(isObj(set), rf, where, 'expected an object of matrix name to block indices');
    for (const [k, v] of Object.entries(set)) {
      const n = sizes.get(k);
      need(n !== undefined, rf, `${where}.${k}`, 'unknown matrix (not in "matrices")');
      need(Array.isArray(v), rf, `${where}.${k}`, 'expected an array of block indices');
      for (let i = 0; i < (v as any[]).length; i++) {
        const x = (v as any[])[i];
        if (!(Number.isInteger(x) && x >= 0 && x < n)) {
          throw new LobesError(`block index ${JSON.stringify(x)} out of range 0..${n - 1}`, { file: rf,
            where: `${where}.${k}[${i}]` });
        }
      }
    }
  };
  need(isObj(regions.regions), rf, 'regions', 'expected a "regions" object');
  for (const [g, set] of Object.entries(regions.regions)) checkSet(set, `regions.${g}`);
  need(Array.isArray(regions.differences), rf, 'differences', 'expected a "differences" array');
  regions.differences.forEach((d: any, i: number) => {
    need(isObj(d) && typeof d.a === 'string' && typeof d.b === 'string', rf, `differences[${i}]`,
      'a difference needs string "a" and "b"');
    checkSet(d.aMinusB, `differences[${i}].aMinusB`);
    checkSet(d.bMinusA, `differences[${i}].bMinusA`);
  });
  const mfile = path.join(wd, METRICS);
  let metrics: WandaMetrics | null = null;
  if (existsSync(mfile)) {
    const m = readOutputJson(wd, METRICS, marker);
    need(isObj(m) && Array.isArray(m.pairs) && Array.isArray(m.groups), mfile, 'pairs',
      'expected "groups" and "pairs" arrays');
    metrics = m as WandaMetrics;
  }
  const pfile = path.join(wd, POOLED);
  let pooled: WandaData['pooled'] = null;
  if (existsSync(pfile)) {
    readOutputFile(wd, POOLED, marker);
    const h: StHeader = readSafetensorsHeader(pfile);
    pooled = (group, matrix) => {
      const name = `${group}|${matrix}`;
      const t = h.tensors.get(name);
      if (!t) return null;
      const n = sizes.get(matrix);
      const numel = t.shape.reduce((a, b) => a * b, 1);
      if (n !== undefined && numel !== n) {
        throw new LobesError(
          `shape ${JSON.stringify(t.shape)} does not match the ${n} blocks of the matrix in ${REGIONS}`,
          { file: pfile, where: name },
        );
      }
      return readTensorFloat32(h, name);
    };
  }
  return { dir: wd, settings: settings as WandaSettings, regions: regions as WandaRegions, metrics, pooled };
}
