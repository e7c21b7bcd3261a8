/**
 * Hook names: the vocabulary of capture points, shared by extraction, the store and the
 * analyses. A hook is a site, either of the whole model or of one decoder layer:
 *
 *   final.hidden             the final normalized hidden state (the input of lm_head)
 *   layers.{i}.mlp.in        the input of layer i's MLP (read by gate_proj and up_proj)
 *   layers.{i}.mlp.down_in   the input of layer i's down projection, act(gate) ⊙ up
 *   layers.{i}.resid_out     the residual stream after layer i (its sum with the MLP output)
 *   final.mean               final.hidden averaged over the text's real tokens (padding excluded)
 *   layers.{i}.resid_out.mean  layers.{i}.resid_out averaged over the text's real tokens
 *   layers.{i}.attn.weights  layer i's attention weights from the answering position: one row over
 *                            the positions per head, [heads, seq] (read by `lobes attend`, not stored
 *                            by `lobes extract`, whose values have one fixed width)
 *
 * Layers count from 0 along the residual stream. Only the canonical spelling is a hook: the
 * layer index is a decimal integer without sign or leading zeros (`layers.01.mlp.in` and
 * `layers.-1.mlp.in` are not hooks), so that parseHook and hookName are inverse and two
 * different strings never name the same hook.
 *
 * A new site is one entry in SITES; its family becomes a `--capture` choice.
 */

/** What a site is: its capture family, whether it repeats per layer, and what reads it. */
interface SiteSpec {
  /** Capture family (`lobes extract --capture`) the site belongs to. */
  readonly family: string;
  /** Whether there is one such site per decoder layer (`layers.{i}.SITE`). */
  readonly perLayer: boolean;
  /** Hugging Face module holding the projections that read it (`model.layers.{i}.MODULE.PROJ`). */
  readonly module: string | null;
  /** The projections reading its value, as Hugging Face names, in their usual order. */
  readonly projections: readonly string[];
  /** 'positions' when the value spans the sequence (one weight per position), so that no fixed-width store holds it. */
  readonly rows?: 'positions';
  /** How the value is reduced over the positions: at the last real token (the default) or averaged over the real tokens. */
  readonly pool?: 'mean';
  /** For a pooled site, the site whose per-position value it pools. */
  readonly of?: string;
  /** The same value in a Hugging Face model: a module and which side of it (`{i}` is the layer). */
  readonly hf: { readonly module: string; readonly side: 'input' | 'output'; readonly note?: string };
  /** The same value in TransformerLens' HookedTransformer (`{i}` is the layer), and how it relates. */
  readonly tl: { readonly hook: string; readonly note?: string } | null;
}

// TransformerLens' RMSNorm hooks its `hook_normalized` before the norm's weight multiplies (and
// from_pretrained folds that weight into the next matrices), so lobes' normalized points are its
// hook_normalized times the weight as Hugging Face applies it ((1 + w) for Gemma).
const TIMES_W =
  "times the norm's weight, which TransformerLens applies after this hook (and fold_ln moves into the next matrices)";
