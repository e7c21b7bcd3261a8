/**
 * `lobes doctor`: which execution providers this machine's onnxruntime-node can load, which
 * shared libraries each one misses, and the one command that fixes each problem.
 *
 * Static checks (no provider is loaded): the provider files in the binding folder, the
 * dependency closure of each provider library resolved as the dynamic loader would
 * (src/doctor/resolve.ts, with lobes' preloaded libraries counted as loaded), the NVIDIA
 * driver's version against the provider's CUDA major version, and the Vulkan loader and
 * drivers (ICDs) that WebGPU needs on Linux. Probes (default on): a child process per
 * provider creates a session on a one-node model and runs it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { readLdCache } from './ldcache.js';
import { defaultLibDirs, findLibrary, resolveClosure, splitPathList, type LinkerEnv,
  type ResolvedLib } from './resolve.js';
import { hostMachine, readElfDynamic } from './elf.js';
import { bindingDir, ortVersion, readPreloadManifest, type PreloadManifest } from '../runtime/preload.js';
import { CUDA_LIB_DIR, DRIVER_LIB, MIN_DRIVER, PROVIDER_FILES, cudaMajorOf, driverAtLeast, pipDownloadCommand,
  pipRequirementFor, shellJoin } from './cuda.js';
import { readJsonFile } from '../store/json.js';

export type ProviderName = 'cpu' | 'cuda' | 'webgpu';

export interface Problem {
  /** What is wrong, one line. */
  what: string;
  /** The one command (or action) that fixes it. */
  fix: string;
}

export interface ProviderCheck {
  name: ProviderName;
  /** In this onnxruntime-node build (bundled) or installable (cuda). */
  bundled: boolean;
  /** Libraries resolved for its provider library (missing ones have path null). */
  libraries: ResolvedLib[];
  problems: Problem[];
  /** Result of loading it for real; null when not probed. */
  probe: ProbeResult | null;
  /** Static checks found nothing wrong and (when probed) the probe worked. */
  usable: boolean;
  /** Extra facts (CUDA major, driver version, Vulkan drivers). */
  notes: string[];
}

export interface DoctorReport {
  onnxruntime: { version: string | null; bindingDir: string | null; platform: string; arch: string };
  system: { nvidiaDriver: string | null; gpus: string[]; ldLibraryPath: string[] };
  preload: PreloadManifest | null;
  providers: ProviderCheck[];
}

export interface DoctorOptions {
  /** Run a session on each provider in a child process (default true). */
  probe?: boolean;
  /** Overrides for tests: binding folder, environment, /proc and /etc roots. */
  bindingDir?: string | null;
  env?: NodeJS.ProcessEnv;
  linker?: Partial<LinkerEnv>;
  /** Root prepended to /proc, /etc, /usr paths read for the driver and Vulkan checks (tests). */
  sysRoot?: string;
  /** Folder the fix commands download wheels into (default ~/.cache/lobes/cuda-wheels). */
  wheelDir?: string;
  /** Providers this onnxruntime-node build lists (default: ort.listSupportedBackends()). */
  backends?: { name: string; bundled: boolean }[];
}

/** NVIDIA driver version from /proc/driver/nvidia/version, or null. */
export function nvidiaDriverVersion(sysRoot = ''): string | null {
  const f = path.join(sysRoot, '/proc/driver/nvidia/version');
  if (!existsSync(f)) return null;
  return /Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)/.exec(readFileSync(f, 'utf8'))?.[1] ?? null;
}

/** GPU models from /proc/driver/nvidia/gpus/<bus>/information. */
export function nvidiaGpus(sysRoot = ''): string[] {
  const d = path.join(sysRoot, '/proc/driver/nvidia/gpus');
  if (!existsSync(d)) return [];
  const out: string[] = [];
  for (const bus of readdirSync(d).sort()) {
    const f = path.join(d, bus, 'information');
    if (!existsSync(f)) continue;
    const model = /^Model:\s*(.+)$/m.exec(readFileSync(f, 'utf8'))?.[1]?.trim();
    out.push(`${model ?? 'NVIDIA GPU'} (${bus})`);
  }
  return out;
}

