/**
 * The WebAssembly kernels against their committed text form: each module lobes assembles
 * (test/kernels/modules.ts) is validated by wabt (SIMD and threads) and disassembled, and the
 * text must equal test/goldens/wasm/NAME.wat. A change that moves a byte of a kernel fails here
 * until the text is rewritten (npx tsx test/goldens/wasm/write-wat.ts), so it shows in review as
 * a diff of readable instructions. Every source file that assembles a module must be listed.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { KERNEL_MODULES, watOf } from './modules.js';
import { V128_LOAD, F64_LOAD, V128_LOAD32_LANE } from '../../src/util/wasm.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

describe('WebAssembly kernels (text form, wabt)', () => {
  it('every source file that assembles a module is listed, with a text form', () => {
    const assembling = sources(path.join(ROOT, 'src'))
      .filter((f) => !f.endsWith(path.join('util', 'wasm.ts')))
      .filter((f) => /\bassembleModule\(/.test(readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '')))
      .map((f) => path.relative(ROOT, f))
      .sort();
    expect(assembling).toEqual(KERNEL_MODULES.map((k) => k.source).sort());
    const texts = readdirSync(path.join(ROOT, 'test/goldens/wasm')).filter((f) => f.endsWith('.wat')).sort();
    expect(texts).toEqual(KERNEL_MODULES.map((k) => `${k.name}.wat`).sort());
  });

  for (const k of KERNEL_MODULES) {
    it(`${k.name} (${k.source}) is valid and equals test/goldens/wasm/${k.name}.wat`, async () => {
      const bytes = k.bytes();
      expect(k.bytes()).toEqual(bytes); // assembled the same way twice
      const text = await watOf(bytes);
      const want = readFileSync(path.join(ROOT, 'test/goldens/wasm', `${k.name}.wat`), 'utf8');
      if (text !== want) {
        const a = text.split('\n');
        const b = want.split('\n');
        const i = a.findIndex((l, j) => l !== b[j]);
        expect.fail(
          `${k.name}: the module's text differs from its golden from line ${i + 1}: ${JSON.stringify(a[i])} (golden ${
            JSON.stringify(b[i])
          }); if the change is meant, rewrite the goldens with npx tsx test/goldens/wasm/write-wat.ts`,
        );
      }
    });
  }
  it('memory instructions: natural alignment by default, a smaller power of two on request, never more', () => {
    expect(V128_LOAD(16)).toEqual([0xfd, 0x00, 4, 16]);
    expect(V128_LOAD(200, 8)).toEqual([0xfd, 0x00, 3, 0xc8, 0x01]);
    expect(F64_LOAD()).toEqual([0x2b, 3, 0]);
    expect(V128_LOAD32_LANE(1)).toEqual([0xfd, 0x56, 2, 0, 1]);
    expect(() => V128_LOAD(0, 32)).toThrow(/alignment 32 of a 16-byte access/);
    expect(() => V128_LOAD(0, 3)).toThrow(/alignment 3/);
  });
});
