/**
 * The output-folder API other commands build on (src/util/output.ts, writeDirAtomic and
 * writeOutputMarker in src/util/io.ts): which existing folders a command of a kind may
 * replace, and that a refused folder is left byte for byte as it was.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { writeDirAtomic, writeOutputMarker } from '../../src/util/io.js';
import { OUTPUT_MARKER, checkOutputDir, isLegacyOutput, outputKindOf,
  readOutputMarker } from '../../src/util/output.js';
import { snapshot } from '../integrity/helpers.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-output-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const fill = (text: string) => (tmp: string) => {
  writeFileSync(path.join(tmp, 'summary.json'), text);
  mkdirSync(path.join(tmp, 'records'));
  writeFileSync(path.join(tmp, 'records', 'a.jsonl'), text);
};

describe('output folders', () => {
  it('writeDirAtomic writes the marker with the entries it wrote, and replaces its own kind', async () => {
    const out = path.join(root, 'ev');
    await writeDirAtomic(out, fill('1'), { kind: 'eval' });
    const m = readOutputMarker(out)!;
    expect(m).toMatchObject({ format: 'lobes-output', kind: 'eval', files: ['records', 'summary.json'] });
    expect(readdirSync(out).sort()).toEqual([OUTPUT_MARKER, 'records', 'summary.json']);
    await writeDirAtomic(out, fill('2'), { kind: 'eval' });
    expect(readFileSync(path.join(out, 'summary.json'), 'utf8')).toBe('2');
    expect(outputKindOf(out)).toBe('eval');
  });

  it('refuses another kind, a user file added to an output, an unmarked folder, and a failed replaces()', async () => {
    const out = path.join(root, 'ev');
    await writeDirAtomic(out, fill('1'), { kind: 'eval' });
    let snap = snapshot(out);
    await expect(writeDirAtomic(out, fill('x'), { kind: 'attend' })).rejects.toThrow(
      /ev: folder holds lobes eval results; lobes attend does not replace them \(give a new or empty folder\)$/,
    );
    await expect(writeDirAtomic(out, fill('x'), { kind: 'eval', replaces: () => false })).rejects.toThrow(
      /ev: folder holds an earlier lobes eval result; it is not replaced/,
    );
    expect(snapshot(out)).toEqual(snap);
    writeFileSync(path.join(out, 'notes.md'), 'mine');
    snap = snapshot(out);
    await expect(writeDirAtomic(out, fill('x'), { kind: 'eval' })).rejects.toThrow(
      /ev: folder holds an earlier lobes eval result and files lobes did not write there \(notes\.md\); it is not replaced/,
    );
    expect(snapshot(out)).toEqual(snap);
    const mine = path.join(root, 'mine');
    mkdirSync(mine);
    writeFileSync(path.join(mine, 'summary.json'), '{}');
    await expect(writeDirAtomic(mine, fill('x'), { kind: 'eval' })).rejects.toThrow(
      /mine: folder exists and was not written by lobes eval \(it holds summary\.json\)/,
    );
    expect(readdirSync(mine)).toEqual(['summary.json']);
    expect(readdirSync(root).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('an empty or missing folder is written; a folder inside an output folder is refused', async () => {
    mkdirSync(path.join(root, 'empty'));
    await writeDirAtomic(path.join(root, 'empty'), fill('1'), { kind: 'cluster' });
    await writeDirAtomic(path.join(root, 'new', 'deep'), fill('1'), { kind: 'cluster' });
    expect(() => checkOutputDir(path.join(root, 'empty', 'records', 'x'), 'cluster')).toThrow(
      /output folder is inside the lobes cluster folder .*empty, which is replaced whole/,
    );
  });

  it('writeOutputMarker marks a folder filled over time; without a file list the kind alone decides', () => {
    const out = path.join(root, 'att');
    mkdirSync(out);
    writeOutputMarker(out, 'attend');
    writeFileSync(path.join(out, 'items.jsonl'), '');
    expect(() => checkOutputDir(out, 'attend')).not.toThrow();
    expect(() => checkOutputDir(out, 'eval')).toThrow(/holds lobes attend results/);
    expect(existsSync(path.join(out, OUTPUT_MARKER))).toBe(true);
  });

  it('recognises an unmarked cluster result of an older lobes by its settings.json and files only', () => {
    const d = path.join(root, 'old');
    mkdirSync(d);
    writeFileSync(path.join(d, 'settings.json'),
      JSON.stringify({ point: 'final.hidden', by: 'aspect', perplexity: 30, pcaDims: 50, theta: 0.5,
        iterations: 1000 }));
    for (const f of ['coords.json', 'coords.csv', 'metrics.json', 'metrics.csv']) writeFileSync(path.join(d, f), '');
    expect(isLegacyOutput(d, 'cluster')).toBe(true);
    expect(isLegacyOutput(d, 'wanda')).toBe(false);
    writeFileSync(path.join(d, 'thesis.tex'), 'x');
    expect(isLegacyOutput(d, 'cluster')).toBe(false);
    rmSync(path.join(d, 'thesis.tex'));
    writeFileSync(path.join(d, 'settings.json'), JSON.stringify({ by: 'aspect' }));
    expect(isLegacyOutput(d, 'cluster')).toBe(false);
  });
});
