/**
 * The cost of what `lobes wanda` adds after the analysis (src/wanda/inference.ts): the
 * random-placement null of every set difference and region, at SmolLM2-135M's shapes with
 * `--block 32` (30 layers; gate/up maps 48×18, down 18×48), 5 groups (10 pairs: 20 differences
 * and 5 regions) of 10% of each matrix, 199 placements each, beside the label-permutation
 * side's per-labelling work on the same masks (selection, Jaccard, density, components).
 *
 *   npx tsx bench/wanda-inference.ts [--placements R]
 */
import { Rng } from '../src/util/rng.js';
import { setPlacement } from '../src/wanda/inference.js';
import { selectTop, minus, density, components, jaccard } from '../src/wanda/regions.js';
import type { WandaMatrix } from '../src/wanda/types.js';

const R = Number(process.argv[process.argv.indexOf('--placements') + 1]) || 199;
const mats: WandaMatrix[] = [];
for (let l = 0; l < 30; l++) {
  for (const proj of ['gate_proj', 'up_proj', 'down_proj']) {
    const [dOut, dIn] = proj === 'down_proj' ? [576, 1536] : [1536, 576];
    mats.push({ name: `layers.${l}.mlp.${proj}`, layer: l, proj, input: '', dOut, dIn, rowBlocks: dOut / 32,
      colBlocks: dIn / 32 });
  }
}
const rng = new Rng(1);
// Five groups' maps: a shared structure plus group noise, so regions overlap as real ones do.
const shared = mats.map((m) => Float32Array.from({ length: m.rowBlocks * m.colBlocks }, () => rng.next()));
const maps = Array.from({ length: 5 }, () => shared.map((s) => s.map((v) => v + 0.3 * rng.next())));
const masks = maps.map((m) => selectTop(m, mats, { kind: 'fraction', value: 0.1, scope: 'matrix' }));

let t0 = performance.now();
let sets = 0;
for (let a = 0; a < 5; a++)
  for (let b = a + 1; b < 5; b++) {
    setPlacement(minus(masks[a]!, masks[b]!), mats, R, sets++);
    setPlacement(minus(masks[b]!, masks[a]!), mats, R, sets++);
  }
for (let g = 0; g < 5; g++) setPlacement(masks[g]!, mats, R, sets++);
const placementMs = performance.now() - t0;

// One labelling's metric work (what each label permutation costs after its pooled maps), times R.
t0 = performance.now();
for (let r = 0; r < 20; r++) {
  const ms = maps.map((m) => selectTop(m, mats, { kind: 'fraction', value: 0.1, scope: 'matrix' }));
  for (let a = 0; a < 5; a++)
    for (let b = a + 1; b < 5; b++) {
      jaccard(ms[a]!, ms[b]!);
      for (const d of [minus(ms[a]!, ms[b]!), minus(ms[b]!, ms[a]!)]) {
        density(d, mats);
        components(d, mats);
      }
    }
  for (const m of ms) {
    density(m, mats);
    components(m, mats);
  }
}
const labelMs = ((performance.now() - t0) / 20) * R;
console.log(
  `${sets} sets, ${mats.length} matrices (${
    mats.reduce((a, m) => a + m.rowBlocks * m.colBlocks, 0)
  } blocks), ${R} placements each`,
);
console.log(`random-placement null: ${(placementMs / 1000).toFixed(2)} s`);
console.log(
  `label-permutation metrics for ${R} labellings (selection and metrics only, not the group sums): ${
    (labelMs / 1000).toFixed(2)
  } s`,
);
console.log(`ratio placement / label-side metrics: ${(placementMs / labelMs).toFixed(2)}`);
