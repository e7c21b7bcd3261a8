#!/usr/bin/env node
// The formatter of the repository: dprint's TypeScript plugin (WebAssembly, from npm, so it runs
// offline) with the settings in dprint.json, width 120. `node tools/format.mjs` rewrites the files
// that are not formatted; `--check` only lists them and exits 1 when there are any (CI runs it).
// Files named on the command line are the only ones looked at; else every file dprint.json includes.
import { createFromBuffer } from '@dprint/formatter';
import { getPath } from '@dprint/typescript';
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const config = JSON.parse(readFileSync(path.join(root, 'dprint.json'), 'utf8'));
const { typescript: plugin, includes, excludes, ...global } = config;

const args = process.argv.slice(2);
const check = args.includes('--check');
const named = args.filter((a) => !a.startsWith('--'));

/** `**` any folders, `*` any name part: enough for dprint.json's patterns. */
function matcher(pattern) {
  const re = pattern.split('/').map((
    part,
  ) => (part === '**' ? '(?:.*/)?' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*') + '/')).join('');
  return new RegExp('^' + re.replace(/\(\?:\.\*\/\)\?$/, '.*').replace(/\/$/, '') + '$');
}
const include = includes.map(matcher);
const exclude = excludes.map((e) => e.replace(/\/$/, ''));

function walk(dir, out) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    const rel = path.relative(root, abs).split(path.sep).join('/');
    if (exclude.some((x) => rel === x || rel.startsWith(x + '/')) || e.name === '.git') continue;
    if (e.isDirectory()) walk(abs, out);
    else if (e.isFile() && include.some((m) => m.test(rel))) out.push(rel);
  }
  return out;
}

const files = named.length
  ? named.map((f) => path.relative(root, path.resolve(f)).split(path.sep).join('/'))
  : walk(root, []).sort();
const formatter = createFromBuffer(readFileSync(getPath()));
formatter.setConfig(global, plugin);

const unformatted = [];
for (const rel of files) {
  const abs = path.join(root, rel);
  const text = readFileSync(abs, 'utf8');
  let formatted;
  try {
    // dprint's hanging layout can move a line that a second pass moves again: format until stable
    formatted = text;
    for (let pass = 0; pass < 4; pass++) {
      const next = formatter.formatText({ filePath: abs, fileText: formatted });
      if (next === formatted) break;
      formatted = next;
    }
  } catch (e) {
    console.error(`format: ${rel}: ${String(e.message ?? e).split('\n')[0]}`);
    process.exitCode = 2;
    continue;
  }
  if (formatted === text) continue;
  unformatted.push(rel);
  if (!check) {
    // written beside and renamed over: an interrupted run leaves the file as it was
    writeFileSync(abs + '.format-tmp', formatted);
    renameSync(abs + '.format-tmp', abs);
  }
}
if (check) {
  for (const rel of unformatted) console.error(`format: ${rel} is not formatted (npm run format writes it)`);
  if (unformatted.length) process.exitCode = 1;
  else if (!process.exitCode) console.log(`format: ${files.length} files formatted`);
} else console.log(`format: ${unformatted.length} of ${files.length} files rewritten`);
