/**
 * Libraries lobes loads into the process before ONNX Runtime creates a CUDA or WebGPU session,
 * so that providers installed from PyPI wheels (`lobes doctor --install-cuda-from-wheels`) or
 * a Vulkan loader unpacked next to the project (`--install-vulkan-from`) are found without
 * LD_LIBRARY_PATH.
 *
 * ONNX Runtime loads libonnxruntime_providers_cuda.so from the folder of its native binding;
 * the dynamic loader then looks up the provider's DT_NEEDED libraries (libcudart.so.13, ...)
 * by soname, and a soname that is already loaded satisfies the lookup. Dawn (the WebGPU
 * provider) opens libvulkan.so.1 by name, which a loaded libvulkan.so.1 satisfies too. So each
 * listed library is opened with RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE through
 * process.dlopen: Node then reports "Module did not self-register" (it is no Node addon),
 * but with RTLD_NODELETE the library stays loaded and its symbols global.
 *
 * The list lives in lobes-providers.json next to the binding, so it is removed together with
 * the provider files when onnxruntime-node is reinstalled.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import { dirname, join } from 'node:path';
import { LobesError } from '../util/errors.js';
import { readJsonFile, writeJsonAtomic } from '../store/json.js';

export const PRELOAD_FILE = 'lobes-providers.json';
export const PRELOAD_FORMAT = 'lobes-provider-libraries';

/** glibc's RTLD_NODELETE (Node's os.constants.dlopen does not list it). */
const RTLD_NODELETE = 0x1000;

/** Libraries to load before one provider's session, in load order. */
export interface PreloadSet {
  /** Absolute paths, dependencies first. */
  libraries: string[];
  /** Paths whose failure makes the provider unusable (the others only warn). */
  required: string[];
  /** Where they came from (wheel folder, unpacked package). */
  source: string;
  installedAt: string;
  /** CUDA major version the provider was built for (cuda only). */
  cudaMajor?: number;
}

export interface PreloadManifest {
  format: typeof PRELOAD_FORMAT;
  version: 1;
  /** onnxruntime-node version the sets were installed for. */
  onnxruntime: string;
  cuda?: PreloadSet;
  webgpu?: PreloadSet;
}

/** onnxruntime-node's package folder, or null when it cannot be resolved. */
export function ortPackageDir(): string | null {
  try {
    return dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  } catch {
    return null;
  }
}

/** onnxruntime-node's version (its package.json), or null. */
export function ortVersion(): string | null {
  const dir = ortPackageDir();
  if (!dir) return null;
  const pkg = readJsonFile(join(dir, 'package.json'), { fallback: null });
  return pkg === null ? null : String(pkg.version);
}

/** The folder of onnxruntime-node's native binding for this platform: where it loads provider libraries from. */
export function bindingDir(): string | null {
  const pkg = ortPackageDir();
  return pkg ? join(pkg, 'bin', 'napi-v6', process.platform, process.arch) : null;
}

/** Read the preload manifest of a binding folder (null when there is none). */
export function readPreloadManifest(dir = bindingDir()): PreloadManifest | null {
  if (!dir) return null;
  const file = join(dir, PRELOAD_FILE);
  if (!existsSync(file)) return null;
  const m: PreloadManifest = readJsonFile(file, { unreadable: (e) => `not valid JSON (${e.message})`,
    invalid: (msg) => `not valid JSON (${msg})`,
    hint: 'delete it and run lobes doctor --install-cuda-from-wheels DIR again' });
  if (m?.format !== PRELOAD_FORMAT) throw new LobesError(`not a ${PRELOAD_FORMAT} file`, { file, hint: 'delete it' });
  return m;
}

/** Write (or update one provider's set in) the preload manifest of a binding folder. */
export function writePreloadSet(dir: string, onnxruntime: string, provider: 'cuda' | 'webgpu',
  set: PreloadSet): string
{
  const file = join(dir, PRELOAD_FILE);
  const old = existsSync(file) ? readPreloadManifest(dir) : null;
  const m: PreloadManifest = { ...(old && old.onnxruntime === onnxruntime ? old : {}), format: PRELOAD_FORMAT,
    version: 1, onnxruntime, [provider]: set };
  writeJsonAtomic(file, m, 2);
  return file;
}

export interface PreloadOutcome {
  loaded: string[];
  failed: { path: string; required: boolean; error: string }[];
}

/** Load one library into the process, global and never unloaded; returns null or the loader's error. */
export function dlopenGlobal(file: string): string | null {
  const c = os.constants.dlopen as Record<string, number>;
  const flags = (c.RTLD_NOW ?? 2) | (c.RTLD_GLOBAL ?? 0x100) | (process.platform === 'linux' ? RTLD_NODELETE : 0);
  try {
    process.dlopen({ exports: {} } as NodeJS.Module, file, flags);
    return null; // a Node addon after all: loaded
  } catch (e) {
    const msg = String((e as Error).message ?? e);
    // Loaded fine, just not an addon (the library stays: RTLD_NODELETE).
    if (/did not self-register|Module did not self-register|napi_register_module/i.test(msg)) return null;
    return msg.split('\n')[0]!;
  }
}

const done = new Map<string, PreloadOutcome>();

/**
 * Load the libraries listed for `provider` (once per process). A required library that fails
 * to load is an error naming it and the fix; optional ones are reported in the outcome.
 */
export function preloadProviderLibraries(provider: 'cuda' | 'webgpu', dir = bindingDir()): PreloadOutcome {
  const key = `${dir}:${provider}`;
  const prev = done.get(key);
  if (prev) return prev;
  const out: PreloadOutcome = { loaded: [], failed: [] };
  const m = readPreloadManifest(dir);
  const set = m?.[provider];
  if (set && process.platform === 'linux') {
    const required = new Set(set.required);
    for (const lib of set.libraries) {
      const err = existsSync(lib) ? dlopenGlobal(lib) : 'file not found';
      if (err === null) out.loaded.push(lib);
      else {
        out.failed.push({ path: lib, required: required.has(lib), error: err });
        if (required.has(lib)) {
          throw new LobesError(`could not load ${lib} for the ${provider} provider: ${err}`, {
            file: join(dir!, PRELOAD_FILE),
            hint: `run lobes doctor --device ${provider} to see what is missing`,
          });
        }
      }
    }
  }
  done.set(key, out);
  return out;
}
