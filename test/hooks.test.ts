import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CAPTURE_FAMILIES, FINAL_HIDDEN, HOOK_SITES, compareHooks, hookName, isLayerSite, meanSiteOf, parseHook,
  pooledSite, siteFamily, sitePool, siteProjections, type Hook, type LayerSite } from '../src/hooks.js';
import { inspectModel } from '../src/runtime/engine.js';

const TINY = resolve(import.meta.dirname, '../models/tiny-llama');

// The documented vocabulary, written out by hand.
const LAYER_SITES: LayerSite[] = ['mlp.in', 'mlp.down_in', 'resid_out', 'resid_out.mean', 'attn.weights'];
// The sites `lobes extract` stores (attn.weights spans the positions and is read by `lobes attend`).
const STORED_LAYER_SITES: LayerSite[] = ['mlp.in', 'mlp.down_in', 'resid_out', 'resid_out.mean'];

describe('hook names', () => {
  it('has exactly the documented sites and families', () => {
    expect(HOOK_SITES).toEqual(['final.hidden', 'mlp.in', 'mlp.down_in', 'resid_out', 'final.mean', 'resid_out.mean',
      'attn.weights']);
    expect(HOOK_SITES.filter(isLayerSite)).toEqual(LAYER_SITES);
    expect(CAPTURE_FAMILIES).toEqual(['final', 'mlp', 'resid', 'mean']);
    expect(HOOK_SITES.map(siteFamily)).toEqual(['final', 'mlp', 'mlp', 'resid', 'mean', 'mean', 'attn']);
    expect(HOOK_SITES.map(sitePool)).toEqual(['last', 'last', 'last', 'last', 'mean', 'mean', 'last']);
    expect([pooledSite('final.mean'), pooledSite('resid_out.mean'), pooledSite('resid_out')]).toEqual(['final.hidden',
      'resid_out', 'resid_out']);
    expect([meanSiteOf('final.hidden'), meanSiteOf('resid_out'), meanSiteOf('mlp.in')]).toEqual(['final.mean',
      'resid_out.mean', null]);
    expect(parseHook('final.mean')).toEqual({ layer: null, site: 'final.mean' });
    expect(parseHook('layers.3.resid_out.mean')).toEqual({ layer: 3, site: 'resid_out.mean' });
    expect(parseHook('resid_out.mean')).toBeNull();
    expect(siteProjections('attn.weights')).toEqual([]);
    expect(siteProjections('mlp.in')).toEqual(['gate_proj', 'up_proj']);
    expect(siteProjections('mlp.down_in')).toEqual(['down_proj']);
    expect(siteProjections('resid_out')).toEqual([]);
  });

  it('builds and parses every site at layers 0, 1, 9, 10, 123 and 2^53 - 1 (round trip)', () => {
    expect(hookName({ layer: null, site: 'final.hidden' })).toBe('final.hidden');
    expect(parseHook('final.hidden')).toEqual({ layer: null, site: 'final.hidden' });
    expect(FINAL_HIDDEN).toBe('final.hidden');
    for (const layer of [0, 1, 9, 10, 123, Number.MAX_SAFE_INTEGER]) {
      for (const site of LAYER_SITES) {
        const name = `layers.${layer}.${site}`;
        expect(hookName({ layer, site })).toBe(name);
        expect(parseHook(name)).toEqual({ layer, site });
        expect(hookName(parseHook(name)!)).toBe(name);
      }
    }
  });

  it('rejects names that are not canonical hooks of a known site', () => {
    const bad = [
      '',
      'layers.x.mlp.in',
      'layers.-1.mlp.in',
      'layers.+1.mlp.in',
      // leading zeros: one hook, one spelling
      'layers.01.mlp.in',
      'layers.00.resid_out',
      'layers.1e3.mlp.in',
      'layers.0x1.mlp.in',
      'layers.1.5.mlp.in',
      'layers. 1.mlp.in',
      'layers..mlp.in',
      'layers.1.',
      'layers.1',
      'layers.',
      'layers.1.mlp',
      'layers.1.mlp.in ',
      ' final.hidden',
      'Final.hidden',
      'LAYERS.1.mlp.in',
      // a layer site without its layer, a model site with one
      'mlp.in',
      'resid_out',
      'layers.1.final.hidden',
      // past the safe integers
      'layers.9007199254740993.mlp.in',
      // sites the vocabulary does not (yet) have
      'layers.1.attn.in',
      'layers.1.attn.o_in',
      'embed.out',
      // inherited object keys are not sites
      'constructor',
      '__proto__',
      'layers.1.toString',
      'layers.1.__proto__',
    ];
    for (const name of bad) expect(parseHook(name), name).toBeNull();
  });

  it('refuses to build a name for a layer that is not a non-negative integer', () => {
    for (const layer of [-1, 1.5, Number.NaN, Infinity, 2 ** 53])
      expect(() => hookName({ layer, site: 'mlp.in' }), String(layer)).toThrow(RangeError);
  });

  it('orders hooks by layer number (10 after 2), model-level first, then by site', () => {
    const names = ['layers.10.mlp.in', 'layers.2.resid_out', 'final.hidden', 'layers.2.mlp.down_in',
      'layers.10.resid_out', 'layers.2.mlp.in'];
    const sorted = names.map((n) => parseHook(n)!).sort(compareHooks).map(hookName);
    expect(sorted).toEqual(['final.hidden', 'layers.2.mlp.in', 'layers.2.mlp.down_in', 'layers.2.resid_out',
      'layers.10.mlp.in', 'layers.10.resid_out']);
  });

  it('names every capture point discovery finds: one per site per layer of config.json, each with its parsed layer and site', async () => {
    const cfg = JSON.parse(readFileSync(resolve(TINY, 'config.json'), 'utf8'));
    const info = await inspectModel(TINY);
    const expected: Hook[] = [{ layer: null, site: 'final.hidden' }, { layer: null, site: 'final.mean' }];
    for (let l = 0; l < cfg.num_hidden_layers; l++)
      for (const site of STORED_LAYER_SITES) expected.push({ layer: l, site });
    expect(info.points.map((p) => ({ layer: p.layer, site: p.site }))).toEqual(expected);
    for (const p of info.points) expect(parseHook(p.name)).toEqual({ layer: p.layer, site: p.site });
    // the head counts come from config.json (the caller reads it; discovery looks at the graph only)
    expect([info.arch.heads, info.arch.kvHeads, info.arch.family]).toEqual([cfg.num_attention_heads,
      cfg.num_key_value_heads, cfg.model_type]);
  });
});
