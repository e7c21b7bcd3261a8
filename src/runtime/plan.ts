/**
 * What every model command checks before it runs the model: the context length (texts past it
 * are refused, or cut only where a command documents it) and the memory of its largest batch
 * (bounded before anything is allocated). extract, eval, attend and ablate use these same
 * functions, so the same input gets the same answer from every command.
 *
 * Memory of one forward pass of a batch of `rows` sequences of `seq` tokens, in bytes, as an
 * unfused attention (or ONNX Runtime's CPU kernels) holds it: the attention scores and
 * probabilities, rows × heads × seq² fp32 twice, plus the layer activations, rows × seq ×
 * (4·hidden + 3·intermediate) fp32. Fused GPU kernels need less; the bound errs on the safe side.
 */
import { existsSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { configDir, declaredContext, declaredLayers, type ContextLimit } from './config.js';
import type { Device } from './types.js';
import type { ModelArch } from '../store/types.js';

export type { ContextLimit } from './config.js';

/** The context length a model folder (or an .onnx file in it) declares, with where it comes from; null when nothing says. */
export function modelContext(model: string): ContextLimit | null {
  const isFile = existsSync(model) && statSync(model).isFile();
  const dir = isFile ? path.dirname(model) : model;
  return declaredContext(configDir(dir, dir));
}

/** The decoder layer count a model folder (or an .onnx file in it) declares; null when nothing says. */
export function modelLayers(model: string): number | null {
  const isFile = existsSync(model) && statSync(model).isFile();
  const dir = isFile ? path.dirname(model) : model;
  return declaredLayers(configDir(dir, dir));
}

/** One input as the checks see it. */
export interface PlannedText {
  id: string;
  tokens: number;
}

/**
 * Refuse inputs longer than the model's context: positions past it are outside what the model
 * was trained on (and, in fused graphs, outside the rotary cache). One line naming how many,
 * the longest, and what to do (`hint`).
 */
export function checkContext(items: readonly PlannedText[], limit: ContextLimit | null,
  hint: (limit: ContextLimit) => string): void
{
  if (!limit) return;
  let over = 0;
  let worst = -1;
  for (let i = 0; i < items.length; i++) {
    if (items[i]!.tokens > limit.tokens) {
      over++;
      if (worst < 0 || items[i]!.tokens > items[worst]!.tokens) worst = i;
    }
  }
  if (!over) return;
  const w = items[worst]!;
  throw new LobesError(
    `${over} of ${items.length} texts are longer than the model's context of ${limit.tokens} tokens (${limit.source}); the longest has ${w.tokens} tokens`,
    {
      where: `sample ${w.id}`,
      hint: hint(limit),
    },
  );
}

/** Bytes one forward pass of `rows` × `seq` tokens needs (see the top of this file). */
export function batchBytes(arch: Pick<ModelArch, 'heads' | 'hidden' | 'intermediate'>, rows: number,
  seq: number): number
{
  const heads = arch.heads ?? 1;
  return 4 * rows * seq * (2 * heads * seq + 4 * arch.hidden + 3 * arch.intermediate);
}

/** The machine's RAM for cpu; $LOBES_DEVICE_MEMORY_GB (default 80) GiB for a GPU. */
export function defaultMemoryLimit(device: Device): number {
  if (device === 'cpu') return os.totalmem();
  const gb = Number(process.env.LOBES_DEVICE_MEMORY_GB);
  return (Number.isFinite(gb) && gb > 0 ? gb : 80) * 2 ** 30;
}

export function fmtBytes(b: number): string {
  if (b < 1024) return `${b} B`;
  const u = ['KiB', 'MiB', 'GiB', 'TiB'];
  let x = b / 1024;
  let i = 0;
  while (x >= 1024 && i < u.length - 1) {
    x /= 1024;
    i++;
  }
  return `${x.toFixed(x >= 100 ? 0 : 1)} ${u[i]}`;
}

export interface MemoryPlanOptions {
  device: Device;
  /** Bytes a batch may need (default defaultMemoryLimit(device)). */
  limit?: number;
  /** Run anyway, with a warning (--ignore-plan). */
  force?: boolean;
  /** What to do instead, for the refusal (flags of the calling command). */
  hint: string;
  say?: (line: string) => void;
}

/**
 * Refuse a batch plan whose largest batch needs more memory than the device has, before any
 * batch runs: one line naming the batch (rows × tokens), the bytes, the limit and the item.
 * `batches` lists each batch's item indices into `items`.
 */
export function checkBatchMemory(batches: readonly (readonly number[])[], items: readonly PlannedText[],
  arch: Pick<ModelArch, 'heads' | 'hidden' | 'intermediate'>, opts: MemoryPlanOptions): void
{
  const limit = opts.limit ?? defaultMemoryLimit(opts.device);
  let worst = { bytes: 0, rows: 0, seq: 0, id: '' };
  for (const b of batches) {
    let seq = 0;
    let at = b[0]!;
    for (const i of b) if (items[i]!.tokens > seq) [seq, at] = [items[i]!.tokens, i];
    const bytes = batchBytes(arch, b.length, seq);
    if (bytes > worst.bytes) worst = { bytes, rows: b.length, seq, id: items[at]!.id };
  }
  if (worst.bytes <= limit) return;
  const what = `a batch of ${worst.rows} row${worst.rows > 1 ? 's' : ''} × ${worst.seq} tokens needs about ${
    fmtBytes(worst.bytes)
  } (attention scores for ${arch.heads ?? 1} heads × ${worst.seq}² positions per row), more than the ${
    fmtBytes(limit)
  } ${
    opts.device === 'cpu'
      ? 'of memory this machine has'
      : `assumed for the ${opts.device} device ($LOBES_DEVICE_MEMORY_GB)`
  }`;
  if (!opts.force) throw new LobesError(what, { where: `sample ${worst.id}`, hint: opts.hint });
  opts.say?.(`warning: ${what} (--ignore-plan given)`);
}
