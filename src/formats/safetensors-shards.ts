/**
 * Sharded safetensors checkpoints as Hugging Face lays them out: the shard plan (planShards,
 * transformers' save_pretrained split by size, model-0000i-of-0000n.safetensors names) and the
 * streamed, atomic writing of the shards and model.safetensors.index.json
 * (writeShardedSafetensors), each shard written by SafetensorsWriter (src/formats/safetensors.ts).
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { fsyncDir, makeDirs, writeFileAtomicSync } from '../util/io.js';
import { encodeSafetensorsHeader, SafetensorsWriter, stTensorBytes, type StTensorSpec } from './safetensors.js';

/** One shard of a sharded checkpoint. */
export interface ShardPlan {
  /** File name, e.g. model-00001-of-00004.safetensors. */
  file: string;
  tensors: StTensorSpec[];
  dataBytes: number;
}

/** Hugging Face's default largest shard (transformers' save_pretrained, max_shard_size="5GB"). */
export const DEFAULT_MAX_SHARD_BYTES = 5e9;

/**
 * Split tensors into shards the way transformers' save_pretrained does: in order, a new shard
 * starts when the next tensor would push the current one past `maxShardBytes` (a tensor larger
 * than that gets a shard of its own). Files are named PREFIX-0000i-of-0000n.safetensors, or
 * PREFIX.safetensors when one shard holds everything.
 */
export function planShards(specs: readonly StTensorSpec[], maxShardBytes = DEFAULT_MAX_SHARD_BYTES,
  prefix = 'model'): ShardPlan[]
{
  const groups: StTensorSpec[][] = [];
  let cur: StTensorSpec[] = [];
  let size = 0;
  for (const t of specs) {
    const n = stTensorBytes(t);
    if (cur.length && size + n > maxShardBytes) {
      groups.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(t);
    size += n;
  }
  if (cur.length || groups.length === 0) groups.push(cur);
  const n = groups.length;
  const pad = (i: number) => String(i).padStart(5, '0');
  return groups.map((tensors, i) => ({
    file: n === 1 ? `${prefix}.safetensors` : `${prefix}-${pad(i + 1)}-of-${pad(n)}.safetensors`,
    tensors,
    dataBytes: tensors.reduce((a, t) => a + stTensorBytes(t), 0),
  }));
}

export interface ShardedWriteOptions {
  /** Largest shard in bytes (default 5 GB, as Hugging Face). */
  maxShardBytes?: number;
  /** `__metadata__` of every shard (Hugging Face writes {"format": "pt"}). */
  metadata?: Record<string, string>;
  /** Called after each tensor with the data bytes written so far and in all. */
  onProgress?: (doneBytes: number, totalBytes: number, tensor: string) => void;
}

export interface ShardedWriteResult {
  dir: string;
  shards: string[];
  /** Data bytes of all tensors (the index's metadata.total_size). */
  totalSize: number;
  /** Bytes of all files written, headers and index included. */
  fileBytes: number;
}

/**
 * Write a sharded safetensors checkpoint into `dir`, as Hugging Face lays it out: shards
 * model-0000i-of-0000n.safetensors (planShards) and model.safetensors.index.json
 * ({"metadata": {"total_size"}, "weight_map": {tensor: shard}}); a single shard is
 * model.safetensors with no index. `fill(spec, write)` is called once per tensor, in order,
 * and must pass exactly the tensor's bytes to `write`, in pieces of any size.
 *
 * Atomic: everything is built in a temporary sibling folder that is renamed to `dir` at the
 * end; `dir` must not exist yet. Memory is what `fill` holds at a time.
 */
export async function writeShardedSafetensors(
  dir: string,
  specs: readonly StTensorSpec[],
  fill: (spec: StTensorSpec, write: (data: ArrayBufferView) => void) => void | Promise<void>,
  opts: ShardedWriteOptions = {},
): Promise<ShardedWriteResult> {
  if (existsSync(dir))
    throw new LobesError('already exists; remove it or write elsewhere', { file: dir, code: 'E_EXISTS' });
  const plan = planShards(specs, opts.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES);
  const totalSize = plan.reduce((a, s) => a + s.dataBytes, 0);
  const tmpDir = path.join(path.dirname(path.resolve(dir)),
    `.${path.basename(dir)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
  makeDirs(tmpDir);
  let done = 0;
  let fileBytes = 0;
  try {
    for (const shard of plan) {
      const w = SafetensorsWriter.create(path.join(tmpDir, shard.file), shard.tensors, opts.metadata);
      try {
        for (const t of shard.tensors) {
          const before = w.written;
          await fill(t, (data) => w.write(data, t.name));
          if (w.written - before !== stTensorBytes(t)) {
            throw new LobesError(
              `fill gave ${w.written - before} bytes for tensor ${JSON.stringify(t.name)}, which has ${
                stTensorBytes(t)
              }`,
              { file: path.join(dir, shard.file) },
            );
          }
          done += stTensorBytes(t);
          opts.onProgress?.(done, totalSize, t.name);
        }
        w.close();
      } catch (e) {
        w.abort();
        throw e;
      }
      fileBytes += encodeSafetensorsHeader(shard.tensors, opts.metadata).head.byteLength + shard.dataBytes;
    }
    if (plan.length > 1) {
      const weightMap: Record<string, string> = {};
      for (const s of plan) for (const t of s.tensors) weightMap[t.name] = s.file;
      const index = JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2) + '\n';
      writeFileAtomicSync(path.join(tmpDir, 'model.safetensors.index.json'), index);
      fileBytes += Buffer.byteLength(index);
    }
    renameSync(tmpDir, dir);
    fsyncDir(path.dirname(path.resolve(dir)));
  } catch (e) {
    rmSync(tmpDir, { recursive: true, force: true });
    throw e;
  }
  return { dir, shards: plan.map((s) => s.file), totalSize, fileBytes };
}
