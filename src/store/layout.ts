/**
 * Paths and chunk geometry of a run directory (see docs/run-format.md).
 *
 * Chunk c of a dataset holds rows [c*K, min((c+1)*K, N)) for K = chunkRows, whatever the
 * shard: a shard is a contiguous range of whole chunks, so the chunk files of shards are
 * the chunk files of a single run and merging is a copy.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, opt } from '../util/errors.js';
import { parseInteger } from '../util/parse.js';

export const FORMAT_VERSION = 1;
export const MANIFEST = 'manifest.json';
export const SAMPLES = 'samples.jsonl';
export const ACTIVATIONS = 'activations';
export const INDEX = 'activations/index.json';

/** RUN/manifest.json. */
export function manifestPath(runDir: string): string {
  return path.join(runDir, MANIFEST);
}

/** Whether `dir` holds a run manifest (a run folder, finished or not). */
export function hasRunManifest(dir: string): boolean {
  return existsSync(manifestPath(dir));
}

/** Whether the run folder holds its samples table (RUN/samples.jsonl). */
export function hasSamples(runDir: string): boolean {
  return existsSync(path.join(runDir, SAMPLES));
}

/** Relative path (from RUN/activations) of one chunk file of one hook. */
export function chunkRelPath(hook: string, chunk: number): string {
  return `${hook}/chunk-${String(chunk).padStart(6, '0')}.safetensors`;
}

/** Hook names become folder names: refuse anything that could escape the folder. */
export function checkHookName(name: string): void {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name) || name.includes('..')) {
    throw new UsageError(
      `capture point name ${JSON.stringify(name)} cannot be stored (letters, digits, '.', '_' and '-' only)`,
    );
  }
}

export function chunkCount(rows: number, chunkRows: number): number {
  return Math.ceil(rows / chunkRows);
}

export interface ShardSpec {
  index: number;
  count: number;
}

export interface ShardRange {
  chunkStart: number;
  chunkEnd: number;
  rowStart: number;
  rowEnd: number;
}

/**
 * The rows of shard i of n: chunks [floor(i*C/n), floor((i+1)*C/n)) of the C chunks of the
 * dataset, i.e. a contiguous split of dataset order on chunk boundaries.
 */
export function shardRange(datasetRows: number, chunkRows: number, shard: ShardSpec | null): ShardRange {
  const c = chunkCount(datasetRows, chunkRows);
  const [i, n] = shard ? [shard.index, shard.count] : [0, 1];
  const chunkStart = Math.floor((i * c) / n);
  const chunkEnd = Math.floor(((i + 1) * c) / n);
  return {
    chunkStart,
    chunkEnd,
    rowStart: Math.min(chunkStart * chunkRows, datasetRows),
    rowEnd: Math.min(chunkEnd * chunkRows, datasetRows),
  };
}

/**
 * Parse --shard: `i/n` (0-based i), `auto` or `auto/N`.
 * auto reads Slurm job arrays (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP,
 * SLURM_ARRAY_TASK_COUNT) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with the count
 * from auto/N or LOBES_SHARD_COUNT).
 */
