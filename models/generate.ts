/**
 * Writes a generated model folder (deterministic from its seed):
 *   npx tsx models/generate.ts                 rewrites the built-in models/tiny-llama/
 *   npx tsx models/generate.ts NAME OUT_DIR    any model of GENERATED_MODELS (tiny-llama,
 *                                              tiny-llama-past, tiny-llama-opaque, blocks, bench)
 * In code, ensureGeneratedModel(NAME) builds the larger ones on demand into a cache folder.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_MODELS, writeModelFolder } from '../src/models/write.js';
import { generateParams } from '../src/models/tinyllama.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const [name = 'tiny-llama', outArg] = process.argv.slice(2);
const spec = GENERATED_MODELS[name];
if (!spec) {
  console.error(`generate: unknown model "${name}" (known: ${Object.keys(GENERATED_MODELS).join(', ')})`);
  process.exit(2);
}
if (name !== 'tiny-llama' && !outArg) {
  console.error(`generate: give an output folder for ${name}`);
  process.exit(2);
}
const out = outArg ?? path.join(here, 'tiny-llama');
const t0 = Date.now();
writeModelFolder(out, generateParams(spec.model), spec.write);
console.log(`wrote ${name} to ${out} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
