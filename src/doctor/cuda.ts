/**
 * The CUDA execution provider from PyPI instead of NuGet.
 *
 * onnxruntime-node loads libonnxruntime_providers_shared.so and
 * libonnxruntime_providers_cuda.so from the folder of its native binding. The PyPI wheel
 * `onnxruntime-gpu` of the same release ships the same two files (onnxruntime/capi/); the CUDA
 * libraries they need come from NVIDIA's wheels (nvidia-cuda-runtime, nvidia-cublas, ...,
 * nvidia-cudnn-cuXX), which put them under nvidia/<component>/lib (CUDA 12) or
 * nvidia/cu13/lib (CUDA 13 and later). `installCudaFromWheels(DIR)` takes a folder holding
 * those wheels (pip download -d DIR) or a tree they were installed into
 * (pip install --target DIR), checks that the onnxruntime-gpu release equals onnxruntime-node's
 * and that the CUDA libraries match the provider's CUDA major version, copies the provider into
 * the binding folder, the libraries into a folder beside it (symlinks for an installed tree),
 * and lists them for preloading (src/runtime/preload.ts).
 *
 * Nothing is downloaded unless `download` is set, which runs pip (the ordinary client) with
 * the exact pinned requirements printed beforehand.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync,
  symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { readElfDynamic } from './elf.js';
import { extractZipMember, listZip, readZipMember, type ZipMember } from './zip.js';
import { bindingDir as defaultBindingDir, ortVersion, writePreloadSet, type PreloadSet } from '../runtime/preload.js';

export const PROVIDER_FILES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'] as const;

/** Folder (beside the binding) that holds the CUDA libraries installed from wheels. */
export const CUDA_LIB_DIR = 'lobes-cuda';

/** A CUDA library family: its soname pattern and the PyPI wheel that provides it per CUDA major. */
interface LibFamily {
  family: string;
  match: RegExp;
  /** pip requirement for CUDA `major`. */
  pip: (major: number) => string;
  /** What it is for, in the doctor's message. */
  role: string;
}

/**
 * Sonames of the CUDA toolkit libraries onnxruntime's CUDA provider needs or opens, and their
 * PyPI wheels (NVIDIA's names: "-cu12" suffixed per component for CUDA 12; unsuffixed for CUDA
 * 13, whose components install into nvidia/cu13/lib; cuDNN keeps "-cuXX").
 */
export const CUDA_LIBS: LibFamily[] = [
  { family: 'cudart', match: /^libcudart\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? `nvidia-cuda-runtime~=${m}.0` : `nvidia-cuda-runtime-cu${m}`), role: 'CUDA runtime' },
  { family: 'cublasLt', match: /^libcublasLt\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? `nvidia-cublas~=${m}.0` : `nvidia-cublas-cu${m}`), role: 'cuBLASLt' },
  { family: 'cublas', match: /^libcublas\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? `nvidia-cublas~=${m}.0` : `nvidia-cublas-cu${m}`), role: 'cuBLAS' },
  { family: 'curand', match: /^libcurand\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? 'nvidia-curand~=10.4' : `nvidia-curand-cu${m}`), role: 'cuRAND' },
  { family: 'cufft', match: /^libcufft\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? 'nvidia-cufft~=12.0' : `nvidia-cufft-cu${m}`), role: 'cuFFT' },
  { family: 'nvrtc', match: /^libnvrtc\.so\.(\d+)$/,
    pip: (m) => (m >= 13 ? `nvidia-cuda-nvrtc~=${m}.0` : `nvidia-cuda-nvrtc-cu${m}`), role: 'NVRTC' },
  { family: 'cudnn', match: /^libcudnn\.so\.(\d+)$/, pip: (m) => `nvidia-cudnn-cu${m}~=9.0`, role: 'cuDNN 9' },
];

/** The CUDA driver library: it comes with the NVIDIA driver, never from PyPI. */
export const DRIVER_LIB = 'libcuda.so.1';

/** Families lobes installs beyond the provider's DT_NEEDED list (opened at run time by some kernels). */
export const RECOMMENDED_FAMILIES = ['cudnn', 'nvrtc', 'cufft'];