export function parseShard(spec: string | undefined, env: NodeJS.ProcessEnv = process.env): ShardSpec | null {
  if (spec === undefined || spec === '') return null;
  const m = /^(\d+)\/(\d+)$/.exec(spec);
  if (m)
    return checkShard(parseInteger(m[1]!, opt('shard', 'i')), parseInteger(m[2]!, opt('shard', 'n')),
      opt('shard', spec));
  const a = /^auto(?:\/(\d+))?$/.exec(spec);
  if (!a)
    throw new UsageError(
      `${opt('shard')} must be i/n (0-based, e.g. 0/4), auto or auto/N, got ${JSON.stringify(spec)}`,
    );
  const given = a[1] !== undefined ? parseInteger(a[1], opt('shard', 'auto/N')) : undefined;
  const int = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    return parseInteger(v, `${opt('shard', 'auto')}: ${name}`, 0);
  };
  const slurm = slurmShard(int, given);
  const k8s = k8sShard(int, given ?? slurm?.count);
  if (slurm && k8s && slurm.index !== k8s.index) {
    throw new UsageError(
      `${
        opt('shard', 'auto')
      }: two schedulers disagree: Slurm gives shard ${slurm.index} (SLURM_ARRAY_TASK_ID=${env.SLURM_ARRAY_TASK_ID}) and Kubernetes shard ${k8s.index} (JOB_COMPLETION_INDEX=${env.JOB_COMPLETION_INDEX})`,
      `unset the variable of the scheduler that did not start this job, or use ${opt('shard', 'i/n')}`,
    );
  }
  const shard = slurm ?? k8s;
  if (shard) return shard;
  throw new UsageError(
    `${
      opt('shard', 'auto')
    }: neither SLURM_ARRAY_TASK_ID (Slurm job array) nor JOB_COMPLETION_INDEX (Kubernetes Indexed Job) is set`,
    `use ${opt('shard', 'i/n')}`,
  );
}

type EnvInt = (name: string) => number | undefined;

/** The shard of a Slurm job array (null: SLURM_ARRAY_TASK_ID is not set). */
function slurmShard(int: EnvInt, given: number | undefined): ShardSpec | null {
  const slurmId = int('SLURM_ARRAY_TASK_ID');
  if (slurmId === undefined) return null;
  const min = int('SLURM_ARRAY_TASK_MIN') ?? 0;
  const step = int('SLURM_ARRAY_TASK_STEP') ?? 1;
  const count = given ?? int('SLURM_ARRAY_TASK_COUNT');
  if (count === undefined)
    throw new UsageError(`${opt('shard', 'auto')}: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not`,
      `use ${opt('shard', 'auto/N')}`);
  if (step < 1 || (slurmId - min) % step !== 0)
    throw new UsageError(
      `${opt('shard', 'auto')}: SLURM_ARRAY_TASK_ID=${slurmId} is not MIN=${min} plus a multiple of STEP=${step}`,
    );
  return checkShard((slurmId - min) / step, count,
    opt('shard', `auto (SLURM_ARRAY_TASK_ID=${slurmId}, MIN=${min}, STEP=${step}, COUNT=${count})`));
}

/** The shard of a Kubernetes Indexed Job (null: JOB_COMPLETION_INDEX is not set). */
function k8sShard(int: EnvInt, given: number | undefined): ShardSpec | null {
  const k8s = int('JOB_COMPLETION_INDEX');
  if (k8s === undefined) return null;
  const count = given ?? int('LOBES_SHARD_COUNT');
  if (count === undefined)
    throw new UsageError(`${opt('shard', 'auto')}: JOB_COMPLETION_INDEX is set but the shard count is unknown`,
      `use ${opt('shard', 'auto/N')} (N = the Job's completions) or set LOBES_SHARD_COUNT`);
  return checkShard(k8s, count, opt('shard', `auto (JOB_COMPLETION_INDEX=${k8s}, count ${count})`));
}

function checkShard(index: number, count: number, what: string): ShardSpec {
  if (!Number.isSafeInteger(count) || count < 1) throw new UsageError(`${what}: the shard count must be at least 1`);
  if (!Number.isSafeInteger(index) || index < 0 || index >= count)
    throw new UsageError(`${what}: shard index ${index} is outside 0..${count - 1} (indices are 0-based)`);
  return { index, count };
}

/** Substitute {i} and {n} in an --out path with the shard index and count. */
export function expandOut(out: string, shard: ShardSpec | null): string {
  if (!/\{[in]\}/.test(out)) return out;
  if (!shard) throw new UsageError(`${opt('out', out)} uses {i}/{n} but no ${opt('shard')} is given`);
  return out.replace(/\{i\}/g, String(shard.index)).replace(/\{n\}/g, String(shard.count));
}
