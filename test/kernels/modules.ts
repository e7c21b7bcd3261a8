/**
 * Every WebAssembly module lobes assembles, by the name of its text form under
 * test/goldens/wasm/ (NAME.wat), with the source file that builds it.
 */
import { wandaModule } from '../../src/wanda/simd.js';
import { attractionModule } from '../../src/tsne/attraction-simd.js';
import { dotModule } from '../../src/util/dot-simd.js';
import { fftModule } from '../../src/tsne/fft-simd.js';
import { knnModule } from '../../src/tsne/knn-simd.js';
import { repulsionModule } from '../../src/tsne/repulsion-simd.js';
import { silhouetteModule } from '../../src/cluster/silhouette-wasm.js';

export const KERNEL_MODULES: { name: string; source: string; bytes: () => Uint8Array }[] = [
  { name: 'wanda', source: 'src/wanda/simd.ts', bytes: wandaModule },
  { name: 'attraction', source: 'src/tsne/attraction-simd.ts', bytes: attractionModule },
  { name: 'dot', source: 'src/util/dot-simd.ts', bytes: dotModule },
  { name: 'fft', source: 'src/tsne/fft-simd.ts', bytes: fftModule },
  { name: 'knn', source: 'src/tsne/knn-simd.ts', bytes: knnModule },
  { name: 'repulsion', source: 'src/tsne/repulsion-simd.ts', bytes: repulsionModule },
  { name: 'silhouette', source: 'src/cluster/silhouette-wasm.ts', bytes: silhouetteModule },
];

/** The text form (WAT) of a module's bytes, as wabt's wasm2wat writes it (validated first). */
export async function watOf(bytes: Uint8Array): Promise<string> {
  const wabt = await (await import('wabt')).default();
  const features = { simd: true, threads: true };
  const m = wabt.readWasm(bytes, { readDebugNames: false, check: true, ...features });
  try {
    // validate takes the features too (its typings say it takes nothing).
    (m.validate as (f: typeof features) => void)(features);
    m.generateNames();
    m.applyNames();
    return m.toText({ foldExprs: false, inlineExport: false });
  } finally {
    m.destroy();
  }
}