/** Vulkan driver manifests (ICDs) the Vulkan loader would read, with the library each names. */
export function vulkanIcds(env: NodeJS.ProcessEnv = process.env,
  sysRoot = ''): { file: string; library: string | null }[]
{
  const explicit = splitPathList(env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES);
  let files: string[];
  if (explicit.length) files = explicit;
  else {
    const dataDirs = splitPathList(env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share');
    const dirs = ['/etc/vulkan/icd.d', ...dataDirs.map((d) => path.join(d, 'vulkan', 'icd.d')),
      '/usr/share/vulkan/icd.d'];
    files = [];
    for (const d of [...new Set(dirs)]) {
      const full = path.join(sysRoot, d);
      if (!existsSync(full)) continue;
      for (const f of readdirSync(full).sort()) if (f.endsWith('.json')) files.push(path.join(full, f));
    }
  }
  return files.map((file) => {
    const j = readJsonFile(file, { fallback: null });
    return { file, library: typeof j?.ICD?.library_path === 'string' ? j.ICD.library_path : null };
  });
}

function linkerEnv(opts: DoctorOptions, loaded: Map<string, string>): LinkerEnv {
  const env = opts.env ?? process.env;
  return {
    ldLibraryPath: opts.linker?.ldLibraryPath ?? splitPathList(env.LD_LIBRARY_PATH),
    cache: opts.linker?.cache ?? readLdCache(),
    defaultDirs: opts.linker?.defaultDirs ?? defaultLibDirs(),
    loaded: opts.linker?.loaded ?? loaded,
    machine: opts.linker?.machine !== undefined ? opts.linker.machine : hostMachine(),
  };
}

function preloadedSonames(m: PreloadManifest | null, provider: 'cuda' | 'webgpu'): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of m?.[provider]?.libraries ?? []) {
    let soname = path.basename(p);
    try {
      soname = readElfDynamic(p).soname ?? soname;
    } catch {
      continue; // unreadable: not counted as loaded
    }
    out.set(soname, p);
  }
  return out;
}

const DEFAULT_WHEEL_DIR = '~/.cache/lobes/cuda-wheels';