const SITES = {
  'final.hidden': { family: 'final', perLayer: false, module: null, projections: ['lm_head'],
    hf: { module: 'model.norm', side: 'output', note: 'output_hidden_states[-1]; the input of lm_head' },
    tl: { hook: 'ln_final.hook_normalized', note: TIMES_W } },
  'mlp.in': {
    family: 'mlp',
    perLayer: true,
    module: 'mlp',
    projections: ['gate_proj', 'up_proj'],
    hf: { module: 'model.layers.{i}.mlp', side: 'input',
      note:
        'the output of post_attention_layernorm, of pre_feedforward_layernorm in Gemma 2/3; read by gate_proj and up_proj, gate_up_proj in Phi-3' },
    tl: { hook: 'blocks.{i}.ln2.hook_normalized', note: TIMES_W },
  },
  'mlp.down_in': { family: 'mlp', perLayer: true, module: 'mlp', projections: ['down_proj'],
    hf: { module: 'model.layers.{i}.mlp.down_proj', side: 'input', note: 'act(gate_proj(x)) * up_proj(x)' },
    tl: { hook: 'blocks.{i}.mlp.hook_post' } },
  resid_out: { family: 'resid', perLayer: true, module: null, projections: [],
    hf: { module: 'model.layers.{i}', side: 'output',
      note:
        'output[0]; output_hidden_states[i + 1] for every layer but the last, whose entry is after the final norm' },
    tl: { hook: 'blocks.{i}.hook_resid_post' } },
  'final.mean': {
    family: 'mean',
    perLayer: false,
    module: null,
    projections: [],
    pool: 'mean',
    of: 'final.hidden',
    hf: { module: 'model.norm', side: 'output', note: 'averaged over the positions whose attention_mask is 1' },
    tl: { hook: 'ln_final.hook_normalized', note: 'times the norm weight, averaged over the real tokens' },
  },
  'resid_out.mean': {
    family: 'mean',
    perLayer: true,
    module: null,
    projections: [],
    pool: 'mean',
    of: 'resid_out',
    hf: { module: 'model.layers.{i}', side: 'output',
      note: 'output[0], averaged over the positions whose attention_mask is 1' },
    tl: { hook: 'blocks.{i}.hook_resid_post', note: 'averaged over the real tokens' },
  },
  'attn.weights': {
    family: 'attn',
    perLayer: true,
    module: 'self_attn',
    projections: [],
    rows: 'positions',
    hf: { module: 'model.layers.{i}.self_attn', side: 'output',
      note: "output[1] with eager attention, attentions[i] of output_attentions=True; the answering position's row" },
    tl: { hook: 'blocks.{i}.attn.hook_pattern', note: "the answering position's row" },
  },
} as const satisfies Record<string, SiteSpec>;

type Sites = typeof SITES;

/** Every site a hook can name. */
export type HookSite = keyof Sites;
/** Sites that exist once per decoder layer. */
export type LayerSite = { [S in HookSite]: Sites[S]['perLayer'] extends true ? S : never }[HookSite];
/** Sites of the whole model. */
export type ModelSite = Exclude<HookSite, LayerSite>;
/** Capture families: the groups of sites `lobes extract --capture` selects. */
export type CaptureFamily = Sites[HookSite]['family'];

/** A hook as data: a model-level site (layer null) or a layer site with its layer index. */
export type Hook = { layer: null; site: ModelSite } | { layer: number; site: LayerSite };

/** Every site, in the order capture points are listed within a layer. */
export const HOOK_SITES = Object.keys(SITES) as HookSite[];

/** Every capture family `lobes extract` stores (sites of one fixed width), in order of first appearance among the sites. */
export const CAPTURE_FAMILIES: CaptureFamily[] = [
  ...new Set(HOOK_SITES.filter((s) => !(SITES[s] as SiteSpec).rows).map((s) => SITES[s].family)),
];

/** The hook name of the final normalized hidden state. */
export const FINAL_HIDDEN = 'final.hidden';
/** The hook name of the final normalized hidden state averaged over the text's real tokens. */
export const FINAL_MEAN = 'final.mean';

const LAYER_PREFIX = 'layers.';

/** Whether a site exists once per layer. */
export function isLayerSite(site: HookSite): site is LayerSite {
  return SITES[site].perLayer;
}

/** The capture family of a site. */
export function siteFamily(site: HookSite): CaptureFamily {
  return SITES[site].family;
}

/** How a site's value is reduced over the positions: 'last' (the last real token) or 'mean' (the mean over the real tokens). */
export function sitePool(site: HookSite): 'last' | 'mean' {
  return (SITES[site] as SiteSpec).pool ?? 'last';
}

