/**
 * Copy a GGUF file with lobes' reader and writer: same metadata (in order) and tensor bytes,
 * alignment 64. test/goldens/make_gguf_goldens.py runs this on goldens.gguf and checks the
 * copy with the gguf package's GGUFReader; gguf.test.ts makes the same copy and checks that it
 * is byte for byte the file the gguf package accepted.
 *
 *   npx tsx test/formats/gguf-probe.ts IN.gguf OUT.gguf
 */
import { openGguf } from '../../src/formats/gguf.js';
import { GgufWriter } from '../../src/formats/gguf-write.js';

/** Copy `src` to `dst` with the given alignment, one tensor in memory at a time. */
export function copyGguf(src: string, dst: string, alignment = 64): void {
  const g = openGguf(src);
  try {
    const meta = [...g.metadata].filter(([k]) => k !== 'general.alignment');
    const w = GgufWriter.create(dst, meta, g.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type })), {
      alignment,
    });
    try {
      for (const t of g.tensors) w.write(t.name, g.readTensorBytes(t));
      w.finish();
    } catch (e) {
      w.abort();
      throw e;
    }
  } finally {
    g.close();
  }
}

if (process.argv[1] && /gguf-probe\.ts$/.test(process.argv[1])) {
  const [src, dst] = process.argv.slice(2);
  if (!src || !dst) {
    console.error('usage: tsx test/formats/gguf-probe.ts IN.gguf OUT.gguf');
    process.exit(2);
  }
  copyGguf(src, dst);
}