/** Check every provider (see the module comment). */
export function checkProviders(opts: DoctorOptions = {}): DoctorReport {
  const bdir = opts.bindingDir !== undefined ? opts.bindingDir : bindingDir();
  const version = ortVersion();
  const sys = opts.sysRoot ?? '';
  const manifest = bdir ? safeManifest(bdir) : null;
  const backends = opts.backends ??
    ((ort as unknown as { listSupportedBackends?: () => { name: string; bundled: boolean }[] })
      .listSupportedBackends?.() ?? [{ name: 'cpu', bundled: true }]);
  const driver = nvidiaDriverVersion(sys);
  const report: DoctorReport = {
    onnxruntime: { version, bindingDir: bdir, platform: process.platform, arch: process.arch },
    system: { nvidiaDriver: driver, gpus: nvidiaGpus(sys),
      ldLibraryPath: splitPathList((opts.env ?? process.env).LD_LIBRARY_PATH) },
    preload: manifest,
    providers: [],
  };
  const wheelDir = opts.wheelDir ?? manifest?.cuda?.source ?? DEFAULT_WHEEL_DIR;
  const v = version ?? 'X.Y.Z';
  const doctorInstall = `lobes doctor --install-cuda-from-wheels ${wheelDir}`;

  // CPU: the binding and libonnxruntime.
  {
    const c: ProviderCheck = { name: 'cpu', bundled: true, libraries: [], problems: [], probe: null, usable: true,
      notes: [] };
    const binding = bdir ? path.join(bdir, 'onnxruntime_binding.node') : null;
    if (!binding || !existsSync(binding)) {
      c.problems.push({ what: `onnxruntime-node's native binding is missing${bdir ? ` (${binding})` : ''}`,
        fix: 'npm ci (or npm rebuild onnxruntime-node)' });
    } else if (process.platform === 'linux') {
      c.libraries = resolveClosure(binding, linkerEnv(opts, new Map())).libs;
      for (const l of c.libraries.filter((x) => !x.path))
        c.problems.push({ what: `${l.soname} (needed by ${l.neededBy}) is not found`,
          fix: `install the system package that provides ${l.soname} (e.g. apt-get install libstdc++6)` });
    }
    report.providers.push(c);
  }

  // CUDA.
  if (backends.some((b) => b.name === 'cuda')) {
    const c: ProviderCheck = { name: 'cuda', bundled: backends.find((b) => b.name === 'cuda')!.bundled, libraries: [],
      problems: [], probe: null, usable: true, notes: [] };
    const files = bdir ? PROVIDER_FILES.map((f) => path.join(bdir, f)) : [];
    const absent = files.filter((f) => !existsSync(f));
    if (!bdir || absent.length) {
      c.problems.push({
        what: `the CUDA provider is not installed (${
          absent.map((f) => path.basename(f)).join(', ') || 'no binding folder'
        } missing from onnxruntime-node's binding folder)`,
        fix:
          `${doctorInstall} --download   (runs pip: onnxruntime-gpu==${v} and the NVIDIA CUDA wheels; or from NuGet: ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js)`,
      });
    } else {
      const prov = path.join(bdir, 'libonnxruntime_providers_cuda.so');
      const loaded = preloadedSonames(manifest, 'cuda');
      const r = resolveClosure(prov, linkerEnv(opts, loaded));
      c.libraries = r.libs;
      const major = cudaMajorOf(r.root.needed);
      if (major !== null) c.notes.push(`provider built for CUDA ${major}`);
      if (manifest?.cuda)
        c.notes.push(
          `${manifest.cuda.libraries.length} CUDA libraries preloaded from ${
            path.join(bdir, CUDA_LIB_DIR)
          } (installed ${manifest.cuda.installedAt} from ${manifest.cuda.source})`,
        );
      if (manifest && version && manifest.onnxruntime !== version) {
        c.problems.push({
          what: `the preloaded libraries were installed for onnxruntime ${manifest.onnxruntime}, this is ${version}`,
          fix: `${doctorInstall} --download`,
        });
      }
      const missing = r.libs.filter((l) => !l.path);
      const pipReqs: string[] = [];
      for (const l of missing) {
        if (l.soname === DRIVER_LIB) {
          c.problems.push({ what: `${DRIVER_LIB} (the CUDA driver library) is not found`,
            fix:
              'install the NVIDIA driver (it provides libcuda.so.1; PyPI cannot), or in a container run with the NVIDIA container toolkit (docker run --gpus all ...)' });
          continue;
        }
        const req = major !== null ? pipRequirementFor(l.soname, major) : null;
        if (req) pipReqs.push(req);
        else
          c.problems.push({ what: `${l.soname} (needed by ${l.neededBy}) is not found${l.note ? `: ${l.note}` : ''}`,
            fix: `install the package that provides ${l.soname}, or add its folder to LD_LIBRARY_PATH` });
      }
      if (pipReqs.length) {
        const names = missing.filter((l) =>
          l.soname !== DRIVER_LIB && major !== null && pipRequirementFor(l.soname, major)
        ).map((l) => l.soname);
        c.problems.push({
          what: `${names.join(', ')} ${
            names.length === 1 ? 'is' : 'are'
          } not found (CUDA ${major} libraries the provider links)`,
          fix: `${shellJoin(pipDownloadCommand(wheelDir, [...new Set(pipReqs)]))} && ${doctorInstall}`,
        });
      }
      if (major !== null) {
        const need = MIN_DRIVER[major];
        if (!driver)
          c.problems.push({
            what: 'no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent): no CUDA GPU is usable here',
            fix: 'run on a machine with an NVIDIA GPU and its driver',
          });
        else if (need && !driverAtLeast(driver, need))
          c.problems.push({ what: `NVIDIA driver ${driver} is older than ${need}, the minimum for CUDA ${major}`,
            fix:
              `upgrade the NVIDIA driver to ${need} or later (or use an onnxruntime release built for an older CUDA)` });
      }
    }
    c.usable = c.problems.length === 0;
    report.providers.push(c);
  }

  // WebGPU (Dawn, statically linked into libonnxruntime; Vulkan on Linux).
  if (backends.some((b) => b.name === 'webgpu')) {
    const bundled = backends.find((b) => b.name === 'webgpu')!.bundled;
    const c: ProviderCheck = { name: 'webgpu', bundled, libraries: [], problems: [], probe: null, usable: bundled,
      notes: [] };
    if (!bundled)
      c.problems.push({ what: 'this onnxruntime-node build has no WebGPU provider', fix: 'use --device cpu or cuda' });
    else if (process.platform === 'linux') {
      const env = linkerEnv(opts, preloadedSonames(manifest, 'webgpu'));
      const self = { rpath: [], runpath: [], file: 'libonnxruntime.so.1' };
      const vk = findLibrary('libvulkan.so.1', self, path.join(bdir ?? '/', 'libonnxruntime.so.1'), env);
      vk.neededBy = 'the WebGPU provider (Dawn opens it at run time)';
      c.libraries = [vk];
      if (!vk.path) {
        c.problems.push({
          what: 'libvulkan.so.1 (the Vulkan loader) is not found',
          fix:
            'apt-get install libvulkan1   (without root: apt-get download libvulkan1 && dpkg-deb -x libvulkan1_*.deb ~/.cache/lobes/vulkan && lobes doctor --install-vulkan-from ~/.cache/lobes/vulkan)',
        });
      }
      const icds = vulkanIcds(opts.env ?? process.env, sys);
      for (const i of icds) {
        const lib = i.library
          ? (i.library.includes('/')
            ? (existsSync(i.library) ? i.library : null)
            : findLibrary(i.library, self, i.file, env).path)
          : null;
        c.notes.push(
          `Vulkan driver ${path.basename(i.file)}: ${i.library ?? '(no library_path)'}${
            lib ? '' : ' (library not found)'
          }`,
        );
      }
      const usableIcd = icds.some((i) =>
        i.library && (i.library.includes('/') ? existsSync(i.library) : findLibrary(i.library, self, i.file, env).path)
      );
      if (!usableIcd) {
        c.problems.push({
          what: 'no Vulkan driver (ICD) is registered, so WebGPU finds no adapter',
          fix: driver
            ? "install the NVIDIA driver's Vulkan part (its nvidia_icd.json and libGLX_nvidia.so.0; e.g. apt-get install libnvidia-gl-<version>), or in a container set NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics"
            : 'run on a machine with a GPU and its Vulkan driver (or install mesa-vulkan-drivers for a software adapter)',
        });
      }
    }
    c.usable = c.problems.length === 0;
    report.providers.push(c);
  }
  return report;
}

