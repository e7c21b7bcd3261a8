/**
 * The `lobes …` command lines that the documentation shows, read from the Markdown itself so that
 * a new page or a new example is picked up without editing a list.
 *
 * A command is a line of a shell code block (``` with no language, bash, sh, shell or console)
 * whose first word is `lobes`, or `npx lobes` (also after `&&`, as in `npm ci && npx lobes demo`).
 * Lines ending in `\` are joined with the next. A `# comment` outside quotes is dropped. A
 * `NAME=value` line earlier in the same block is kept as a variable the command may use ($NAME).
 * A synopsis (`lobes cluster RUN [--by LABEL]`: an option in brackets) describes a command's
 * form and is not a command; it is returned apart.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

export interface DocCommand {
  /** The Markdown file, relative to the repository root. */
  doc: string;
  /** 1-based line of the command's first line in the file. */
  line: number;
  /** The command as written (continuations joined, comment dropped, `npx ` kept). */
  command: string;
  /** `NAME=value` lines of the same block before the command, in order. */
  vars: string[];
}

const SHELL_LANGS = new Set(['', 'bash', 'sh', 'shell', 'console']);

/** The line without a trailing `# comment` that lies outside quotes. */
export function stripComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

const LOBES = /^(?:\$\s+)?(?:npx\s+)?lobes(?:\s|$)/;
/** A synopsis names its options in brackets: `[--json]`, `[SPEC]`. */
const SYNOPSIS = /\s\[(?:--?[a-z]|[A-Z])/;

export interface DocScan {
  commands: DocCommand[];
  synopses: DocCommand[];
}

/** Every command and synopsis in one Markdown text. */
export function scanMarkdown(doc: string, text: string): DocScan {
  const commands: DocCommand[] = [];
  const synopses: DocCommand[] = [];
  const lines = text.split('\n');
  let inShell: boolean | undefined; // undefined: outside any block
  let vars: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim();
    const fence = /^(`{3,}|~{3,})\s*([\w-]*)/.exec(trimmed);
    if (fence) {
      if (inShell === undefined) {
        inShell = SHELL_LANGS.has(fence[2].toLowerCase());
        vars = [];
      } else {
        inShell = undefined;
      }
      continue;
    }
    if (!inShell) continue;
    const first = i;
    let joined = trimmed;
    while (joined.endsWith('\\') && i + 1 < lines.length) {
      joined = joined.slice(0, -1).trimEnd() + ' ' + lines[++i].trim();
    }
    const line = stripComment(joined);
    if (/^[A-Za-z_][A-Za-z0-9_]*=\S/.test(line)) {
      vars.push(line);
      continue;
    }
    for (const part of line.split(/\s+&&\s+/)) {
      const command = part.trim().replace(/^\$\s+/, '');
      if (!LOBES.test(command)) continue;
      const entry = { doc, line: first + 1, command, vars: [...vars] };
      (SYNOPSIS.test(command) ? synopses : commands).push(entry);
    }
  }
  return { commands, synopses };
}

/** README.md and every docs/*.md of the repository at root, in that order. */
export function docFiles(root: string, readdir: (dir: string) => string[]): string[] {
  const docs = readdir(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

export function scanDocs(root: string, readdir: (dir: string) => string[]): DocScan {
  const out: DocScan = { commands: [], synopses: [] };
  for (const doc of docFiles(root, readdir)) {
    const scan = scanMarkdown(doc, readFileSync(path.join(root, doc), 'utf8'));
    out.commands.push(...scan.commands);
    out.synopses.push(...scan.synopses);
  }
  return out;
}
