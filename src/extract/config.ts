/**
 * A model's config files (Hugging Face config.json, onnxruntime-genai genai_config.json):
 * where they are and what discovery takes from them (src/extract/discover.ts looks at the
 * graph only; these fill in what a graph may not show, such as the head counts).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ConfigHints } from './discover.js';

/** Folder holding config.json / genai_config.json: the model folder, or the parent of an onnx/ folder. */
export function configDir(modelDir: string, graphDir: string): string {
  const d = existsSync(modelDir) && statSync(modelDir).isDirectory() ? modelDir : graphDir;
  const has = (x: string) => existsSync(join(x, 'config.json')) || existsSync(join(x, 'genai_config.json'));
  if (!has(d) && basename(resolve(d)) === 'onnx' && has(dirname(resolve(d)))) return dirname(resolve(d));
  return d;
}

/** A JSON file's content, or null when it is missing or not JSON (the config files are optional). */
function readJson(p: string): any {
  try {
    return existsSync(p) ? JSON.parse(readFileSync(p, 'utf8')) : null;
  } catch {
    return null;
  }
}

/** What config.json (first) and genai_config.json in `dir` say about the model. */
export function readConfigHints(dir: string): ConfigHints {
  const cfg = readJson(join(dir, 'config.json'));
  const genai = readJson(join(dir, 'genai_config.json'))?.model;
  const family = cfg?.model_type ?? genai?.type;
  const hints: ConfigHints = {
    heads: cfg?.num_attention_heads ?? genai?.decoder?.num_attention_heads ?? null,
    kvHeads: cfg?.num_key_value_heads ?? genai?.decoder?.num_key_value_heads ?? null,
  };
  if (family !== undefined && family !== null) hints.family = String(family);
  return hints;
}
