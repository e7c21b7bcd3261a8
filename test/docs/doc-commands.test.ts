/** Reading command lines out of Markdown (test/docs/doc-commands.ts), on a page written here. */
import { describe, it, expect } from 'vitest';
import { scanMarkdown, stripComment } from './doc-commands.js';

const PAGE = [
  'Text with `lobes report RUN` inline is not a command.',
  '',
  '```bash',
  'npm ci && npx lobes demo     # install, then the demo',
  'G=../models/x.gguf',
  'npx lobes eval $G --data "socialeval:D?lang=en" \\',
  '    --task iae --out "a # b"   # a comment',
  'ollama show --modelfile llama3.1:8b | grep ^FROM',
  'lobes cluster RUN|MATRIX_FILE [--labels FILE] [--by LABEL]',
  '```',
  '',
  '```ts',
  'lobes wanda runs/x',
  '```',
  '',
  '    lobes wanda RUN [--by LABEL]',
  '',
  '```',
  '$ lobes inspect model',
  '```',
].join('\n');

describe('command lines in Markdown', () => {
  const scan = scanMarkdown('p.md', PAGE);
  it('finds commands in shell blocks, after &&, across continuations, with the block variables', () => {
    expect(scan.commands.map((c) => [c.line, c.command, c.vars])).toEqual([
      [4, 'npx lobes demo', []],
      [6, 'npx lobes eval $G --data "socialeval:D?lang=en" --task iae --out "a # b"', ['G=../models/x.gguf']],
      [19, 'lobes inspect model', []],
    ]);
  });
  it('keeps synopses apart and reads no other language nor indented text', () => {
    expect(scan.synopses.map((c) => c.line)).toEqual([9]);
  });
  it('drops a comment only outside quotes', () => {
    expect(stripComment('lobes x --a "b # c" # d')).toBe('lobes x --a "b # c"');
    expect(stripComment("lobes x 'it#s'")).toBe("lobes x 'it#s'");
    expect(stripComment('lobes x --tag#1')).toBe('lobes x --tag#1');
  });
});
