import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';

/** The package version from package.json (works from src/ and dist/). */
export const LOBES_VERSION: string = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'lobes') return pkg.version as string;
    } catch {
      /* keep looking upward */
    }
    dir = path.dirname(dir);
  }
  return '0.0.0';
})();

/** The package root (where package.json, models/ and docs/ live). */
export const PACKAGE_ROOT: string = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'lobes') return dir;
    } catch {
      /* keep looking upward */
    }
    dir = path.dirname(dir);
  }
  return process.cwd();
})();
