import { hookEquivalents, isLayerSite, parseHook, siteEquivalents, type HookSite } from '../hooks.js';
import { parseCommand } from './args.js';
import { LobesError } from '../util/errors.js';
import { HELP, modelArg, MODEL_OPTIONS, JSON_OPTION } from './options.js';
import type { ModelInfo } from '../runtime/types.js';

const spec = {
  usage: 'lobes inspect --model MODEL_DIR|FILE.gguf|CHECKPOINT_DIR [--cache DIR] [--json] [--strict]',
  help: `
Print a model's architecture (layers, hidden, intermediate, heads, kv-heads, vocab, dtype,
quantization), every capture point lobes found by graph structure (hook name, shape, and the
projections that read it), the graph inputs, and the execution providers available.
Only the graph file is read; weights in external data files are not loaded.
For a graph lobes cannot use, the error names the part of the Llama pattern that is missing.

It also reads what the exporter baked into the graph (the RoPE base and scaling from the
inv_freq constant or the cos/sin caches, the RMSNorm epsilon, heads and head dimension) and
compares it with config.json, genai_config.json and GGUF metadata: every disagreement is a
warning naming both values (docs/capture.md).

${HELP.model}; a folder may hold
                       model.onnx, genai_config.json's decoder file or onnx/model.onnx, or
                       be an .onnx file
${HELP.cache}
  --json               machine-readable output (stable under renaming of nodes and intermediate values)
  --strict             exit 1 when the graph disagrees with its config files
`,
  options: { ...MODEL_OPTIONS, ...JSON_OPTION, strict: { type: 'boolean' } },
  positionals: [0, 1] as [number, number],
} as const;

/** The JSON form of `lobes inspect`: no intermediate value names (they are exporter-specific). */
export function inspectJson(info: ModelInfo): unknown {
  return {
    arch: info.arch,
    points: info.points.map((p) => {
      const h = parseHook(p.name);
      const e = h ? hookEquivalents(h) : null;
      return {
        name: p.name,
        shape: ['batch', p.dim],
        ...(p.projections ? { projections: p.projections } : {}),
        ...(e ? { huggingFace: e.huggingFace, transformerLens: e.transformerLens } : {}),
      };
    }),
    inputs: info.inputs,
    providers: info.providers,
    ...(info.check
      ? { graph: info.check.graph, declared: info.check.declared, context: info.check.context,
        problems: info.check.problems }
      : {}),
  };
}

const num = (x: number) => (Math.abs(x) >= 100 ? String(Math.round(x)) : String(Number(x.toPrecision(4))));

/** The consistency section: what the graph computes with, what each config file says, and the disagreements. */
function checkText(info: ModelInfo): string[] {
  const c = info.check;
  if (!c) return [];
  const g = c.graph;
  const lines = ['', 'read from the graph (what the exporter baked in):'];
  lines.push(
    `  RoPE base      ${
      g.ropeTheta !== null
        ? `${num(g.ropeTheta)} (${g.ropeSource}, rotary dim ${g.rotaryDim}${
          g.ropeScaled ? ', scaled frequencies' : ''
        }${g.ropePositions ? `, ${g.ropePositions} positions` : ''})`
        : 'not found'
    }`,
  );
  lines.push(`  RMSNorm eps    ${g.rmsNormEps.length ? g.rmsNormEps.map(num).join(', ') : 'not found'}`);
  lines.push(`  heads          ${g.heads ?? '?'} (kv ${g.kvHeads ?? '?'}), head dim ${g.headDim ?? '?'}`);
  for (const d of c.declared) {
    const parts: string[] = [];
    if (d.ropeTheta !== undefined)
      parts.push(
        `RoPE base ${num(d.ropeTheta)}${d.ropeThetaField ? ` (${d.ropeThetaField})` : ''}${
          d.ropeScaling ? `, ${d.ropeScaling.type} scaling` : ''
        }`,
      );
    if (d.rmsNormEps !== undefined) parts.push(`eps ${num(d.rmsNormEps)}`);
    if (d.heads !== undefined) parts.push(`heads ${d.heads} (kv ${d.kvHeads ?? '?'})`);
    if (d.headDim !== undefined) parts.push(`head dim ${d.headDim}`);
    if (d.contextLength !== undefined) parts.push(`context ${d.contextLength}`);
    lines.push(`  ${d.source} says: ${parts.join(', ') || 'nothing to compare'}`);
  }
  if (c.context) lines.push(`  context limit  ${c.context.tokens} tokens (${c.context.source})`);
  if (!c.declared.length) lines.push('  no config.json, genai_config.json or GGUF file to compare with');
  else if (!c.problems.length) lines.push('  the graph agrees with its config files');
  for (const p of c.problems) lines.push(`  WARNING: ${p}`);
  return lines;
}

