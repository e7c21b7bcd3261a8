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
}

const SITES = {
  'final.hidden': { family: 'final', perLayer: false, module: null, projections: ['lm_head'] },
  'mlp.in': { family: 'mlp', perLayer: true, module: 'mlp', projections: ['gate_proj', 'up_proj'] },
  'mlp.down_in': { family: 'mlp', perLayer: true, module: 'mlp', projections: ['down_proj'] },
  resid_out: { family: 'resid', perLayer: true, module: null, projections: [] },
  'final.mean': { family: 'mean', perLayer: false, module: null, projections: [], pool: 'mean', of: 'final.hidden' },
  'resid_out.mean': { family: 'mean', perLayer: true, module: null, projections: [], pool: 'mean', of: 'resid_out' },
  'attn.weights': { family: 'attn', perLayer: true, module: 'self_attn', projections: [], rows: 'positions' },
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
export const CAPTURE_FAMILIES: CaptureFamily[] = [...new Set(HOOK_SITES.filter((s) => !(SITES[s] as SiteSpec).rows).map((s) => SITES[s].family))];

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

/** The name of a hook: `final.hidden`, `layers.3.mlp.in`, ... */
export function hookName(h: Hook): string {
  if (h.layer === null) return h.site;
  if (!Number.isSafeInteger(h.layer) || h.layer < 0) throw new RangeError(`hook layer must be a non-negative integer, got ${h.layer} (site ${h.site})`);
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
