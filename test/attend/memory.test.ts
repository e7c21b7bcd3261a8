/**
 * The attention graph frees each layer's weights once its row is out: every selected Softmax
 * site after the first reads its scores through a node that depends on the previous selected
 * site's row, so no topological order can leave the rows to the end (ONNX Runtime's did: every
 * selected layer's [heads, seq, seq] weights stayed alive, 22 GB for SmolLM2's 30 layers at
 * 4,473 tokens; bench/RESULTS.md, "Attend's memory at long prompts"). The graph stays
 * topologically sorted, and the rows are the same numbers as each layer read alone.
 */
import { describe, it, expect } from 'vitest';
import * as ort from 'onnxruntime-node';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { analyseModel, batchFeeds, planInputs } from '../../src/runtime/engine.js';
import { attentionSites } from '../../src/runtime/attention-engine.js';
import { buildAttentionModel } from '../../src/runtime/attention-surgery.js';
import { encodeModel, type NodeProto } from '../../src/onnx/index.js';

/** Every value `name` depends on (walking producers back). */
function ancestors(nodes: NodeProto[], name: string): Set<string> {
  const producer = new Map<string, NodeProto>();
  for (const n of nodes) for (const o of n.output) producer.set(o, n);
  const seen = new Set<string>();
  const stack = [name];
  while (stack.length) {
    const v = stack.pop()!;
    const p = producer.get(v);
    if (!p) continue;
    for (const i of p.input) {
      if (i && !seen.has(i)) {
        seen.add(i);
        stack.push(i);
      }
    }
  }
  return seen;
}

describe('attention surgery and memory', () => {
  const dir = ensureGeneratedModel('tiny-llama');
  const a = analyseModel(dir);
  const sites = attentionSites(a);
  const { plans, mask, inGraphPast } = planInputs(a);

  it('each selected Softmax waits for the previous selected row; nodes stay in a topological order', () => {
    expect(sites.length).toBeGreaterThanOrEqual(2);
    expect(sites.every((s) => s.kind === 'softmax')).toBe(true);
    const surg = buildAttentionModel(a.loaded.model, a.disc.index, sites, mask, inGraphPast, a.loaded.file);
    const nodes = surg.model.graph!.node;
    for (let i = 1; i < sites.length; i++) {
      const s = sites[i]!;
      const prevRow = surg.outputs.get(sites[i - 1]!.name)!;
      const probs = (s as { probs: string }).probs;
      expect(ancestors(nodes, probs).has(prevRow), `layer ${s.layer}`).toBe(true);
      // and not the other way round
      expect(ancestors(nodes, prevRow).has(probs)).toBe(false);
    }
    const made = new Set<string>([...surg.model.graph!.input.map((v) => v.name!),
      ...surg.model.graph!.initializer.map((t) => t.name!), '']);
    for (const n of nodes) {
      for (const i of n.input) expect(made.has(i), `${n.name} reads ${i} before it is made`).toBe(true);
      for (const o of n.output) made.add(o);
    }
  });

  it('the rows read together equal each layer read alone', async () => {
    const T = 9;
    const b = { inputIds: BigInt64Array.from({ length: 2 * T }, (_, i) => BigInt(3 + ((i * 7) % 50))),
      attentionMask: BigInt64Array.from({ length: 2 * T }, (_, i) => (i >= T + 7 ? 0n : 1n)), batch: 2, seq: T,
      lastIndex: Int32Array.of(T - 1, 6) };
    const run = async (chosen: typeof sites) => {
      const surg = buildAttentionModel(a.loaded.model, a.disc.index, chosen, mask, inGraphPast, a.loaded.file);
      const s = await ort.InferenceSession.create(encodeModel(surg.model), { logSeverityLevel: 3,
        extra: {
          session: { model_external_initializers_file_folder_path: a.loaded.dir },
        } } as ort.InferenceSession.SessionOptions);
      const out = await s.run(batchFeeds(s, plans, b, surg.maskAdded ? surg.maskInput : null));
      await s.release();
      return new Map(chosen.map((x) => [x.layer, Array.from(out[surg.outputs.get(x.name)!]!.data as Float32Array)]));
    };
    const together = await run(sites);
    for (const s of sites) expect(together.get(s.layer)).toEqual((await run([s])).get(s.layer));
  });
});
