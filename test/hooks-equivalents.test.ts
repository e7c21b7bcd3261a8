/**
 * The capture names' Hugging Face equivalents (src/hooks.ts siteEquivalents) are the modules the
 * golden generators hook: every test/goldens/*.py that records a capture point from a transformers
 * model registers a forward (pre-)hook on a module, or reads output_hidden_states, and lobes'
 * tests hold lobes' values equal to those records. So the table a user reads in `lobes inspect`
 * and docs/capture.md must name the same module and the same side (input for a pre-hook, output
 * for a forward hook) as the code the goldens came from. A hook on the input of gate_proj / up_proj
 * (gate_up_proj) counts as the input of the MLP, which hands them its input unchanged.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOOK_SITES, hookEquivalents, parseHook, siteEquivalents, type HookSite } from '../src/hooks.js';
import { inspectJson } from '../src/cli/inspect.js';

const GOLDENS = join(import.meta.dirname, 'goldens');

/** The projections that read a gated MLP's input as it is. */
const MLP_READERS = ['gate_proj', 'up_proj', 'gate_up_proj'];

interface Registration {
  file: string;
  site: string;
  module: string;
  side: 'input' | 'output';
}

/**
 * Every `X.register_forward(_pre)_hook(...)` of the generators that records a capture point: its
 * module, and the side it records (a pre-hook sees the input; a forward hook records the input
 * when its function reads `inputs[0]` / `i[0]`, else the output).
 */
function registrations(): Registration[] {
  const out: Registration[] = [];
  for (const f of readdirSync(GOLDENS).filter((n) => n.endsWith('.py'))) {
    const src = readFileSync(join(GOLDENS, f), 'utf8');
    const re =
      /(\w+(?:\.\w+)*)\.register_forward(_pre)?_hook\(([^\n]*?)f?"(layers\.\{\w+\}\.[\w.]+|final\.hidden)"[^\n]*/g;
    for (const m of src.matchAll(re)) {
      const site = m[4]!.replace(/^layers\.\{\w+\}\./, '');
      // `layer.X` (a loop over model.model.layers) is model.layers.{i}.X; `model.model.X` is model.X
      const module = m[1]!.replace(/^layer\b/, 'model.layers.{i}').replace(/^model\.model\./, 'model.');
      let side: 'input' | 'output' = 'input';
      if (!m[2]) {
        const call = m[3]!;
        const named = /^\s*(\w+)\($/.exec(call);
        let body = m[0];
        if (named) {
          const at = src.indexOf(`def ${named[1]}(`);
          expect(at, `${f}: def ${named[1]}`).toBeGreaterThanOrEqual(0);
          body = src.slice(at, src.indexOf('return fn', at));
        }
        side = /\b(inputs|inp|i)\[0\]/.test(body) ? 'input' : 'output';
      }
      out.push({ file: f, site, module, side });
    }
  }
  return out;
}

describe('capture names in Hugging Face and TransformerLens terms', () => {
  const regs = registrations().filter((r) => (HOOK_SITES as readonly string[]).includes(r.site));

  it('the generators hook what the table names', () => {
    // the generators hook all four stored last-token sites between them
    expect(new Set(regs.map((r) => r.site))).toEqual(new Set(['mlp.in', 'mlp.down_in', 'resid_out', 'final.hidden']));
    for (const r of regs) {
      const e = siteEquivalents(r.site as HookSite).huggingFace;
      const what = `${r.file}: ${r.module} (${r.side}) for ${r.site}`;
      expect(r.side, what).toBe(e.side);
      if (r.module === e.module) continue;
      // a gated MLP hands its input unchanged to gate_proj and up_proj (Phi-3: gate_up_proj), so a
      // hook on their input is the MLP's input; no other module stands for another
      expect(MLP_READERS.map((p) => `model.layers.{i}.mlp.${p}`), what).toContain(r.module);
      expect(e.module, what).toBe('model.layers.{i}.mlp');
    }
  });

  it('fills the layer in, and every site has both names', () => {
    expect(hookEquivalents(parseHook('layers.7.mlp.in')!)).toMatchObject({
      huggingFace: { module: 'model.layers.7.mlp', side: 'input' },
      transformerLens: { hook: 'blocks.7.ln2.hook_normalized' },
    });
    expect(hookEquivalents(parseHook('layers.12.resid_out')!).transformerLens!.hook).toBe('blocks.12.hook_resid_post');
    expect(hookEquivalents(parseHook('final.hidden')!).huggingFace.module).toBe('model.norm');
    for (const s of HOOK_SITES) {
      const e = siteEquivalents(s);
      expect(e.huggingFace.module, s).toMatch(/^model\./);
      expect(e.transformerLens?.hook, s).toMatch(/^(blocks\.\{i\}\.|ln_final\.)/);
    }
  });

  it('lobes inspect --json gives each point its names', () => {
    const info = {
      arch: { family: 'llama', layers: 2, hidden: 8, intermediate: 16, heads: 2, kvHeads: 1, vocab: 10, dtype: 'fp32',
        quantization: null },
      points: [{ name: 'layers.1.mlp.down_in', dim: 16 }, { name: 'final.hidden', dim: 8 }],
      inputs: [],
      providers: [],
    } as any;
    const j = inspectJson(info) as any;
    expect(j.points[0].huggingFace.module).toBe('model.layers.1.mlp.down_proj');
    expect(j.points[0].transformerLens.hook).toBe('blocks.1.mlp.hook_post');
    expect(j.points[1].huggingFace).toMatchObject({ module: 'model.norm', side: 'output' });
  });
});
