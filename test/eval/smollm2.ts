/**
 * The real-model fixture for evaluation tests: SmolLM2-135M-Instruct as an ONNX folder.
 * LOBES_SMOLLM2_ONNX names a folder to use; otherwise the test is skipped with the reason.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

export const SMOLLM2_GGUF = path.resolve(__dirname, '../../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');

/** The ONNX folder of SmolLM2-135M-Instruct, or why there is none. */
export function smollm2Onnx(): string | { skip: string } {
  const env = process.env.LOBES_SMOLLM2_ONNX;
  if (env) return existsSync(path.join(env, 'model.onnx')) ? env : { skip: `LOBES_SMOLLM2_ONNX=${env} has no model.onnx` };
  if (!existsSync(SMOLLM2_GGUF)) return { skip: `${SMOLLM2_GGUF} is absent` };
  return { skip: 'set LOBES_SMOLLM2_ONNX to an ONNX export of SmolLM2-135M-Instruct' };
}