function safeManifest(dir: string): PreloadManifest | null {
  try {
    return readPreloadManifest(dir);
  } catch {
    return null;
  }
}

/** What a probe found: the session worked, or the error (and the provider's own messages). */
export interface ProbeResult {
  ok: boolean;
  ms: number;
  error?: string;
  /** The end of the probe's stderr (native log lines), when it failed. */
  log?: string;
}

/** An ONNX Runtime error without its source location ("/onnxruntime_src/...cc:136 ... was false. "). */
export function cleanOrtError(msg: string): string {
  const m = /^\/onnxruntime_src\/\S+:\d+ .*? (?:was false|failed)\.\s*(.+)$/.exec(msg);
  return m ? m[1]! : msg;
}

/** The probe script next to this module (probe.js in the package, probe.ts in a checkout). */
function probeCommand(): { argv: string[] } {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const js = path.join(here, 'probe.js');
  if (existsSync(js)) return { argv: [js] };
  const ts = path.join(here, 'probe.ts');
  const hasTsx = process.execArgv.some((a) => /tsx/.test(a));
  return { argv: [...(hasTsx ? [] : ['--import', 'tsx']), ts] };
}

/** Load one provider for real in a child process; the most telling line of its output becomes the error. */
export function probeProvider(device: ProviderName, timeoutMs = 120_000): ProbeResult {
  const { argv } = probeCommand();
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [...process.execArgv, ...argv, device], { encoding: 'utf8', timeout: timeoutMs,
    env: process.env });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('LOBES_PROBE '));
  const stderr = (r.stderr ?? '').replace(new RegExp(String.fromCharCode(27) + '\\[[0-9;]*m', 'g'), ''); // colour codes
  let telling = stderr.split('\n').find((l) =>
    /Couldn't load Vulkan|cannot open shared object|Failed to load library|error while loading|CUDA driver version|no CUDA-capable/i
      .test(l)
  );
  // "Failed to load library /path/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open ..."
  if (telling?.includes(' with error: ')) telling = telling.slice(telling.lastIndexOf(' with error: ') + 13);
  if (!line)
    return { ok: false, ms: Date.now() - t0, error: r.error
      ? r.error.message
      : `probe exited ${r.status ?? r.signal}${telling ? `: ${telling.trim()}` : ''}` };
  const res = JSON.parse(line.slice('LOBES_PROBE '.length)) as ProbeResult;
  if (res.error) res.error = cleanOrtError(res.error);
  if (!res.ok && telling && !res.error?.includes(telling.trim()))
    res.error = `${res.error} [${telling.trim().slice(0, 300)}]`;
  if (!res.ok && stderr.trim()) res.log = stderr.trim().slice(-2000);
  return res;
}

