/**
 * Run names: the model (GGUF file, model folder, or the model a control copies), the control, and
 * the items (languages by frequency, else the dataset, and their count); equal names told apart
 * by their folders. Expected names are written out from the definition in docs/report.md.
 */
import { describe, it, expect } from 'vitest';
import { modelName, datasetName, composition, runName, distinctNames, nameRun } from '../../src/report/naming.js';
import type { ReportModel } from '../../src/report/load.js';

const samples = (langs: string[]) =>
  langs.map((language, i) => ({ index: i, id: `i${i}`, labels: { aspect: 'x', language }, tokens: 1,
    truncated: false })
  );

function model(m: Record<string, unknown>, langs: string[],
  spec = 'socialeval:/data/worldtree_data?task=iae'): ReportModel
{
  return { dir: '/runs/run', name: 'run', manifest: { model: m, dataset: { spec } } as never, samples: samples(langs),
    wanda: null, cluster: null, randomModel: false, control: (m.control as never) ?? null, omitted: [] };
}

describe('run names', () => {
  it('names the model by its GGUF file, else its folder, and a control by the model it copies', () => {
    expect(
      modelName({ dir: '/cache/lobes/convert/3f9a0c1e',
        source: { format: 'gguf', path: '/models/SmolLM2-135M-Instruct-Q8_0.gguf' } }),
    ).toBe('SmolLM2-135M-Instruct-Q8_0');
    expect(modelName({ dir: '/work/shared/models/smollm2-135m-instruct/' })).toBe('smollm2-135m-instruct');
    expect(modelName({ dir: '/tmp/control-7', control: { source: '/work/models/llama-8b' } })).toBe('llama-8b');
    expect(modelName(undefined)).toBe('unknown model');
  });

  it('says what the model read: languages by frequency and the item count, else the dataset', () => {
    expect(composition(samples(['zh', 'en', 'en', 'zh', 'en']).map((s) => s.labels), undefined)).toBe('en+zh, 5 items');
    expect(composition([{}, {}], 'builtin:social?n=2')).toBe('social, 2 items');
    expect(datasetName('socialeval:/data/worldtree_data/?task=iae')).toBe('worldtree_data');
    expect(datasetName('jsonl:items.jsonl')).toBe('items.jsonl');
  });

  it('joins model, control and items; --name replaces the whole name', () => {
    const trained = model({ dir: '/models/smollm2-135m-instruct' }, ['en', 'zh', 'en']);
    expect(runName(trained)).toBe('smollm2-135m-instruct · en+zh, 3 items');
    const control = model({ dir: '/tmp/ctl', control: { kind: 'random', source: '/models/smollm2-135m-instruct' } }, [
      'en',
    ]);
    expect(runName(control)).toBe('smollm2-135m-instruct, random-weights control · en, 1 item');
    expect(nameRun(trained, '  8B  ').name).toBe('8B');
    expect(nameRun(trained).name).toBe('smollm2-135m-instruct · en+zh, 3 items');
  });

  it('tells equal names apart by the shortest differing end of their folders', () => {
    expect(distinctNames(['m', 'n'], ['/a/run', '/b/run'])).toEqual(['m', 'n']);
    expect(distinctNames(['m', 'm'], ['/x/a/run', '/x/b/run'])).toEqual(['m (a/run)', 'm (b/run)']);
    expect(distinctNames(['m', 'm'], ['/x/run', '/x/run2'])).toEqual(['m (run)', 'm (run2)']);
    expect(distinctNames(['m', 'm'], ['/x/run', '/x/run/'])).toEqual(['m', 'm (2)']);
  });
});
