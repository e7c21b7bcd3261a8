/**
 * `--intervene SPEC` (repeatable) of the model commands: `HOOK:OP[:VALUE][:last]`, e.g.
 *
 *   layers.3.resid_out:add:direction.npy    add a vector (a float32 .npy of shape [width], or a .json array)
 *   layers.3.resid_out:add:direction.json:last   the same at each text's last token only
 *   layers.3.mlp.down_in:scale:0.5          scale by a number (or a vector file, component by component)
 *   layers.1.mlp.in:replace:vector.npy      replace by a vector (or one number)
 *   layers.5.mlp.down_in:zero               zero (no value)
 *
 * The hook, the operation and the vector's width are checked against the model when the
 * engine opens (src/runtime/intervene.ts); here the spec's form and the value's file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { UsageError, LobesError } from '../util/errors.js';
import { parseNpy } from '../cluster/npy.js';
import { readJsonFile } from '../store/json.js';
import { INTERVENTION_OPS } from '../runtime/intervene.js';
import type { Intervention, InterventionOp } from '../runtime/types.js';

/** The help lines of --intervene, for each command's help. */
export const INTERVENE_HELP = `  --intervene SPEC     edit an activation inside the model in every forward pass, seen by
                       everything after it (repeatable, applied in order): HOOK:OP[:VALUE][:last],
                       OP add (a vector: a float32 .npy of shape [width] or a .json array, or a
                       number), scale (a number or a vector), replace (a vector or a number),
                       zero; :last edits only each text's last token (docs/intervene.md);
                       recorded with the run, and part of what a rerun must repeat`;

export const INTERVENE_OPTION = { intervene: { type: 'string', multiple: true, key: 'interventions' } } as const;

/** Every --intervene of a command line, parsed; an empty list when none. */
export function interventionsOf(v: Record<string, any>): Intervention[] {
  const specs: string[] = v.intervene === undefined ? [] : Array.isArray(v.intervene) ? v.intervene : [v.intervene];
  return specs.map(parseInterventionSpec);
}

/** One `HOOK:OP[:VALUE][:last]`. */
export function parseInterventionSpec(spec: string): Intervention {
  const bad = (why: string) =>
    new UsageError(`--intervene ${JSON.stringify(spec)}: ${why}`,
      'give HOOK:OP[:VALUE][:last], e.g. layers.3.resid_out:add:direction.npy or layers.3.mlp.down_in:scale:0.5');
  const parts = spec.split(':');
  let positions: 'all' | 'last' = 'all';
  if (parts.length > 2 && parts[parts.length - 1] === 'last') {
    positions = 'last';
    parts.pop();
  }
  const [hook, op, ...rest] = parts;
  if (!hook || !op) throw bad('needs a hook and an operation');
  if (!(INTERVENTION_OPS as readonly string[]).includes(op))
    throw bad(`unknown operation "${op}" (known: ${INTERVENTION_OPS.join(', ')})`);
  // a value may be a path with colons (a Windows drive letter): join the rest back
  const value = rest.length ? rest.join(':') : undefined;
  const iv: Intervention = { hook, op: op as InterventionOp, positions };
  if (value === undefined || value === '') {
    if (op !== 'zero') throw bad(`${op} needs a value (a number, or a .npy or .json vector)`);
    return iv;
  }
  if (op === 'zero') throw bad('zero takes no value');
  iv.value = readValue(value, bad);
  return iv;
}

/** A number, or the vector of a .npy or .json file. */
function readValue(value: string, bad: (why: string) => Error): number | Float32Array {
  if (/\.npy$/i.test(value)) return readNpyVector(value);
  if (/\.json$/i.test(value)) return readJsonVector(value);
  const x = Number(value);
  if (value.trim() === '' || !Number.isFinite(x))
    throw bad(`the value "${value}" is neither a number nor a .npy or .json file`);
  return x;
}

function readNpyVector(file: string): Float32Array {
  if (!existsSync(file)) throw new LobesError('intervention vector file not found', { file });
  const { shape, data } = parseNpy(readFileSync(file), file);
  const n = data.length;
  if (!(shape.length === 1 || (shape.length === 2 && shape[0] === 1)))
    throw new LobesError(
      `an intervention vector has shape [width] (or [1, width]), this file has [${shape.join(', ')}]`,
      { file },
    );
  return Float32Array.from(data.subarray(0, n));
}

function readJsonVector(file: string): Float32Array {
  if (!existsSync(file)) throw new LobesError('intervention vector file not found', { file });
  const j = readJsonFile(file) as unknown;
  if (!Array.isArray(j) || j.length === 0 || !j.every((x) => typeof x === 'number' && Number.isFinite(x)))
    throw new LobesError('an intervention vector file holds one JSON array of finite numbers', { file });
  return Float32Array.from(j as number[]);
}
