/**
 * Writes src/report/client/sections.gen.ts, the page script's list of sections, from the
 * registry (the page script is bundled for the browser and cannot import the registry's node
 * code): `npx tsx src/analysis/generate.ts`. test/analysis/registry.test.ts checks that the
 * file is what this writes now, so a registered section cannot be missing from the page, nor an
 * unregistered one on it.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pageSections } from './registry.js';

/** The path of the generated module, relative to the package root. */
export const SECTIONS_MODULE = 'src/report/client/sections.gen.ts';

/** A string literal in single quotes. */
const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The text of the generated module. */
export function sectionsModuleText(): string {
  const secs = pageSections();
  return [
    '// Generated from src/analysis/registry.ts by `npx tsx src/analysis/generate.ts`; do not edit.',
    "// The page's sections in page order: each registered analysis's, then the run's provenance.",
    "import type { Section } from './section.js';",
    ...secs.map((s) => `import { ${s.export} } from './sections/${s.module}.js';`),
    '',
    '/** Id and title of each section, as registered (the Section objects must say the same). */',
    `export const SECTION_IDS: { id: string; title: string }[] = [${
      secs.map((s) => `{ id: ${quote(s.id)}, title: ${quote(s.title)} }`).join(', ')
    }];`,
    '',
    'export const SECTIONS: Section[] = [',
    ...secs.map((s) => `  ${s.export},`),
    '];',
    '',
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  writeFileSync(path.join(root, SECTIONS_MODULE), sectionsModuleText());
  process.stdout.write(`wrote ${SECTIONS_MODULE}\n`);
}
