/**
 * The report page's script as one inline script. Its source is browser TypeScript under
 * client/ (entry client/main.ts), type-checked by client/tsconfig.json and bundled by esbuild.
 *
 * `npm run build` writes the bundle to dist/report/client.bundle.js, next to the compiled
 * html.js, and a built or published lobes reads that file: writing a report needs no
 * devDependency. Run from source (vitest, `node --import tsx`) there is no built file next to
 * this module, so the first page bundles client/main.ts in process with esbuild, which only a
 * source checkout has (a devDependency). Both paths use the same esbuild options, so they give
 * the same script.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import type { BuildOptions, BuildResult } from 'esbuild';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { PACKAGE_ROOT } from '../version.js';

/** File name of the built bundle, next to this module in dist/report/. */
export const CLIENT_BUNDLE_FILE = 'client.bundle.js';

/** The page script's entry, relative to the package root. */
export const CLIENT_ENTRY = 'src/report/client/main.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BUILT = path.join(HERE, CLIENT_BUNDLE_FILE);

// Paths in the bundle's module comments are relative to the package root, so the script does not
// depend on where the checkout lives or which directory the build ran from.
const OPTIONS: BuildOptions = {
  entryPoints: [CLIENT_ENTRY],
  tsconfig: 'src/report/client/tsconfig.json',
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  charset: 'ascii',
  legalComments: 'none',
  write: false,
  logLevel: 'silent',
};

let cache: string | null = null;

/** The page script: the built bundle when there is one, else bundled now from source (once per process). */
export function clientScript(): string {
  if (cache === null) cache = existsSync(BUILT) ? readFileSync(BUILT, 'utf8') : bundleClient();
  return cache;
}

/** Bundle client/main.ts with esbuild (a devDependency: source checkouts only). */
export function bundleClient(): string {
  const entry = path.join(PACKAGE_ROOT, CLIENT_ENTRY);
  if (!existsSync(entry)) {
    throw new LobesError(`the report page script is not built (no ${BUILT}) and its source is missing`, { file: entry,
      hint: 'reinstall lobes, or run npm run build in a lobes checkout' });
  }
  const require = createRequire(import.meta.url);
  let esbuild: { buildSync(o: BuildOptions): BuildResult };
  try {
    esbuild = require('esbuild');
  } catch {
    throw new LobesError(`the report page script is not built (no ${BUILT}) and esbuild is not installed to bundle it`,
      { hint: 'run npm install (devDependencies) and npm run build in the lobes checkout' });
  }
  let result: BuildResult;
  try {
    result = esbuild.buildSync({ ...OPTIONS, absWorkingDir: PACKAGE_ROOT });
  } catch (e: any) {
    const first = e?.errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}` : undefined;
    throw new LobesError(
      `cannot bundle the report page script: ${first?.text ?? String(e?.message ?? e).split('\n')[0]}`,
      { file: entry, where, hint: 'run npm run typecheck' },
    );
  }
  const out = result.outputFiles?.[0]?.text;
  if (!out) throw new LobesError('esbuild produced no report page script', { file: entry });
  return out;
}

/** Bundle the page script and write it next to this module (the build step; returns the file). */
export function writeClientBundle(): string {
  writeFileAtomicSync(BUILT, bundleClient());
  return BUILT;
}