/** Each capture site the model has, once: the Hugging Face module and the TransformerLens hook that hold the same value. */
function equivalentsText(info: ModelInfo): string[] {
  const sites: HookSite[] = [];
  for (const p of info.points) {
    const h = parseHook(p.name);
    if (h && !sites.includes(h.site)) sites.push(h.site);
  }
  if (!sites.length) return [];
  const lines = ['', 'the same values in Hugging Face transformers and TransformerLens (i = layer; docs/capture.md):'];
  const names = sites.map((s) => (isLayerSite(s) ? `layers.{i}.${s}` : s));
  const w = Math.max(...names.map((n) => n.length));
  sites.forEach((s, k) => {
    const e = siteEquivalents(s);
    lines.push(
      `  ${names[k]!.padEnd(w)}  HF: ${e.huggingFace.side} of ${e.huggingFace.module}${
        e.huggingFace.note ? ` · ${e.huggingFace.note}` : ''
      }`,
    );
    if (e.transformerLens)
      lines.push(
        `  ${''.padEnd(w)}  TL: ${e.transformerLens.hook}${
          e.transformerLens.note ? ` · ${e.transformerLens.note}` : ''
        }`,
      );
  });
  return lines;
}

export function inspectText(info: ModelInfo): string {
  const a = info.arch;
  const lines: string[] = [];
  lines.push(`model      ${info.dir}`);
  lines.push(`family     ${a.family}`);
  lines.push(`layers     ${a.layers}`);
  lines.push(`hidden     ${a.hidden}`);
  lines.push(`intermed.  ${a.intermediate}`);
  lines.push(`heads      ${a.heads ?? '?'}`);
  lines.push(`kv-heads   ${a.kvHeads ?? '?'}`);
  lines.push(`vocab      ${a.vocab}`);
  lines.push(`dtype      ${a.dtype}`);
  lines.push(`quant.     ${a.quantization ?? 'none'}`);
  lines.push('');
  lines.push(
    `capture points (${info.points.length}; each leaves the model as float32 [batch, dim], at the last real token; *.mean averaged over the real tokens):`,
  );
  const w = Math.max(...info.points.map((p) => p.name.length));
  for (const p of info.points) {
    const proj = p.projections?.map((r) =>
      `${r.proj}=${r.op} ${r.weight} (${r.layout} ${r.dIn}→${r.dOut}${r.bits ? `, int${r.bits}/${r.blockSize}` : ''})`
    ).join('; ');
    lines.push(`  ${p.name.padEnd(w)}  [batch, ${p.dim}]${proj ? `  ${proj}` : ''}`);
  }
  lines.push(...equivalentsText(info));
  lines.push('');
  lines.push('graph inputs:');
  for (const i of info.inputs) lines.push(`  ${i.name}  ${i.dtype} [${i.shape.join(', ')}]`);
  lines.push(...checkText(info));
  lines.push('');
  lines.push('execution providers:');
  for (const p of info.providers)
    lines.push(`  ${p.name.padEnd(8)} ${p.available ? 'available' : 'missing'}${p.note ? `  (${p.note})` : ''}`);
  return lines.join('\n') + '\n';
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(argv, spec);
  if (!parsed) return 0;
  const { model: modelArgument } = modelArg(parsed, spec.usage);
  const { inspectModel } = await import('../runtime/engine.js');
  const { modelFolder } = await import('./convert.js');
  const model = await modelFolder(modelArgument, { cache: parsed.values.cache, quiet: !!parsed.values.json });
  const info = await inspectModel(model.dir);
  if (model.source && !parsed.values.json) process.stdout.write(`converted from ${model.source.path}\n`);
  if (parsed.values.json)
    process.stdout.write(
      JSON.stringify(model.source ? { ...(inspectJson(info) as object), source: model.source } : inspectJson(info),
        null, 2) + '\n',
    );
  else process.stdout.write(inspectText(info));
  const problems = info.check?.problems ?? [];
  for (const p of problems) process.stderr.write(`lobes inspect: warning: ${modelArgument}: ${p}\n`);
  if (problems.length && parsed.values.strict) {
    throw new LobesError(
      `the model is not what its folder says (${problems.length} disagreement${
        problems.length > 1 ? 's' : ''
      } between the graph and its config files; first: ${problems[0]})`,
      { file: modelArgument, hint: 're-export the model so the graph matches its config' },
    );
  }
  return 0;
}
