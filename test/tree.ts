/** sha256 of every file under a folder, by relative path: "byte-identical" checks in the refusal tests. */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

export function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  if (statSync(dir).isFile()) return { '.': createHash('sha256').update(readFileSync(dir)).digest('hex') };
  const walk = (d: string) => {
    for (const n of readdirSync(d).sort()) {
      const p = path.join(d, n);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (!st.isFile()) out[path.relative(dir, p)] = 'not a regular file';
      else out[path.relative(dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}
