/**
 * Writes the text form of every kernel module (test/goldens/wasm/NAME.wat), after a change to
 * a kernel that is meant to change its bytes:
 *
 *     npx tsx test/goldens/wasm/write-wat.ts
 *
 * test/kernels/wat.test.ts then compares each module with its committed text, so every byte a
 * change moves shows as a diff of that text in review.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { KERNEL_MODULES, watOf } from '../../kernels/modules.js';

for (const k of KERNEL_MODULES) {
  const file = path.join(import.meta.dirname, `${k.name}.wat`);
  const text = await watOf(k.bytes());
  writeFileSync(file, text);
  console.log(`${file}: ${text.split('\n').length} lines (${k.source})`);
}
