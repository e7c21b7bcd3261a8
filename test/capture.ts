/** Capture what a test's in-process CLI call writes to stdout and stderr (restore with vi.restoreAllMocks()). */
import { vi } from 'vitest';

export function capture(): { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: any) => ((out += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: any) => ((err += String(s)), true));
  return { out: () => out, err: () => err };
}
