/**
 * Joining record chunks (concatAtomic, src/store/records.ts): the joined file is the bytes of
 * the sources in order with their size and sha256 (computed here with node:crypto), and a
 * source that changed since its index entry is refused before anything is written: an earlier
 * joined file stays as it was and no temporary file is left.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { concatAtomic } from '../../src/store/records.js';
import { LobesError } from '../../src/util/errors.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe('concatAtomic', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-concat-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes the sources in order and returns the joined size and sha256', () => {
    const texts = ['{"a":1}\n', '', '{"b":"é"}\n{"c":3}\n'];
    const srcs = texts.map((t, i) => {
      const f = path.join(root, `c${i}.jsonl`);
      writeFileSync(f, t);
      return f;
    });
    const want = texts.join('');
    const r = concatAtomic(path.join(root, 'out', 'records.jsonl'), srcs,
      texts.map((t, i) => ({ path: `c${i}.jsonl`, bytes: Buffer.byteLength(t), sha256: sha(t) })));
    expect(readFileSync(path.join(root, 'out', 'records.jsonl'), 'utf8')).toBe(want);
    expect(r).toEqual({ path: 'records.jsonl', bytes: Buffer.byteLength(want), sha256: sha(want) });
  });

  it('refuses a source edited since its index entry, leaving the earlier joined file and no temporary file', () => {
    const a = path.join(root, 'a.jsonl');
    const b = path.join(root, 'b.jsonl');
    writeFileSync(a, '{"correct":true}\n');
    writeFileSync(b, '{"correct":false}\n');
    const index = [a, b].map((f) => ({ path: path.basename(f), bytes: readFileSync(f).byteLength,
      sha256: sha(readFileSync(f)) })
    );
    const target = path.join(root, 'records.jsonl');
    writeFileSync(target, 'earlier\n');
    writeFileSync(b, '{"correct":true!}\n'.slice(0, readFileSync(b).byteLength)); // same size, other bytes
    const err = (() => {
      try {
        concatAtomic(target, [a, b], index);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(LobesError);
    expect(String((err as Error).message)).toMatch(/record chunk changed since it was written/);
    expect(String((err as Error).message)).toContain(b);
    expect(readFileSync(target, 'utf8')).toBe('earlier\n');
    expect(readdirSync(root).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });
});
