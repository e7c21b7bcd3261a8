/**
 * Layer selections (`--layers`): which decoder layers a command reads.
 *
 * A selection is canonicalised before it is recorded (canonicalLayerSpec), so that equal
 * selections get equal records: `0,0`, `00` and ` 0` are `0`; `0-1,1` and `1,0` are `0-1`.
 * It is resolved against the model's layer count when the model is open (parseLayerSelection),
 * where a layer the model lacks is refused, `last:99` on a 2-layer model included.
 */
import { UsageError, opt } from '../util/errors.js';
import { parseInteger } from '../util/parse.js';

const HINT = 'use all, last:N, or 0-based layers like 0,3,10-19';

type Parsed = { kind: 'all' } | { kind: 'last'; n: number } | { kind: 'list'; layers: number[] };

function parse(spec: string): Parsed {
  const s = spec.trim();
  if (s === '') throw new UsageError(`${opt('layers')} is empty`, HINT);
  if (s === 'all') return { kind: 'all' };
  const m = /^last:(.*)$/.exec(s);
  if (m) return { kind: 'last', n: parseInteger(m[1]!.trim(), opt('layers', 'last:N'), 1) };
  const out = new Set<number>();
  for (const part of s.split(',')) {
    const r = /^([^-]+)(?:-(.+))?$/.exec(part.trim());
    if (!r) throw new UsageError(`${opt('layers')}: cannot read ${JSON.stringify(part)}`, HINT);
    const a = parseInteger(r[1]!.trim(), `${opt('layers')}: a layer`, 0);
    const b = r[2] === undefined ? a : parseInteger(r[2].trim(), `${opt('layers')}: a layer`, 0);
    if (b < a) throw new UsageError(`${opt('layers')}: range ${part.trim()} runs backwards`);
    if (b - a > 1e6) throw new UsageError(`${opt('layers')}: range ${part.trim()} is longer than any model`);
    for (let l = a; l <= b; l++) out.add(l);
  }
  return { kind: 'list', layers: [...out].sort((x, y) => x - y) };
}

/**
 * The canonical text of a selection: `all`, `last:N`, or sorted ranges without repeats
 * (`0-1,3`). Unreadable selections, the empty one included, are usage errors.
 */
export function canonicalLayerSpec(spec: string): string {
  const p = parse(spec);
  if (p.kind === 'all') return 'all';
  if (p.kind === 'last') return `last:${p.n}`;
  const runs: string[] = [];
  const ls = p.layers;
  for (let i = 0; i < ls.length;) {
    let j = i;
    while (j + 1 < ls.length && ls[j + 1] === ls[j]! + 1) j++;
    runs.push(i === j ? String(ls[i]) : `${ls[i]}-${ls[j]}`);
    i = j + 1;
  }
  return runs.join(',');
}

/**
 * Resolve a selection against a model of `layers` decoder layers (0-based, sorted). A layer
 * past the model, or `last:N` with N above the count, is refused; `clamp` lets `last:N` take
 * every layer of a smaller model instead (a command's default, e.g. attend's last:20).
 */
export function parseLayerSelection(spec: string, layers: number, opts: { clamp?: boolean } = {}): number[] {
  const p = parse(spec);
  if (p.kind === 'all') return Array.from({ length: layers }, (_, i) => i);
  if (p.kind === 'last') {
    if (p.n > layers && !opts.clamp)
      throw new UsageError(`${opt('layers', `last:${p.n}`)}: the model has ${layers} layer${layers === 1 ? '' : 's'}`,
        `use ${opt('layers', `last:${layers}`)} or all`);
    const n = Math.min(p.n, layers);
    return Array.from({ length: n }, (_, i) => layers - n + i);
  }
  const past = p.layers.find((l) => l >= layers);
  if (past !== undefined)
    throw new UsageError(`${opt('layers')}: layer ${past} does not exist (the model has layers 0..${layers - 1})`);
  return p.layers;
}