/** The pip requirement that provides a soname, for a provider built against CUDA `major`. */
export function pipRequirementFor(soname: string, major: number): string | null {
  for (const f of CUDA_LIBS) if (f.match.test(soname)) return f.pip(major);
  return null;
}

/** CUDA major version a provider library was built for, from its DT_NEEDED (libcudart.so.N / libcublas.so.N). */
export function cudaMajorOf(needed: string[]): number | null {
  for (const n of needed) {
    const m = /^lib(?:cudart|cublas|cublasLt)\.so\.(\d+)$/.exec(n);
    if (m) return Number(m[1]);
  }
  return null;
}

/** Minimum Linux driver for a CUDA major version (CUDA's release notes, "minor version compatibility"). */
export const MIN_DRIVER: Record<number, string> = { 11: '450.80.02', 12: '525.60.13', 13: '580.65.06' };

/** Is driver version `have` at least `need` (dotted numbers)? */
export function driverAtLeast(have: string, need: string): boolean {
  const a = have.split('.').map(Number);
  const b = need.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// What a folder of wheels (or an installed tree) offers

/** A file offered for installation: a wheel member or a file in an installed tree. */
export interface Offered {
  /** Base name (the soname for libraries). */
  name: string;
  /** The wheel file or tree folder it comes from (for messages). */
  from: string;
  wheel?: { file: string; member: ZipMember };
  file?: string;
}

export interface OrtOffer {
  version: string;
  from: string;
  files: Map<string, Offered>;
}

export interface WheelScan {
  dir: string;
  /** Every onnxruntime-gpu found, any version. */
  ort: OrtOffer[];
  /** CUDA libraries by soname (first offer wins). */
  libs: Map<string, Offered>;
  /** Packages seen: "name version (from)". */
  packages: string[];
}

/** Parse a wheel file name: {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl */
export function parseWheelName(file: string): { name: string; version: string } | null {
  const m = /^([A-Za-z0-9_.]+)-([0-9][^-]*)(?:-[0-9][^-]*)?-[^-]+-[^-]+-[^-]+\.whl$/.exec(path.basename(file));
  return m ? { name: m[1]!.toLowerCase().replace(/[_.]+/g, '-'), version: m[2]! } : null;
}

const LIB_NAME = /^lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*\.so(?:\.\d+)*$/;

function isCudaLibName(name: string): boolean {
  return LIB_NAME.test(name) && CUDA_LIBS.some((f) => f.match.test(name) || name.startsWith(`lib${f.family}`));
}

/**
 * Find onnxruntime-gpu releases and NVIDIA CUDA libraries in `dir`: wheel files (*.whl) at its
 * top level and installed trees (*.dist-info beside onnxruntime/ and nvidia/ folders) up to
 * three levels down.
 */
export async function scanWheels(dir: string): Promise<WheelScan> {
  if (!existsSync(dir))
    throw new LobesError('no such folder', { file: dir,
      hint: 'give the folder you downloaded the wheels into (pip download -d DIR ...)' });
  const scan: WheelScan = { dir, ort: [], libs: new Map(), packages: [] };
  const addLib = (o: Offered) => {
    if (!scan.libs.has(o.name)) scan.libs.set(o.name, o);
  };
  // Wheel files.
  for (const f of readdirSync(dir).sort()) {
    if (!f.endsWith('.whl')) continue;
    const file = path.join(dir, f);
    const w = parseWheelName(f);
    if (!w) continue;
    scan.packages.push(`${w.name} ${w.version} (${f})`);
    if (w.name !== 'onnxruntime-gpu' && !w.name.startsWith('nvidia-')) continue;
    const members = listZip(file);
    if (w.name === 'onnxruntime-gpu') {
      const meta = members.find((m) => /^[^/]+\.dist-info\/METADATA$/.test(m.name));
      const version = meta
        ? metadataVersion((await readZipMember(file, meta)).toString('utf8')) ?? w.version
        : w.version;
      const files = new Map<string, Offered>();
      for (const m of members) {
        const base = path.posix.basename(m.name);
        if ((PROVIDER_FILES as readonly string[]).includes(base) && m.name.startsWith('onnxruntime/capi/'))
          files.set(base, { name: base, from: f, wheel: { file, member: m } });
      }
      scan.ort.push({ version, from: f, files });
      continue;
    }
    for (const m of members) {
      const base = path.posix.basename(m.name);
      if (m.name.startsWith('nvidia/') && /\/lib\//.test(m.name) && isCudaLibName(base))
        addLib({ name: base, from: f, wheel: { file, member: m } });
    }
  }
  // Installed trees.
  for (const site of findTrees(dir, 3)) {
    for (const info of readdirSync(site).filter((n) => n.endsWith('.dist-info')).sort()) {
      const meta = path.join(site, info, 'METADATA');
      if (!existsSync(meta)) continue;
      const text = readFileSync(meta, 'utf8');
      const name = /^Name:\s*(.+)$/m.exec(text)?.[1]?.trim().toLowerCase().replace(/[_.]+/g, '-');
      const version = metadataVersion(text);
      if (!name || !version) continue;
      scan.packages.push(`${name} ${version} (${path.join(site, info)})`);
      if (name !== 'onnxruntime-gpu') continue;
      const files = new Map<string, Offered>();
      for (const base of PROVIDER_FILES) {
        const p = path.join(site, 'onnxruntime', 'capi', base);
        if (existsSync(p)) files.set(base, { name: base, from: path.join(site, info), file: p });
      }
      scan.ort.push({ version, from: path.join(site, info), files });
    }
    const nv = path.join(site, 'nvidia');
    if (existsSync(nv)) {
      for (const comp of readdirSync(nv).sort()) {
        const lib = path.join(nv, comp, 'lib');
        if (!existsSync(lib)) continue;
        for (const base of readdirSync(lib).sort())
          if (isCudaLibName(base)) addLib({ name: base, from: lib, file: path.join(lib, base) });
      }
    }
  }
  return scan;
}

function metadataVersion(text: string): string | null {
  return /^Version:\s*(\S+)\s*$/m.exec(text)?.[1] ?? null;
}

/** Folders (dir and below, `depth` levels) that look like site-packages: a *.dist-info inside. */
function findTrees(dir: string, depth: number): string[] {
  const out: string[] = [];
  const walk = (d: string, left: number) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    if (names.some((n) => n.endsWith('.dist-info'))) out.push(d);
    if (left === 0) return;
    for (const n of names.sort()) {
      if (n.endsWith('.dist-info') || n === 'nvidia' || n === 'onnxruntime' || n.startsWith('.')) continue;
      const p = path.join(d, n);
      try {
        if (lstatSync(p).isDirectory()) walk(p, left - 1);
      } catch {
        // unreadable: skip
      }
    }
  };
  walk(dir, depth);
  return out;
}

// ---------------------------------------------------------------------------------------
// Installing

export interface CudaInstallOptions {
  /** Binding folder to install into (default: onnxruntime-node's). */
  bindingDir?: string;
  /** onnxruntime-node version to match (default: from its package.json). */
  ortVersion?: string;
  /** Run pip to download what is missing into `dir` first. */
  download?: boolean;
  /** pip command (default: python3 -m pip). */
  pip?: string[];
  log?: (line: string) => void;
}

export interface CudaInstallResult {
  ortVersion: string;
  cudaMajor: number;
  provider: string[];
  libraries: string[];
  /** Libraries the provider needs that no wheel offered (libcuda.so.1 comes with the driver). */
  missing: string[];
  /** Recommended libraries not offered (cuDNN, NVRTC, cuFFT). */
  missingRecommended: string[];
  /** pip requirements that provide the missing libraries. */
  pipRequirements: string[];
  /** onnxruntime-gpu releases refused, with the reason. */
  refused: string[];
  manifest: string;
}

/** The pip command line that downloads `requirements` into `dir` for this machine's platform. */
export function pipDownloadCommand(dir: string, requirements: string[], pip = ['python3', '-m', 'pip']): string[] {
  const plat = process.arch === 'arm64' ? 'manylinux_2_28_aarch64' : 'manylinux_2_28_x86_64';
  return [...pip, 'download', '--no-deps', '--only-binary=:all:', '--platform', plat, '--python-version', '3.12',
    '--implementation', 'cp', '-d', dir, ...requirements];
}

/** Quote a command for a POSIX shell (for printing). */
export function shellJoin(argv: string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./~-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function runPip(argv: string[], log: (l: string) => void): void {
  log(`running: ${shellJoin(argv)}`);
  const r = spawnSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.error || r.status !== 0) {
    throw new LobesError(`pip download failed (${r.error ? r.error.message : `exit ${r.status}`})`, {
      hint: `run it yourself: ${shellJoin(argv)}`,
    });
  }
}

/** Refusal reason for an onnxruntime-gpu of another release, one line. */
export function versionRefusal(offer: Pick<OrtOffer, 'version' | 'from'>, want: string): string {
  return `${offer.from} is onnxruntime-gpu ${offer.version}, but lobes runs onnxruntime-node ${want}, whose provider bridge loads only providers of the same release (download onnxruntime-gpu==${want})`;
}

/**
 * Install the CUDA provider and its libraries from the wheels in `dir` (see the module
 * comment). Returns what was installed and what is still missing.
 */
export async function installCudaFromWheels(dir: string, opts: CudaInstallOptions = {}): Promise<CudaInstallResult> {
  const log = opts.log ?? (() => {});
  const want = opts.ortVersion ?? ortVersion();
  if (!want) throw new LobesError('cannot find onnxruntime-node (is lobes installed with its dependencies?)');
  const bdir = opts.bindingDir ?? defaultBindingDir();
  if (!bdir || !existsSync(bdir))
    throw new LobesError("onnxruntime-node's native binding folder is missing", { file: bdir ?? 'onnxruntime-node',
      hint: 'reinstall: npm ci' });
  if (process.platform !== 'linux' && !opts.bindingDir)
    throw new LobesError(
      `installing the CUDA provider from PyPI wheels is supported on Linux only (this is ${process.platform})`,
    );
  const pip = opts.pip ?? ['python3', '-m', 'pip'];
  mkdirSync(dir, { recursive: true });

  let scan = await scanWheels(dir);
  let ort = scan.ort.find((o) => o.version === want);
  if (!ort && opts.download) {
    runPip(pipDownloadCommand(dir, [`onnxruntime-gpu==${want}`], pip), log);
    scan = await scanWheels(dir);
    ort = scan.ort.find((o) => o.version === want);
  }
  const refused = scan.ort.filter((o) => o.version !== want).map((o) => versionRefusal(o, want));
  if (!ort) {
    throw new LobesError(refused.length ? refused[0]! : `no onnxruntime-gpu wheel or installed tree in the folder`, {
      file: dir,
      hint: refused.length
        ? undefined
        : `${shellJoin(pipDownloadCommand(dir, [`onnxruntime-gpu==${want}`], pip))}, then run this again (or add ${
          opt('download')
        })`,
    });
  }
  for (const f of PROVIDER_FILES) {
    if (!ort.files.has(f))
      throw new LobesError(`onnxruntime-gpu ${ort.version} has no onnxruntime/capi/${f}`, { file: ort.from,
        hint: 'is it the Linux wheel for this architecture?' });
  }

  // The provider, into the binding folder.
  const provider: string[] = [];
  for (const f of PROVIDER_FILES) {
    const dest = path.join(bdir, f);
    await place(ort.files.get(f)!, dest, false);
    provider.push(dest);
  }
  const cudaPath = path.join(bdir, 'libonnxruntime_providers_cuda.so');
  const needed = readElfDynamic(cudaPath).needed;
  const major = cudaMajorOf(needed);
  if (major === null)
    throw new LobesError('the CUDA provider links no libcudart/libcublas, so its CUDA version is unknown', {
      file: cudaPath,
    });
  log(`onnxruntime-gpu ${ort.version} from ${ort.from}: CUDA ${major} provider installed into ${bdir}`);

  // CUDA libraries: those the provider needs (DT_NEEDED) and the recommended ones.
  const neededCuda = needed.filter((n) => pipRequirementFor(n, major) !== null);
  const wantedFamilies = new Set([...neededCuda.map((n) => CUDA_LIBS.find((f) => f.match.test(n))!.family),
    ...RECOMMENDED_FAMILIES]);
  const fits = (name: string) => {
    const fam = CUDA_LIBS.find((f) => name.startsWith(`lib${f.family}`));
    if (!fam || !wantedFamilies.has(fam.family)) return false;
    const ver = /\.so\.(\d+)/.exec(name)?.[1];
    // cuDNN 9 (and its sub-libraries) for any CUDA major; other families carry the CUDA major (curand/cufft their own).
    if (fam.family === 'cudnn') return ver === '9';
    if (fam.family === 'curand' || fam.family === 'cufft') return true;
    return ver === String(major);
  };
  const missingOf = (s: WheelScan) => ({
    required: neededCuda.filter((n) => !s.libs.has(n)),
    recommended: RECOMMENDED_FAMILIES.map((fam) => CUDA_LIBS.find((f) => f.family === fam)!)
      .filter((f) => ![...s.libs.keys()].some((n) => f.match.test(n) && fits(n)))
      .map((
        f,
      ) => (f.family === 'cudnn'
        ? 'libcudnn.so.9'
        : f.family === 'cufft'
        ? `libcufft.so.${major >= 13 ? 12 : 11}`
        : `lib${f.family}.so.${major}`)
      ),
  });
  let miss = missingOf(scan);
  if ((miss.required.length || miss.recommended.length) && opts.download) {
    const reqs = [...new Set([...miss.required, ...miss.recommended].map((n) => pipRequirementFor(n, major)!))];
    runPip(pipDownloadCommand(dir, reqs, pip), log);
    scan = await scanWheels(dir);
    miss = missingOf(scan);
  }

  const libDir = path.join(bdir, CUDA_LIB_DIR);
  mkdirSync(libDir, { recursive: true });
  const libraries: string[] = [];
  for (const [name, offer] of scan.libs) {
    if (!fits(name)) continue;
    const dest = path.join(libDir, name);
    await place(offer, dest, true);
    libraries.push(dest);
  }
  const order = loadOrder(libraries);
  const required = order.filter((p) => neededCuda.includes(path.basename(p)));
  const set: PreloadSet = { libraries: order, required, source: path.resolve(dir),
    installedAt: new Date().toISOString(), cudaMajor: major };
  const manifest = writePreloadSet(bdir, want, 'cuda', set);
  log(`${libraries.length} CUDA libraries in ${libDir}; preload list in ${manifest}`);
  return {
    ortVersion: ort.version,
    cudaMajor: major,
    provider,
    libraries: order,
    missing: miss.required,
    missingRecommended: miss.recommended,
    pipRequirements: [...new Set([...miss.required, ...miss.recommended].map((n) => pipRequirementFor(n, major)!))],
    refused,
    manifest,
  };
}

/** Copy (wheel member) or symlink (installed tree file) an offered file to `dest`. */
async function place(o: Offered, dest: string, link: boolean): Promise<void> {
  if (o.wheel) {
    await extractZipMember(o.wheel.file, o.wheel.member, dest, 0o755);
    return;
  }
  const src = realpathSync(o.file!);
  rmSync(dest, { force: true });
  if (link) symlinkSync(src, dest);
  else await extractCopy(src, dest);
}

async function extractCopy(src: string, dest: string): Promise<void> {
  const { copyFileSync, renameSync, chmodSync } = await import('node:fs');
  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.tmp-${process.pid}`);
  copyFileSync(src, tmp);
  chmodSync(tmp, 0o755);
  renameSync(tmp, dest);
}

/**
 * Order libraries so each comes after the ones it needs (by DT_NEEDED among the set), keeping
 * the given order otherwise. A library that cannot be read keeps its place.
 */
export function loadOrder(files: string[]): string[] {
  const bySoname = new Map<string, string>();
  const needs = new Map<string, string[]>();
  for (const f of files) {
    try {
      const e = readElfDynamic(f);
      bySoname.set(e.soname ?? path.basename(f), f);
      needs.set(f, e.needed);
    } catch {
      bySoname.set(path.basename(f), f);
      needs.set(f, []);
    }
  }
  const out: string[] = [];
  const state = new Map<string, 0 | 1 | 2>();
  const visit = (f: string) => {
    if (state.get(f) === 2 || state.get(f) === 1) return; // done, or a cycle: keep going
    state.set(f, 1);
    for (const n of needs.get(f) ?? []) {
      const dep = bySoname.get(n);
      if (dep && dep !== f) visit(dep);
    }
    state.set(f, 2);
    out.push(f);
  };
  for (const f of files) visit(f);
  return out;
}