/** The site a pooled site averages (`final.mean` → `final.hidden`); the site itself when it is not pooled. */
export function pooledSite(site: HookSite): HookSite {
  return ((SITES[site] as SiteSpec).of ?? site) as HookSite;
}

/** The mean-pooled site of a last-token site (`resid_out` → `resid_out.mean`), or null when it has none. */
export function meanSiteOf(site: HookSite): HookSite | null {
  return HOOK_SITES.find((s) => (SITES[s] as SiteSpec).of === site) ?? null;
}

/** The Hugging Face module of the projections reading a site (null for none or lm_head). */
export function siteModule(site: HookSite): string | null {
  return SITES[site].module;
}

/** The projections reading a site's value, as Hugging Face names (`gate_proj`, `up_proj`, ...). */
export function siteProjections(site: HookSite): readonly string[] {
  return SITES[site].projections;
}

/** Where a site's value is in a Hugging Face model and in TransformerLens, `{i}` standing for the layer. */
export interface SiteEquivalents {
  huggingFace: { module: string; side: 'input' | 'output'; note: string | null };
  transformerLens: { hook: string; note: string | null } | null;
}

/** The Hugging Face module (and side) and the TransformerLens hook holding a site's value, as templates in `{i}`. */
export function siteEquivalents(site: HookSite): SiteEquivalents {
  const s = SITES[site] as SiteSpec;
  return {
    huggingFace: { module: s.hf.module, side: s.hf.side, note: s.hf.note ?? null },
    transformerLens: s.tl ? { hook: s.tl.hook, note: s.tl.note ?? null } : null,
  };
}

/** The same for one hook, with its layer filled in (`layers.3.mlp.in` → `model.layers.3.mlp`, `blocks.3.ln2.hook_normalized`). */
export function hookEquivalents(h: Hook): SiteEquivalents {
  const e = siteEquivalents(h.site);
  const fill = (t: string) => (h.layer === null ? t : t.replace(/\{i\}/g, String(h.layer)));
  return {
    huggingFace: { ...e.huggingFace, module: fill(e.huggingFace.module) },
    transformerLens: e.transformerLens ? { ...e.transformerLens, hook: fill(e.transformerLens.hook) } : null,
  };
}

/** The name of a hook: `final.hidden`, `layers.3.mlp.in`, ... */
export function hookName(h: Hook): string {
  if (h.layer === null) return h.site;
  if (!Number.isSafeInteger(h.layer) || h.layer < 0)
    throw new RangeError(`hook layer must be a non-negative integer, got ${h.layer} (site ${h.site})`);
  return `${LAYER_PREFIX}${h.layer}.${h.site}`;
}

/** The hook a name denotes, or null when it is not a canonical hook name of a known site. */
export function parseHook(name: string): Hook | null {
  if (Object.hasOwn(SITES, name)) {
    const site = name as HookSite;
    return isLayerSite(site) ? null : { layer: null, site };
  }
  if (!name.startsWith(LAYER_PREFIX)) return null;
  const dot = name.indexOf('.', LAYER_PREFIX.length);
  if (dot < 0) return null;
  const digits = name.slice(LAYER_PREFIX.length, dot);
  if (!/^(0|[1-9][0-9]*)$/.test(digits)) return null;
  const layer = Number(digits);
  if (!Number.isSafeInteger(layer)) return null;
  const site = name.slice(dot + 1);
  if (!Object.hasOwn(SITES, site) || !isLayerSite(site as HookSite)) return null;
  return { layer, site: site as LayerSite };
}

/**
 * Order of hooks: by layer (model-level sites first), then by site in HOOK_SITES order
 * (the order in which `lobes inspect` lists capture points).
 */
export function compareHooks(a: Hook, b: Hook): number {
  return (a.layer ?? -1) - (b.layer ?? -1) || HOOK_SITES.indexOf(a.site) - HOOK_SITES.indexOf(b.site);
}
