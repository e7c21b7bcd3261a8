/**
 * A model's display name from the record a run, an evaluation or attention results keep of it:
 * the GGUF file's name without `.gguf` when the model was given as a GGUF (its converted folder
 * is a cache folder named by a hash), else the model folder's name; for a random-weights control,
 * the model it copies.
 */
import * as path from 'node:path';

/** A model record as runs, evaluations and attention results write it. */
export interface ModelRecord {
  dir?: string;
  source?: { format?: string; path?: string } | null;
  control?: { source?: string } | null;
}

const stripGguf = (f: string) => f.replace(/\.gguf$/i, '');

/** The model's name: the GGUF file name or checkpoint folder name, else the model folder's name (for a control: the model it copies). */
export function modelName(m: ModelRecord | null | undefined): string {
  if (!m) return 'unknown model';
  if ((m.source?.format === 'gguf' || m.source?.format === 'hf-checkpoint') && m.source.path)
    return stripGguf(path.basename(m.source.path));
  if (m.control?.source) return stripGguf(path.basename(m.control.source));
  return m.dir ? stripGguf(path.basename(m.dir)) : 'unknown model';
}
