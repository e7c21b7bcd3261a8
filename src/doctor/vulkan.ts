/**
 * A Vulkan loader for the WebGPU provider on machines without one installed system-wide:
 * `lobes doctor --install-vulkan-from DIR` finds libvulkan.so.1 in DIR (for instance Debian's
 * libvulkan1 package unpacked with `dpkg-deb -x`) and lists it for preloading, so Dawn's
 * dlopen("libvulkan.so.1") finds it (src/runtime/preload.ts).
 */
import { existsSync, lstatSync, readdirSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { hostMachine, readElfDynamic } from './elf.js';
import { bindingDir as defaultBindingDir, ortVersion, writePreloadSet } from '../runtime/preload.js';

/** Every libvulkan.so.1 under `dir` (depth-limited walk, symlinks followed to their files). */
export function findVulkanLoaders(dir: string, depth = 6): string[] {
  const out: string[] = [];
  const walk = (d: string, left: number) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      if (n === 'libvulkan.so.1') {
        if (existsSync(p)) out.push(p);
        continue;
      }
      try {
        if (left > 0 && lstatSync(p).isDirectory()) walk(p, left - 1);
      } catch {
        // unreadable: skip
      }
    }
  };
  walk(dir, depth);
  return out;
}

/** Record the Vulkan loader found in `dir` for preloading; returns its real path. */
export function installVulkanFrom(dir: string,
  opts: { bindingDir?: string; ortVersion?: string } = {}): { library: string; manifest: string }
{
  if (!existsSync(dir)) throw new LobesError('no such folder', { file: dir });
  const bdir = opts.bindingDir ?? defaultBindingDir();
  const version = opts.ortVersion ?? ortVersion();
  if (!bdir || !existsSync(bdir) || !version)
    throw new LobesError("onnxruntime-node's native binding folder is missing", { file: bdir ?? 'onnxruntime-node',
      hint: 'reinstall: npm ci' });
  const machine = hostMachine();
  const found = findVulkanLoaders(dir).map((p) => realpathSync(p));
  const fitting = found.filter((p) => {
    try {
      return machine === null || readElfDynamic(p).machine === machine;
    } catch {
      return false;
    }
  });
  if (!fitting.length) {
    throw new LobesError(
      found.length
        ? `libvulkan.so.1 found (${found[0]}) but not built for this machine's architecture`
        : 'no libvulkan.so.1 in the folder',
      {
        file: dir,
        hint: 'apt-get download libvulkan1 && dpkg-deb -x libvulkan1_*.deb DIR, then give DIR',
      },
    );
  }
  const library = fitting[0]!;
  const manifest = writePreloadSet(bdir, version, 'webgpu', { libraries: [library], required: [library],
    source: path.resolve(dir), installedAt: new Date().toISOString() });
  return { library, manifest };
}
