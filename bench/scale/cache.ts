/**
 * The cache of bench/scale-8b.ts: generated models live under $LOBES_MODEL_CACHE (default
 * os.tmpdir()/lobes-models), never in the repository, in a folder named by the spec and seed,
 * and are generated once. Each artefact is built in a temporary sibling and renamed into
 * place, so an interrupted generation is never mistaken for a finished one.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { modelCacheDir } from '../../src/models/write.js';
import { SeededLlamaWeights, checkpointReady, writeCheckpoint, type ScaleSpec } from './weights.js';

/** Version of the generated artefacts; bump when the weights or layouts change. */
export const SCALE_CACHE_VERSION = 2;

/** Cache folder for a spec and seed. */
export function scaleCacheDir(spec: ScaleSpec, seed: number, root = modelCacheDir()): string {
  const h = createHash('sha256').update(JSON.stringify({ v: SCALE_CACHE_VERSION, spec, seed })).digest('hex').slice(0,
    10);
  return path.join(root, `scale-${spec.layers}x${spec.hidden}-${h}`);
}

/** Format bytes per second. */
export function gbps(bytes: number, seconds: number): number {
  return Math.round((bytes / 1e9 / seconds) * 1000) / 1000;
}

/** The bf16 Hugging Face checkpoint of the seeded weights, generated on first use. */
export async function ensureCheckpoint(dir: string, w: SeededLlamaWeights,
  log: (l: string) => void): Promise<{ dir: string; generatedSeconds: number | null }>
{
  const ck = path.join(dir, 'hf-bf16');
  if (checkpointReady(ck)) return { dir: ck, generatedSeconds: null };
  mkdirSync(dir, { recursive: true });
  const t0 = Date.now();
  let last = 0;
  await writeCheckpoint(ck, w, (done, total) => {
    if (Date.now() - last > 15000) {
      last = Date.now();
      log(`checkpoint: ${(done / 1e9).toFixed(1)} / ${(total / 1e9).toFixed(1)} GB`);
    }
  });
  if (!existsSync(ck)) throw new Error(`checkpoint was not written: ${ck}`);
  return { dir: ck, generatedSeconds: (Date.now() - t0) / 1000 };
}
