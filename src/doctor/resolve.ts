/**
 * Which shared libraries a library pulls in and where the dynamic loader would find each:
 * the answer of `ldd`, computed from the files instead of by running the loader, so it also
 * works for libraries of another machine's layout (fake trees in tests, a provider copied
 * from a wheel before it is installed).
 *
 * Search order for a library needed by object O (ld.so(8)): a library already loaded under
 * that soname (lobes' preloaded libraries count as loaded); O's DT_RPATH when O has no
 * DT_RUNPATH; LD_LIBRARY_PATH; O's DT_RUNPATH; the ld.so.cache; the default directories.
 * $ORIGIN (and ${ORIGIN}) in a path is O's directory. Candidates of another ELF class or
 * machine are skipped, as ld.so skips them.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { readElfDynamic, type ElfDynamic } from './elf.js';

/** Where the loader looks, besides the requesting object's own paths. */
export interface LinkerEnv {
  /** LD_LIBRARY_PATH, split. */
  ldLibraryPath: string[];
  /** soname → paths from ld.so.cache (readLdCache). */
  cache: Map<string, string[]>;
  /** The loader's trusted directories. */
  defaultDirs: string[];
  /** soname → path of libraries already loaded (lobes' preload list). */
  loaded: Map<string, string>;
  /** ELF machine the libraries must be built for (null: accept any). */
  machine: number | null;
}

export type FoundVia = 'loaded' | 'rpath' | 'LD_LIBRARY_PATH' | 'runpath' | 'ld.so.cache' | 'default';

export interface ResolvedLib {
  soname: string;
  /** Real path of the file found, or null when the loader would not find it. */
  path: string | null;
  via: FoundVia | null;
  /** The first library that needs it. */
  neededBy: string;
  /** Why a candidate was skipped or the library is unreadable (for the message). */
  note?: string;
}

/** Debian/Ubuntu multiarch triplets of Node's architectures. */
const TRIPLET: Record<string, string> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu', ia32: 'i386-linux-gnu',
  arm: 'arm-linux-gnueabihf' };

/** The loader's default directories on this architecture (multiarch and lib64 layouts). */
export function defaultLibDirs(arch = process.arch): string[] {
  const t = TRIPLET[arch];
  const lib64 = arch === 'x64' || arch === 'arm64' ? ['/lib64', '/usr/lib64'] : [];
  return [...(t ? [`/lib/${t}`, `/usr/lib/${t}`] : []), ...lib64, '/lib', '/usr/lib'];
}

/** Split LD_LIBRARY_PATH (empty entries mean the current directory to ld.so; lobes drops them). */
export function splitPathList(v: string | undefined): string[] {
  return (v ?? '').split(/[:;]/).filter(Boolean);
}

function expandOrigin(dir: string, origin: string): string {
  return dir.replace(/\$\{ORIGIN\}|\$ORIGIN/g, origin);
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Resolve every library `file` needs, transitively, breadth first. Each soname appears once
 * (the first object that needs it decides where it is searched, as for the loader, where a
 * soname once loaded satisfies every later request).
 */
export function resolveClosure(file: string, env: LinkerEnv): { root: ElfDynamic; libs: ResolvedLib[] } {
  const root = readElfDynamic(file);
  const libs: ResolvedLib[] = [];
  const seen = new Map<string, ResolvedLib>();
  if (root.soname) seen.set(root.soname, { soname: root.soname, path: realOf(file), via: 'loaded', neededBy: '' });
  const queue: { obj: ElfDynamic; path: string }[] = [{ obj: root, path: realOf(file) }];
  while (queue.length) {
    const { obj, path: objPath } = queue.shift()!;
    for (const soname of obj.needed) {
      if (seen.has(soname)) continue;
      const r = findLibrary(soname, obj, objPath, env);
      seen.set(soname, r);
      libs.push(r);
      if (r.path) {
        try {
          queue.push({ obj: readElfDynamic(r.path), path: r.path });
        } catch (e) {
          r.note = String((e as Error).message);
        }
      }
    }
  }
  return { root, libs };
}

function realOf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Where the loader would find `soname` when `obj` (at `objPath`) needs it. */
export function findLibrary(soname: string, obj: Pick<ElfDynamic, 'rpath' | 'runpath' | 'file'>, objPath: string,
  env: LinkerEnv): ResolvedLib
{
  const neededBy = path.basename(objPath);
  const pre = env.loaded.get(soname);
  if (pre) return { soname, path: pre, via: 'loaded', neededBy };
  // The dynamic loader itself (the program interpreter) is always loaded.
  if (/^ld-linux[\w.-]*\.so\.\d+$|^ld64\.so\.\d+$/.test(soname)) {
    const p = [...(env.cache.get(soname) ?? []), ...env.defaultDirs.map((d) => path.join(d, soname))].find(isFile);
    return { soname, path: p ? realOf(p) : soname, via: 'loaded', neededBy };
  }
  const origin = path.dirname(objPath);
  let note: string | undefined;
  const tryDirs = (dirs: string[], via: FoundVia): ResolvedLib | null => {
    for (const d of dirs) {
      const p = path.join(expandOrigin(d, origin), soname);
      const ok = acceptable(p, env.machine);
      if (ok === true) return { soname, path: realOf(p), via, neededBy };
      if (typeof ok === 'string') note = ok;
    }
    return null;
  };
  // A name with a slash is a path, used as is.
  if (soname.includes('/')) {
    const p = path.isAbsolute(soname) ? soname : path.resolve(origin, soname);
    return existsSync(p)
      ? { soname, path: realOf(p), via: 'default', neededBy }
      : { soname, path: null, via: null, neededBy };
  }
  const found = (obj.runpath.length === 0 ? tryDirs(obj.rpath, 'rpath') : null) ??
    tryDirs(env.ldLibraryPath, 'LD_LIBRARY_PATH') ??
    tryDirs(obj.runpath, 'runpath') ??
    tryCache(soname, env, neededBy) ??
    tryDirs(env.defaultDirs, 'default');
  return found ?? { soname, path: null, via: null, neededBy, ...(note ? { note } : {}) };
}

function tryCache(soname: string, env: LinkerEnv, neededBy: string): ResolvedLib | null {
  for (const p of env.cache.get(soname) ?? []) {
    if (acceptable(p, env.machine) === true) return { soname, path: realOf(p), via: 'ld.so.cache', neededBy };
  }
  return null;
}

/** true when `p` is a loadable library for `machine`; a string saying why not when it exists but is skipped; false when absent. */
function acceptable(p: string, machine: number | null): true | false | string {
  if (!isFile(p)) return false;
  if (machine === null) return true;
  try {
    const e = readElfDynamic(p);
    return e.machine === machine ? true : `${p} is built for ELF machine ${e.machine}, not ${machine}`;
  } catch (e) {
    return String((e as Error).message);
  }
}
