import { openAttentionEngine, realRows } from './src/extract/attention-engine.js';
import { padBatch } from './src/extract/batching.js';
import { readSafetensorsHeader, readTensorFloat32 } from './src/formats/safetensors.js';
import { readFileSync } from 'node:fs';
const meta = JSON.parse(readFileSync('test/attend/fixtures/smollm2.json', 'utf8'));
const h = readSafetensorsHeader('test/attend/fixtures/smollm2.safetensors');
const eng = await openAttentionEngine(process.argv[2], { device: 'cpu' });
console.log(eng.sites[0], eng.sites.length);
for (const side of ['right', 'left'] as const) {
  const b = padBatch(meta.ids, 0, side);
  const t = performance.now();
  const res = await eng.run(b);
  console.log('ms', performance.now() - t);
  const rows = realRows(b, res, eng.layers);
  rows.forEach((r, i) => {
    const g = readTensorFloat32(h, `ids${i}`);
    let m = 0; for (let j = 0; j < g.length; j++) m = Math.max(m, Math.abs(g[j] - r[j]));
    console.log(side, i, r.length, g.length, m.toExponential(2));
  });
}
await eng.close();
