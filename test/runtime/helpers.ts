import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { LobesError } from '../../src/util/errors.js';
import { main } from '../../src/cli/main.js';

export const GENAI = resolve(import.meta.dirname, '../../../shared/models/ort-genai-tiny-llama-fp16');
export const hasGenai = existsSync(join(GENAI, 'model.onnx'));
if (!hasGenai) console.log(`skipping genai fixture tests: ${GENAI} is absent`);

export async function expectLobesError(p: Promise<unknown> | (() => unknown)): Promise<LobesError> {
  try {
    if (typeof p === 'function') p();
    else await p;
  } catch (e) {
    expect(e).toBeInstanceOf(LobesError);
    expect((e as Error).message).not.toMatch(/\n/);
    return e as LobesError;
  }
  throw new Error('expected a LobesError');
}

/** Run the CLI in-process; returns exit code, stdout and stderr. */
export async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const ow = process.stdout.write.bind(process.stdout);
  const ew = process.stderr.write.bind(process.stderr);
  (process.stdout as any).write = (s: any) => ((out += String(s)), true);
  (process.stderr as any).write = (s: any) => ((err += String(s)), true);
  try {
    const code = await main(argv);
    return { code, out, err };
  } finally {
    (process.stdout as any).write = ow;
    (process.stderr as any).write = ew;
  }
}

/** Max |a-b| / (max|b| + eps). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / (m + 1e-12);
}
