import { parseCommand } from './args.js';
import type { ModelInfo } from '../extract/types.js';

const spec = {
  usage: 'lobes inspect MODEL_DIR|FILE.gguf [--cache DIR] [--json]',
  help: `
Print a model's architecture (layers, hidden, intermediate, heads, kv-heads, vocab, dtype,
quantization), every capture point lobes found by graph structure (hook name, shape, and the
projections that read it), the graph inputs, and the execution providers available.
Only the graph file is read; weights in external data files are not loaded.
For a graph lobes cannot use, the error names the part of the Llama pattern that is missing.

  MODEL_DIR   a model folder (model.onnx, or genai_config.json's decoder file, or onnx/model.onnx)
              or an .onnx file, or a llama GGUF file (converted once into the cache)
  --cache DIR where converted GGUF models are kept (default $LOBES_CACHE/gguf or ~/.cache/lobes/gguf)
  --json      machine-readable output (stable under renaming of nodes and intermediate values)
`,
  options: { json: { type: 'boolean' }, cache: { type: 'string' } },
  positionals: [1, 1] as [number, number],
} as const;

/** The JSON form of `lobes inspect`: no intermediate value names (they are exporter-specific). */
export function inspectJson(info: ModelInfo): unknown {
  return {
    arch: info.arch,
    points: info.points.map((p) => ({
      name: p.name,
      shape: ['batch', p.dim],
      ...(p.projections ? { projections: p.projections } : {}),
    })),
    inputs: info.inputs,
    providers: info.providers,
  };
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
  lines.push(`capture points (${info.points.length}; each leaves the model as float32 [batch, dim] at the last real token):`);
  const w = Math.max(...info.points.map((p) => p.name.length));
  for (const p of info.points) {
    const proj = p.projections?.map((r) => `${r.proj}=${r.op} ${r.weight} (${r.layout} ${r.dIn}→${r.dOut}${r.bits ? `, int${r.bits}/${r.blockSize}` : ''})`).join('; ');
    lines.push(`  ${p.name.padEnd(w)}  [batch, ${p.dim}]${proj ? `  ${proj}` : ''}`);
  }
  lines.push('');
  lines.push('graph inputs:');
  for (const i of info.inputs) lines.push(`  ${i.name}  ${i.dtype} [${i.shape.join(', ')}]`);
  lines.push('');
  lines.push('execution providers:');
  for (const p of info.providers) lines.push(`  ${p.name.padEnd(8)} ${p.available ? 'available' : 'missing'}${p.note ? `  (${p.note})` : ''}`);
  return lines.join('\n') + '\n';
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(argv, spec);
  if (!parsed) return 0;
  const { inspectModel } = await import('../extract/engine.js');
  const { modelFolder } = await import('./convert.js');
  const model = await modelFolder(parsed.positionals[0]!, { cache: parsed.values.cache, quiet: !!parsed.values.json });
  const info = await inspectModel(model.dir);
  if (model.source && !parsed.values.json) process.stdout.write(`converted from ${model.source.path}\n`);
  if (parsed.values.json) process.stdout.write(JSON.stringify(model.source ? { ...(inspectJson(info) as object), source: model.source } : inspectJson(info), null, 2) + '\n');
  else process.stdout.write(inspectText(info));
  return 0;
}
