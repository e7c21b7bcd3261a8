/**
 * The items an ablation scores: a context and a continuation per item, with its labels.
 *
 * - `socialeval:DIR?…`: context = the skill question + "\n", continuation = the correct response
 *   (the item text lobes extract reads with the default template `{question}\n{response}`, cut
 *   where the response starts). The token split is lm-evaluation-harness's
 *   (src/runtime/loglik.ts): the trailing "\n" moves to the continuation, so the scored tokens
 *   are those of "\n" + response after the question's tokens. No chat template.
 * - `jsonl:FILE?context=F&continuation=G&label=L[&id=I]`: the two fields as given (the context
 *   must not be empty).
 */
import { loadDataset } from '../data/index.js';
import { parseSpec, formatSpec } from '../data/spec.js';
import { limitItems, type LimitRecord } from '../data/subset.js';
import { LobesError, UsageError } from '../util/errors.js';

export interface AblateItem {
  id: string;
  labels: Record<string, string>;
  context: string;
  continuation: string;
}

export interface AblateItems {
  spec: string;
  items: AblateItem[];
  axes: string[];
  limit: LimitRecord | null;
}

/** Load the items of a dataset spec (see the top of this file), then the --limit sample. */
export async function loadAblateItems(spec: string,
  opts: { limit: number | null; by?: string[]; seed: number }): Promise<AblateItems>
{
  const p = parseSpec(spec);
  let items: AblateItem[];
  let axes: string[];
  let normalized: string;
  if (p.kind === 'socialeval') {
    for (const k of ['text', 'template'])
      if (p.params.has(k))
        throw new UsageError(
          `dataset spec ${
            JSON.stringify(spec)
          }: ${k}= does not apply to lobes ablate, which scores the response given its question`,
        );
    const ds = await loadDataset(spec);
    normalized = ds.spec;
    axes = ds.axes;
    items = ds.samples.map((s) => {
      const q = s.extras?.question;
      const r = s.extras?.response;
      if (typeof q !== 'string' || typeof r !== 'string')
        throw new LobesError('item has no question and response', { where: `item ${s.id}` });
      return { id: s.id, labels: s.labels, context: q + '\n', continuation: r };
    });
  } else if (p.kind === 'jsonl') {
    const ctx = p.params.get('context');
    const cont = p.params.get('continuation');
    if (!ctx || !cont)
      throw new UsageError(`dataset spec ${JSON.stringify(spec)}: lobes ablate needs context=FIELD&continuation=FIELD`,
        `e.g. jsonl:${p.path}?context=prompt&continuation=answer&label=label`);
    if (p.params.has('text'))
      throw new UsageError(`dataset spec ${JSON.stringify(spec)}: give context= and continuation= instead of text=`);
    const withText = (field: string) => {
      const params = new Map(p.params);
      params.delete('context');
      params.delete('continuation');
      params.set('text', field);
      return formatSpec('jsonl', p.path, params);
    };
    // The same file read twice, each field as the text: ids, labels and checks are the loader's.
    const a = await loadDataset(withText(ctx));
    const b = await loadDataset(withText(cont));
    const conts = new Map(b.samples.map((s) => [s.id, s.text]));
    normalized = formatSpec('jsonl', p.path, p.params);
    axes = a.axes;
    items = a.samples.map((s) => ({ id: s.id, labels: s.labels, context: s.text, continuation: conts.get(s.id)! }));
  } else {
    throw new UsageError(`lobes ablate reads socialeval: or jsonl:…?context=F&continuation=F data, not ${p.kind}:`);
  }
  if (opts.limit === null) return { spec: normalized, items, axes, limit: null };
  const l = limitItems(items, axes, { limit: opts.limit, by: opts.by, seed: opts.seed });
  return { spec: normalized, items: l.items, axes, limit: l.record };
}
