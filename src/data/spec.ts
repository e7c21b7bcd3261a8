import { UsageError } from '../util/errors.js';

/** A parsed dataset spec: `KIND:PATH?key=value&...`. */
export interface ParsedSpec {
  kind: string;
  path: string;
  params: Map<string, string>;
  /** The spec as given. */
  raw: string;
}

export function parseSpec(spec: string): ParsedSpec {
  const s = spec.trim();
  if (!s)
    throw new UsageError('empty dataset spec',
      'try builtin:social, socialeval:DIR, jsonl:FILE?text=...&label=..., csv:FILE?...');
  if (s === 'builtin') return { kind: 'builtin', path: '', params: new Map(), raw: spec };
  const colon = s.indexOf(':');
  if (colon <= 0)
    throw new UsageError(`dataset spec ${JSON.stringify(spec)} has no kind`,
      'write KIND:PATH, e.g. builtin:social, socialeval:DIR, jsonl:FILE?text=text&label=label');
  const kind = s.slice(0, colon).toLowerCase();
  const rest = s.slice(colon + 1);
  const q = rest.indexOf('?');
  const path = q < 0 ? rest : rest.slice(0, q);
  const params = new Map<string, string>();
  if (q >= 0) {
    for (const part of rest.slice(q + 1).split('&')) {
      if (!part) continue;
      const eq = part.indexOf('=');
      const dec = (x: string) => {
        try {
          return decodeURIComponent(x);
        } catch {
          throw new UsageError(`dataset spec ${JSON.stringify(spec)}: bad percent-encoding in ${JSON.stringify(x)}`,
            'write %25 for a literal %');
        }
      };
      const k = dec(eq < 0 ? part : part.slice(0, eq)).trim();
      const v = eq < 0 ? '1' : dec(part.slice(eq + 1));
      if (params.has(k)) throw new UsageError(`dataset spec ${JSON.stringify(spec)} gives ${k} twice`);
      params.set(k, v);
    }
  }
  return { kind, path, params, raw: spec };
}

/**
 * Throw a usage error for any key not in `allowed`. The hint lists what the spec accepts, or,
 * where it accepts nothing, `none` (what to write instead).
 */
export function checkParams(p: ParsedSpec, allowed: string[], none?: string): void {
  for (const k of p.params.keys()) {
    if (!allowed.includes(k))
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: unknown option ${JSON.stringify(k)}`,
        allowed.length ? `${p.kind}: accepts ${allowed.join(', ')}` : (none ?? `${p.kind}: takes no options`));
  }
}

/** Render the spec back in a stable order (used as Dataset.spec). */
export function formatSpec(kind: string, path: string, params: Map<string, string>): string {
  const keys = [...params.keys()].sort();
  const q = keys.map((k) => `${k}=${encodeQ(params.get(k)!)}`).join('&');
  return `${kind}:${path}${q ? '?' + q : ''}`;
}

function encodeQ(v: string): string {
  return v.replace(/[%&?=\s]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

export function boolParam(p: ParsedSpec, key: string): boolean {
  const v = p.params.get(key);
  if (v === undefined) return false;
  const l = v.toLowerCase();
  if (['1', 'true', 'yes', 'include', 'on'].includes(l)) return true;
  if (['0', 'false', 'no', 'exclude', 'off'].includes(l)) return false;
  throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: ${key}=${JSON.stringify(v)} is not a yes/no value`,
    'use 1 or 0');
}
