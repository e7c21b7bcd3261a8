/**
 * The report page's script (src/report/client/): the bundle that pages inline, and its typecheck
 * against the payload types. The compiler is the oracle: a payload field the script reads but the
 * payload types lack must fail the client typecheck (`npm run typecheck` runs the same config).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { clientScript } from '../../src/report/client-bundle.js';
import { renderPage } from '../../src/report/html.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const CLIENT_DIR = path.join(ROOT, 'src/report/client');
const CLIENT_CONFIG = path.join(CLIENT_DIR, 'tsconfig.json');
const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-client-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function tsc(args: string[], cwd = ROOT) {
  const r = spawnSync(process.execPath, [TSC, ...args], { cwd, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Files of a tsc program, relative to `root` (library files keep their absolute path). */
function programFiles(config: string, root = ROOT): string[] {
  const r = tsc(['-p', config, '--listFilesOnly'], root);
  expect(r.status, r.out).toBe(0);
  return r.out.trim().split('\n').map((f) => (f.startsWith(root + '/') ? path.relative(root, f) : f));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []
  );
}

describe('report page script', () => {
  it('is one non-empty script that cannot end its <script> element, parses, and never writes HTML', () => {
    const js = clientScript();
    expect(js.length).toBeGreaterThan(5000);
    expect(js).not.toMatch(/<\/script|<!--/i);
    // valid JavaScript as a classic script (syntax only: nothing runs)
    expect(() => new Function(js)).not.toThrow();
    // textContent only: no HTML parsing sink anywhere in the page script
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment/);
    expect(js).toContain('window.lobesReport =');
    // the same script from any working directory (the build runs in the package root, a test or a
    // `node --import tsx` run anywhere)
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const elsewhere = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e',
      `import { bundleClient } from ${
        JSON.stringify(path.join(ROOT, 'src/report/client-bundle.ts'))
      }; process.stdout.write(bundleClient());`], { cwd: tmp, encoding: 'utf8', maxBuffer: 1 << 26 });
    expect(elsewhere.stderr).toBe('');
    expect(elsewhere.stdout).toBe(js);
    // and it is what a page inlines, as is
    const html = renderPage({ title: 't', generatedBy: '', runs: [], comparison: null });
    expect(html).toContain(`<script>${js}</script>`);
  });

  it('is type-checked against the payload types, with DOM types and without Node types', () => {
    // one full check that also lists the program's files (errors would come first and fail the status)
    const r = tsc(['-p', CLIENT_CONFIG, '--listFiles']);
    expect(r.status, r.out).toBe(0);
    const files = r.out.trim().split('\n').map((f) => (f.startsWith(ROOT + '/') ? path.relative(ROOT, f) : f));
    for (const f of tsFiles(CLIENT_DIR)) expect(files).toContain(path.relative(ROOT, f));
    expect(files).toContain('src/report/types.ts');
    expect(files.some((f) => f.endsWith('/lib.dom.d.ts'))).toBe(true);
    expect(files.filter((f) => f.includes('@types/node'))).toEqual([]);
  });

  it('the Node side does not see DOM types or the page script', () => {
    const files = programFiles(path.join(ROOT, 'tsconfig.build.json'));
    expect(files).toContain('src/report/html.ts');
    expect(files.filter((f) => f.endsWith('/lib.dom.d.ts') || f.startsWith('src/report/client/'))).toEqual([]);
  });

  it('a payload field the script reads but the payload types lack fails the typecheck', () => {
    // Copy the client's program (every file it type-checks) and rename one field the script reads.
    const copy = path.join(tmp, 'mismatch');
    for (const f of programFiles(CLIENT_CONFIG)) {
      if (path.isAbsolute(f)) continue;
      mkdirSync(path.dirname(path.join(copy, f)), { recursive: true });
      copyFileSync(path.join(ROOT, f), path.join(copy, f));
    }
    copyFileSync(CLIENT_CONFIG, path.join(copy, 'src/report/client/tsconfig.json'));
    expect(tsc(['-p', path.join(copy, 'src/report/client/tsconfig.json')], copy).status).toBe(0);
    const types = path.join(copy, 'src/report/types.ts');
    const src = readFileSync(types, 'utf8');
    const renamed = src.replace('nAB: number; nBA: number;', 'countAB: number; nBA: number;');
    expect(renamed).not.toBe(src);
    writeFileSync(types, renamed);
    const r = tsc(['-p', path.join(copy, 'src/report/client/tsconfig.json')], copy);
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/src\/report\/client\/sections\/regions\.ts.*Property 'nAB' does not exist/);
  });
});