/** Static checks, then (unless opts.probe is false) a real session on each bundled or installed provider. */
export function runDoctor(opts: DoctorOptions = {}): DoctorReport {
  const report = checkProviders(opts);
  if (opts.probe === false) return report;
  for (const p of report.providers) {
    if (p.name === 'cuda' && p.problems.some((x) => /not installed/.test(x.what))) continue;
    if (!p.bundled && p.name !== 'cuda') continue;
    p.probe = probeProvider(p.name);
    if (!p.probe.ok && p.problems.length === 0) {
      p.problems.push({ what: `creating a ${p.name} session failed: ${p.probe.error}`, fix: p.name === 'cpu'
        ? 'npm rebuild onnxruntime-node'
        : `check the GPU and its driver (lobes doctor --json shows the provider's own messages under probe.log)` });
    }
    p.usable = p.problems.length === 0 && p.probe.ok;
  }
  return report;
}

/** The report as text: one block per provider, problems with their fixes. */
export function formatReport(r: DoctorReport): string {
  const lines: string[] = [];
  lines.push(
    `onnxruntime-node ${
      r.onnxruntime.version ?? '(not found)'
    } on ${r.onnxruntime.platform}/${r.onnxruntime.arch}; binding folder ${r.onnxruntime.bindingDir ?? '(not found)'}`,
  );
  lines.push(
    `NVIDIA driver: ${r.system.nvidiaDriver ?? 'none'}${
      r.system.gpus.length ? `; GPUs: ${r.system.gpus.join(', ')}` : ''
    }`,
  );
  if (r.system.ldLibraryPath.length) lines.push(`LD_LIBRARY_PATH: ${r.system.ldLibraryPath.join(':')}`);
  for (const p of r.providers) {
    const state = p.usable ? 'usable' : p.bundled || p.name === 'cuda' ? 'NOT usable' : 'not in this build';
    const probe = p.probe
      ? (p.probe.ok ? ` (session created and run in ${p.probe.ms} ms)` : ` (session failed: ${p.probe.error})`)
      : '';
    lines.push('');
    lines.push(`${p.name}: ${state}${probe}`);
    for (const n of p.notes) lines.push(`  - ${n}`);
    const missing = p.libraries.filter((l) => !l.path);
    if (p.libraries.length)
      lines.push(
        `  libraries: ${p.libraries.length - missing.length} found${
          missing.length ? `, missing: ${missing.map((l) => l.soname).join(', ')}` : ''
        }`,
      );
    for (const x of p.problems) {
      lines.push(`  problem: ${x.what}`);
      lines.push(`      fix: ${x.fix}`);
    }
  }
  return lines.join('\n') + '\n';
}

export { installCudaFromWheels, scanWheels, type CudaInstallResult } from './cuda.js';

/** Home-relative default folders expanded (for the CLI). */
export function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p;
}
