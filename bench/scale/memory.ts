/**
 * Memory planning for bench/scale-8b.ts: how much memory each stage needs at a spec's shape
 * (estimated before anything is generated or loaded), how much the machine has free right now,
 * and whether the stage runs or is skipped with its reason in the JSON line.
 *
 * Estimates (bytes of host memory at the stage's peak):
 *   ONNX Runtime stages (session, extract, forward):  the export's weights (the int4 export's
 *     files, or 2 bytes per parameter for fp16) + one batch's activations (src/runtime/plan.ts
 *     batchBytes at rows × seq) + 1 GiB for the runtime and the process. Measured at 8B:
 *     session 6.09 GB and extract 8.05 GB RSS with 6.98 GB of int4 weights (bench/RESULTS.md).
 *   fp16-session on the CPU: ONNX Runtime's CPU kernels compute in float32, so session creation
 *     holds the fp16 weights and their float32 casts (2 + 4 bytes per parameter) + 1 GiB; on a
 *     GPU device the host holds the fp16 weights once (2 bytes per parameter) + 1 GiB.
 *   torch: transformers loads the bf16 checkpoint (2 bytes per parameter) and, on the CPU,
 *     converts it to float32 (4 more) + 1 GiB.
 *   every other stage (inspect, cat, wanda, cluster, report, dataset): 1 GiB (the largest
 *     measured at 8B was 0.53 GB: lobes streams the weights).
 * Free memory: MemAvailable of /proc/meminfo (what the kernel can hand out without swapping,
 * page cache included), or os.freemem() where that file is missing; `--memory-gb` replaces it
 * (to try the plan with another budget).
 */
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import { batchBytes } from '../../src/runtime/plan.js';
import type { ScaleSpec } from './weights.js';

const GiB = 2 ** 30;

export interface MemoryContext {
  spec: ScaleSpec;
  /** Parameters of the model (embeddings and lm_head included). */
  parameters: number;
  device: string;
  /** Bytes of the int4 export's files when generated, else null (estimated from the shape). */
  int4Bytes: number | null;
  /** Bytes of the fp16 export's files when generated, else null (2 bytes per parameter). */
  fp16Bytes: number | null;
  /** The export the extraction stages load. */
  exportKind: 'int4' | 'fp16';
  /** The largest batch the extraction stages run: rows × tokens. */
  batch: { rows: number; seq: number };
}

export interface StageNeed {
  bytes: number;
  /** How the figure is made, for the JSON line. */
  what: string;
}

/** Bytes of an int4 export at this shape, when it is not generated yet: 4-bit projections with an fp32 scale and a 4-bit zero point per 32 (0.64 bytes per weight), fp32 embeddings, an int4 lm_head. */
export function int4Estimate(spec: ScaleSpec): number {
  const perLayer = spec.hidden * (spec.heads * spec.headDim) * 2 + spec.hidden * (spec.kvHeads * spec.headDim) * 2 +
    3 * spec.hidden * spec.intermediate;
  const q = 0.5 + 4 / 32 + 0.5 / 32;
  return spec.layers * perLayer * q + spec.vocab * spec.hidden * 4 + spec.vocab * spec.hidden * q;
}

const gb = (b: number) => (b / 1e9).toFixed(2);

/** The memory a stage needs at its peak (see the top of this file). */
export function stageNeed(stage: string, c: MemoryContext): StageNeed {
  const act = batchBytes(c.spec, c.batch.rows, c.batch.seq);
  const int4 = c.int4Bytes ?? int4Estimate(c.spec);
  const fp16 = c.fp16Bytes ?? 2 * c.parameters;
  const model = c.exportKind === 'int4' ? int4 : fp16;
  const modelWhat = c.exportKind === 'int4'
    ? `int4 weights ${gb(int4)} GB${c.int4Bytes === null ? ' (estimated)' : ''}`
    : `fp16 weights ${gb(fp16)} GB`;
  switch (stage) {
    case 'session':
      return { bytes: model + GiB, what: `${modelWhat} + 1 GiB` };
    case 'extract':
    case 'forward':
      return { bytes: model + act + GiB,
        what: `${modelWhat} + a ${c.batch.rows}×${c.batch.seq}-token batch ${gb(act)} GB + 1 GiB` };
    case 'fp16-session':
      if (c.device === 'cpu')
        return { bytes: fp16 + 2 * fp16 + GiB,
          what: `fp16 weights ${gb(fp16)} GB + their float32 casts ${gb(2 * fp16)} GB (CPU kernels) + 1 GiB` };
      return { bytes: fp16 + GiB, what: `fp16 weights ${gb(fp16)} GB + 1 GiB` };
    case 'torch': {
      const bf16 = 2 * c.parameters;
      if (c.device === 'cpu')
        return { bytes: bf16 + 2 * bf16 + GiB,
          what: `bf16 checkpoint ${gb(bf16)} GB + float32 copy ${gb(2 * bf16)} GB + 1 GiB` };
      return { bytes: bf16 + GiB, what: `bf16 checkpoint ${gb(bf16)} GB + 1 GiB` };
    }
    default:
      return { bytes: GiB, what: '1 GiB (streams the weights)' };
  }
}

/** Bytes of memory free now: MemAvailable from `meminfo` (default /proc/meminfo), else os.freemem(). */
export function availableMemory(meminfo = '/proc/meminfo'): { bytes: number; source: string } {
  if (existsSync(meminfo)) {
    const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(readFileSync(meminfo, 'utf8'));
    if (m) return { bytes: Number(m[1]) * 1024, source: `${meminfo} MemAvailable` };
  }
  return { bytes: os.freemem(), source: 'os.freemem()' };
}

export interface Verdict {
  run: boolean;
  needGB: number;
  availableGB: number;
  /** Why the stage was skipped (only when run is false). */
  reason?: string;
}

/** Whether a stage needing `need` fits in `available` bytes; a skipped stage's reason names both figures. */
export function verdict(stage: string, need: StageNeed, available: { bytes: number; source: string }): Verdict {
  const r = (x: number) => Math.round((x / 1e9) * 100) / 100;
  const v: Verdict = { run: need.bytes <= available.bytes, needGB: r(need.bytes), availableGB: r(available.bytes) };
  if (!v.run)
    v.reason = `not enough free memory: ${stage} needs about ${gb(need.bytes)} GB (${need.what}) but ${
      gb(available.bytes)
    } GB is free (${available.source})`;
  return v;
}
