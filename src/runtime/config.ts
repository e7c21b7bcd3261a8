/**
 * A model's config files (Hugging Face config.json, onnxruntime-genai genai_config.json):
 * where they are and what discovery takes from them (src/runtime/discover.ts looks at the
 * graph only; these fill in what a graph may not show, such as the head counts).
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ConfigHints } from './discover.js';
import { readJsonFile } from '../store/json.js';

/** Folder holding config.json / genai_config.json: the model folder, or the parent of an onnx/ folder. */
export function configDir(modelDir: string, graphDir: string): string {
  const d = existsSync(modelDir) && statSync(modelDir).isDirectory() ? modelDir : graphDir;
  const has = (x: string) => existsSync(join(x, 'config.json')) || existsSync(join(x, 'genai_config.json'));
  if (!has(d) && basename(resolve(d)) === 'onnx' && has(dirname(resolve(d)))) return dirname(resolve(d));
  return d;
}

/** A JSON file's content, or null when it is missing or not JSON (the config files are optional). */
export function readJson(p: string): any {
  return readJsonFile(p, { fallback: null });
}

/** What config.json (first) and genai_config.json in `dir` say about the model. */
export function readConfigHints(dir: string): ConfigHints {
  const cfg = readJson(join(dir, 'config.json'));
  const genai = readJson(join(dir, 'genai_config.json'))?.model;
  const family = cfg?.model_type ?? genai?.type;
  const hints: ConfigHints = {
    heads: cfg?.num_attention_heads ?? genai?.decoder?.num_attention_heads ?? null,
    kvHeads: cfg?.num_key_value_heads ?? genai?.decoder?.num_key_value_heads ?? null,
    headDim: cfg?.head_dim ?? genai?.decoder?.head_size ?? null,
  };
  if (family !== undefined && family !== null) hints.family = String(family);
  return hints;
}

/** The model's context length as its config files declare it, and where that comes from. */
export interface ContextLimit {
  tokens: number;
  source: string;
}

/**
 * The context length declared in `dir`: config.json max_position_embeddings, else
 * genai_config.json context_length; null when neither says. (GGUF metadata and the graph's
 * own rotary cache are added by the consistency check, src/runtime/consistency.ts.)
 */
export function declaredContext(dir: string): ContextLimit | null {
  const cfg = readJson(join(dir, 'config.json'));
  const n = cfg?.max_position_embeddings;
  if (Number.isInteger(n) && n > 0) return { tokens: n, source: 'config.json max_position_embeddings' };
  const g = readJson(join(dir, 'genai_config.json'))?.model?.context_length;
  if (Number.isInteger(g) && g > 0) return { tokens: g, source: 'genai_config.json context_length' };
  return null;
}

/** The decoder layer count declared in `dir` (config.json num_hidden_layers, else genai_config.json's decoder); null when neither says. */
export function declaredLayers(dir: string): number | null {
  const n = readJson(join(dir, 'config.json'))?.num_hidden_layers ??
    readJson(join(dir, 'genai_config.json'))?.model?.decoder?.num_hidden_layers;
  return Number.isInteger(n) && n > 0 ? n : null;
}
