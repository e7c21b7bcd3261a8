/**
 * Cloze scoring throughput: lobes (the log-likelihood engine through the KV cache) against
 * lm-evaluation-harness with its Hugging Face backend, on the same requests, on CPU with the
 * same number of threads, in one run.
 *
 *   npx tsx bench/cloze-throughput.ts [--threads 2] [--iae 4]
 *
 * Items: the 40 hand-written items of test/goldens/lm-eval/items.jsonl ("Question: …\nAnswer:",
 * delimiter " ") and --iae N SocialEval IAE items (English; the published prompt cut where its
 * options start, delimiter "", no chat template). lobes renders the contexts; both sides score
 * exactly those (context, delimiter + option) pairs. Timed: the scoring alone (lobes: the
 * engine's score call with tokenization; lm-eval: simple_evaluate), model loading excluded.
 * Figure: scored continuation tokens per second; the ratio lobes / lm-eval. Also the largest
 * |Δ log-likelihood| between the two as a check that both scored the same thing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { loadEvalData, type Unit } from '../src/eval/units.js';
import { loadEvalTokenizer } from '../src/runtime/eval-tokenizer.js';
import { clozeContext, scoreClozeSteps, type ClozeStep } from '../src/eval/cloze.js';
import { newStats } from '../src/eval/evaluate.js';
import { openLoglikEngine } from '../src/runtime/loglik.js';
import { resolveModel } from '../src/convert/cache.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const GGUF = path.resolve(ROOT, '../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');
const DATA = path.resolve(ROOT, '../shared/socialeval/worldtree_data');
const { values: o } = parseArgs({
  options: { threads: { type: 'string', default: '2' }, iae: { type: 'string', default: '4' } },
});
const threads = Number(o.threads);

const model = (await resolveModel(GGUF, { layout: 'genai', log: () => undefined })).dir;
const tok = await loadEvalTokenizer(model, { chatTemplate: 'off' });
type ItemUnit = Extract<Unit, { kind: 'item' }>;
const steps = (units: Unit[]): ClozeStep[] =>
  (units.filter((u) => u.kind === 'item') as ItemUnit[]).map((u) => ({ facts: u.facts, item: u.prompt,
    style: u.style })
  );
const sets = [
  { name: 'bench_items', delimiter: ' ',
    steps: steps(
      loadEvalData(
        `jsonl:${
          path.join(ROOT, 'test/goldens/lm-eval/items.jsonl')
        }?question=question&options=options&answer=answer&id=id`,
        { task: 'iae', cot: false, seed: 0, scoring: 'cloze' },
      ).units,
    ) },
  { name: 'bench_iae', delimiter: '',
    steps: steps(
      loadEvalData(`socialeval:${DATA}?lang=en`, { task: 'iae', cot: false, seed: 0, limit: Number(o.iae) }).units,
    ) },
];

const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-cloze-bench-'));
try {
  const tasks = sets.map((s) => {
    const file = path.join(tmp, `${s.name}.json`);
    writeFileSync(file,
      s.steps.map((st) =>
        JSON.stringify({ id: st.facts.id, context: clozeContext(st.item, st.style, tok).text, options: st.item.options,
          answer: st.facts.answer })
      ).join('\n') + '\n');
    return { name: s.name, file, delimiter: s.delimiter };
  });
  writeFileSync(path.join(tmp, 'tasks.json'), JSON.stringify(tasks));

  // lobes
  const engine = await openLoglikEngine(model, { device: 'cpu', threads });
  const stats = newStats();
  const t0 = performance.now();
  const lobesLl = new Map<string, number[]>();
  for (const s of sets) {
    const recs = await scoreClozeSteps(s.steps, { tok, cloze: { engine, delimiter: s.delimiter, mutualInfo: false },
      maxTokens: null, stats });
    for (const r of recs) lobesLl.set(r.id, r.cloze!.options.map((x) => x.logprob));
  }
  const lobesS = (performance.now() - t0) / 1000;
  await engine.close();
  const lobesTokens = stats.scoredTokens ?? 0;

  // lm-evaluation-harness
  const py = JSON.parse(
    execFileSync('/work/venv/bin/python', [path.join(ROOT, 'bench/cloze-lmeval.py'), '--dir', tmp, '--threads',
      String(threads)], { encoding: 'utf8',
      env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' },
      stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 28 }).trim().split('\n').pop()!,
  );
  let worst = 0;
  for (const [id, ll] of lobesLl) ll.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - py.lls[id][j]))));
  const items = sets.reduce((a, s) => a + s.steps.length, 0);
  const options = sets.reduce((a, s) => a + s.steps.reduce((b, st) => b + st.item.options.length, 0), 0);
  console.log(
    `items ${items}, options ${options}, threads ${threads}, lm_eval ${py.lm_eval}, load ${
      os.loadavg().map((x) => x.toFixed(1)).join(' ')
    }`,
  );
  console.log(`| side | scored tokens | computed tokens | wall s | scored tokens/s |`);
  console.log(`|---|---:|---:|---:|---:|`);
  console.log(
    `| lobes (KV cache: ${engine.usesCache}) | ${lobesTokens} | ${stats.computedTokens} | ${lobesS.toFixed(1)} | ${
      (lobesTokens / lobesS).toFixed(1)
    } |`,
  );
  console.log(
    `| lm-eval (hf, batch 8) | ${py.tokens} | — | ${py.wall.toFixed(1)} | ${(py.tokens / py.wall).toFixed(1)} |`,
  );
  console.log(
    `ratio lobes / lm-eval: ${
      ((lobesTokens / lobesS) / (py.tokens / py.wall)).toFixed(2)
    }×; largest |Δ log-likelihood| ${worst.toExponential(2)}`,
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
