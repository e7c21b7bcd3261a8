/**
 * The real-model fixture for evaluation tests: SmolLM2-135M-Instruct as an ONNX folder. With
 * LOBES_SMOLLM2_ONNX set, that folder; otherwise lobes' own conversion of ../shared's GGUF file
 * in the layout lobes eval converts GGUF files to (genai, cached after the first time).
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

export const SMOLLM2_GGUF = path.resolve(__dirname,
  '../../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');
const CONVERT = path.resolve(__dirname, '../../src/convert/cache.ts');

/** The ONNX folder of SmolLM2-135M-Instruct, or why there is none. */
export async function smollm2Onnx(): Promise<string | { skip: string }> {
  const env = process.env.LOBES_SMOLLM2_ONNX;
  if (env)
    return existsSync(path.join(env, 'model.onnx')) ? env : { skip: `LOBES_SMOLLM2_ONNX=${env} has no model.onnx` };
  if (!existsSync(SMOLLM2_GGUF)) return { skip: `${SMOLLM2_GGUF} is absent` };
  if (!existsSync(CONVERT))
    return {
      skip: 'this lobes has no GGUF conversion (src/convert/cache.ts); set LOBES_SMOLLM2_ONNX to an ONNX export',
    };
  const mod = (await import(CONVERT)) as {
    resolveModel(p: string, o?: Record<string, unknown>): Promise<{ dir: string }>;
  };
  // The conversion lobes eval makes of a GGUF: the genai layout, with its KV cache.
  return (await mod.resolveModel(SMOLLM2_GGUF, { layout: 'genai', log: () => undefined })).dir;
}
