/**
 * The swap results folder, RUN/swap/ (docs/cluster.md, "Question/response swaps"): its file
 * names and how `lobes swap` writes them. No other module names these files.
 *
 *   settings.json   the run's provenance and the probe settings
 *   swap.json       SwapResult (src/swap/types.ts)
 *   swap.csv        one row per point and label (src/swap/run.ts swapCsv)
 */
import * as path from 'node:path';
import { writeFileAtomicSync } from '../util/io.js';
import { writeJsonAtomic } from '../store/json.js';

/** The folder of a run that `lobes swap` writes when no --out is given. */
export const SWAP_DIR = 'swap';
const SETTINGS = 'settings.json';
const SWAP_JSON = 'swap.json';
const SWAP_CSV = 'swap.csv';

/** The files `lobes swap` writes. */
export const SWAP_FILES = [SETTINGS, SWAP_JSON, SWAP_CSV] as const;

/** The folder of a run that `lobes swap` writes when no --out is given. */
export function swapFolder(runDir: string): string {
  return path.join(runDir, SWAP_DIR);
}

/** Write a swap analysis's files (`lobes swap`) into `dir`: settings.json, swap.csv and swap.json. */
export function writeSwapFiles(dir: string, o: { settings: unknown; csv: string; result: unknown }): void {
  writeJsonAtomic(path.join(dir, SETTINGS), o.settings, 2);
  writeFileAtomicSync(path.join(dir, SWAP_CSV), o.csv);
  writeJsonAtomic(path.join(dir, SWAP_JSON), o.result, 1);
}
