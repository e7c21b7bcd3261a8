/**
 * The CUDA provider from PyPI wheels, in fake binding folders (the real onnxruntime-node is
 * never touched): discovery in wheel folders and installed trees, the version check, the
 * install and its preload list, the loader-order resolution, and the doctor's findings.
 *
 * Fixtures: test/doctor/fixtures/make-fixtures.py builds tiny real ELF libraries with the
 * sonames and DT_NEEDED lists of onnxruntime's CUDA provider and NVIDIA's CUDA 13 libraries.
 * The oracle for "the provider can be loaded" is glibc's own loader: a child process dlopens
 * the installed provider after lobes' preload, and without it.
 */
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync,
  writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { installCudaFromWheels, scanWheels, cudaMajorOf, pipRequirementFor, driverAtLeast, loadOrder,
  versionRefusal } from '../../src/doctor/cuda.js';
import { checkProviders, nvidiaDriverVersion, vulkanIcds } from '../../src/doctor/index.js';
import { findLibrary, resolveClosure, type LinkerEnv } from '../../src/doctor/resolve.js';
import { listZip, extractZipMember } from '../../src/doctor/zip.js';
import { readPreloadManifest } from '../../src/runtime/preload.js';
import { readLdCache } from '../../src/doctor/ldcache.js';
import { LobesError } from '../../src/util/errors.js';

const ROOT = path.resolve(__dirname, '..', '..');
const FIX = path.join(__dirname, 'fixtures');
const WHEELS = path.join(FIX, 'wheels');
const DRIVER = path.join(FIX, 'driver');
const LINUX_X64 = process.platform === 'linux' && process.arch === 'x64';
if (!LINUX_X64)
  console.log(
    `doctor CUDA tests skipped: the fixtures are x86-64 Linux libraries (this is ${process.platform}/${process.arch})`,
  );

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-doctor-cuda-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder with some of the fixture wheels (by file-name prefix). */
function wheelDir(name: string, prefixes: string[]): string {
  const d = path.join(tmp, name);
  mkdirSync(d, { recursive: true });
  for (const f of readdirSync(WHEELS))
    if (prefixes.some((p) => f.startsWith(p))) cpSync(path.join(WHEELS, f), path.join(d, f));
  return d;
}

/** A fake onnxruntime-node binding folder. */
function bindingDir(name: string): string {
  const d = path.join(tmp, name, 'bin', 'napi-v6', 'linux', 'x64');
  mkdirSync(d, { recursive: true });
  return d;
}

/** The system's C and C++ runtime libraries from ld.so.cache (never CUDA libraries a GPU box may have). */
const SYSTEM = new Map([...readLdCache()].filter(([k]) => /^lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so\.\d+$/.test(k)));

const ALL = ['onnxruntime_gpu-1.30.0', 'nvidia_cuda_runtime-', 'nvidia_cublas-', 'nvidia_curand-', 'nvidia_cudnn_cu13-',
  'nvidia_cuda_runtime_cu12-'];

/** Run node in a child: preload (optional) then dlopen the provider; print the loader's answer. */
function loadProvider(bdir: string, preload: boolean, ldPath: string): string {
  const code = `
    import { preloadProviderLibraries, dlopenGlobal } from ${JSON.stringify(path.join(ROOT, 'src/runtime/preload.ts'))};
    if (${preload}) preloadProviderLibraries('cuda', ${JSON.stringify(bdir)});
    const err = dlopenGlobal(${JSON.stringify(path.join(bdir, 'libonnxruntime_providers_cuda.so'))});
    const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
    console.log(JSON.stringify({ err, cublas: maps.includes('/libcublas.so.13') }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT,
    encoding: 'utf8', env: { ...process.env, LD_LIBRARY_PATH: ldPath } });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`child failed: ${r.stderr}`);
  return line;
}

describe.skipIf(!LINUX_X64)('CUDA provider from wheels', () => {
  let wheels: string;
  beforeAll(() => {
    wheels = wheelDir('all', ALL);
  });

  it('finds onnxruntime-gpu releases and CUDA libraries in a wheel folder', async () => {
    const s = await scanWheels(wheelDir('scan', [...ALL, 'onnxruntime_gpu-1.29.0']));
    expect(s.ort.map((o) => o.version).sort()).toEqual(['1.29.0', '1.30.0']);
    expect([...s.ort[0]!.files.keys()].sort()).toEqual(['libonnxruntime_providers_cuda.so',
      'libonnxruntime_providers_shared.so']);
    expect([...s.libs.keys()].sort()).toEqual(['libcublas.so.13', 'libcublasLt.so.13', 'libcudart.so.12',
      'libcudart.so.13', 'libcudnn.so.9', 'libcudnn_graph.so.9', 'libcurand.so.10']);
  });

  it('refuses an onnxruntime-gpu of another release with a one-line reason, installing nothing', async () => {
    const dir = wheelDir('old', ['onnxruntime_gpu-1.29.0', 'nvidia_cuda_runtime-']);
    const bdir = bindingDir('refused');
    const err = await installCudaFromWheels(dir, { bindingDir: bdir, ortVersion: '1.30.0' }).catch((e) => e);
    expect(err).toBeInstanceOf(LobesError);
    expect(err.message).not.toMatch(/\n/);
    expect(err.message).toBe(
      `${dir}: onnxruntime_gpu-1.29.0-cp312-cp312-manylinux_2_28_x86_64.whl is onnxruntime-gpu 1.29.0, but lobes runs onnxruntime-node 1.30.0, whose provider bridge loads only providers of the same release (download onnxruntime-gpu==1.30.0)`,
    );
    expect(readdirSync(bdir)).toEqual([]);
    // no onnxruntime-gpu at all: the pip command to get it
    const none = wheelDir('none', ['nvidia_cuda_runtime-']);
    await expect(installCudaFromWheels(none, { bindingDir: bdir, ortVersion: '1.30.0' })).rejects.toThrow(
      /no onnxruntime-gpu wheel or installed tree in the folder \(.*pip download --no-deps .* onnxruntime-gpu==1\.30\.0, then run this again/,
    );
    expect(versionRefusal({ version: '1.31.0', from: 'x.whl' }, '1.30.0')).toContain('onnxruntime-gpu==1.30.0');
  });

  it('installs the provider and the CUDA 13 libraries, dependencies first, and the real loader then finds them all', async () => {
    const bdir = bindingDir('ok');
    const r = await installCudaFromWheels(wheels, { bindingDir: bdir, ortVersion: '1.30.0' });
    expect(r.cudaMajor).toBe(13);
    expect(readdirSync(bdir).sort()).toEqual(['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so',
      'lobes-cuda', 'lobes-providers.json']);
    // the CUDA 12 runtime is not installed next to a CUDA 13 provider
    expect(readdirSync(path.join(bdir, 'lobes-cuda')).sort()).toEqual(['libcublas.so.13', 'libcublasLt.so.13',
      'libcudart.so.13', 'libcudnn.so.9', 'libcudnn_graph.so.9', 'libcurand.so.10']);
    const names = r.libraries.map((p) => path.basename(p));
    // make-fixtures.py: cublasLt needs cudart; cublas needs cublasLt and cudart; cudnn_graph needs cudnn
    const before = (a: string, b: string) =>
      expect(names.indexOf(a), `${a} before ${b}`).toBeLessThan(names.indexOf(b));
    before('libcudart.so.13', 'libcublasLt.so.13');
    before('libcublasLt.so.13', 'libcublas.so.13');
    before('libcudnn.so.9', 'libcudnn_graph.so.9');
    expect(r.missing).toEqual([]);
    expect(r.missingRecommended).toEqual(['libnvrtc.so.13', 'libcufft.so.12']);
    expect(r.pipRequirements).toEqual(['nvidia-cuda-nvrtc~=13.0', 'nvidia-cufft~=12.0']);
    const m = readPreloadManifest(bdir)!;
    expect(m.onnxruntime).toBe('1.30.0');
    expect(m.cuda!.required.map((p) => path.basename(p)).sort()).toEqual(['libcublas.so.13', 'libcublasLt.so.13',
      'libcudart.so.13', 'libcurand.so.10']);
    // glibc's loader: without the preload the provider cannot be loaded; with it (and the driver library) it can
    const without = JSON.parse(loadProvider(bdir, false, DRIVER));
    expect(without.err).toMatch(/libcublasLt\.so\.13: cannot open shared object file/);
    const withPre = JSON.parse(loadProvider(bdir, true, DRIVER));
    expect(withPre).toEqual({ err: null, cublas: true });
    // and without the driver library, only libcuda.so.1 is missing
    expect(JSON.parse(loadProvider(bdir, true, '')).err).toMatch(/libcuda\.so\.1: cannot open shared object file/);
  });

  it('links the libraries of an installed tree (pip install --target) instead of copying them', async () => {
    const site = path.join(tmp, 'site');
    for (const w of readdirSync(wheels)) {
      for (const m of listZip(path.join(wheels, w))) {
        const dest = path.join(site, m.name);
        mkdirSync(path.dirname(dest), { recursive: true });
        await extractZipMember(path.join(wheels, w), m, dest, 0o755);
      }
    }
    const bdir = bindingDir('tree');
    const r = await installCudaFromWheels(path.join(tmp, 'site'), { bindingDir: bdir, ortVersion: '1.30.0' });
    expect(r.libraries.length).toBe(6);
    const lib = path.join(bdir, 'lobes-cuda', 'libcublas.so.13');
    expect(lstatSync(lib).isSymbolicLink()).toBe(true);
    expect(JSON.parse(loadProvider(bdir, true, DRIVER))).toEqual({ err: null, cublas: true });
  });

  it('reports what the provider still misses, with the pip command for each family', async () => {
    const dir = wheelDir('partial', ['onnxruntime_gpu-1.30.0', 'nvidia_cuda_runtime-', 'nvidia_curand-']);
    const bdir = bindingDir('partial');
    const r = await installCudaFromWheels(dir, { bindingDir: bdir, ortVersion: '1.30.0' });
    expect(r.missing).toEqual(['libcublasLt.so.13', 'libcublas.so.13']);
    expect(r.pipRequirements).toEqual(['nvidia-cublas~=13.0', 'nvidia-cudnn-cu13~=9.0', 'nvidia-cuda-nvrtc~=13.0',
      'nvidia-cufft~=12.0']);
    const sys = path.join(tmp, 'sys-partial');
    mkdirSync(path.join(sys, 'proc/driver/nvidia'), { recursive: true });
    writeFileSync(path.join(sys, 'proc/driver/nvidia/version'),
      'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07  Wed Aug 13 2025\nGCC version:  gcc 12\n');
    const rep = checkProviders({ bindingDir: bdir, sysRoot: sys,
      backends: [{ name: 'cpu', bundled: true }, { name: 'cuda', bundled: false }],
      linker: { cache: SYSTEM, defaultDirs: [DRIVER], ldLibraryPath: [] }, env: {} });
    const cuda = rep.providers.find((p) => p.name === 'cuda')!;
    expect(cuda.usable).toBe(false);
    expect(cuda.libraries.filter((l) => !l.path).map((l) => l.soname)).toEqual(['libcublasLt.so.13',
      'libcublas.so.13']);
    expect(cuda.problems).toHaveLength(1);
    expect(cuda.problems[0]!.what).toBe(
      'libcublasLt.so.13, libcublas.so.13 are not found (CUDA 13 libraries the provider links)',
    );
    expect(cuda.problems[0]!.fix).toBe(
      `python3 -m pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.12 --implementation cp -d ${dir} nvidia-cublas~=13.0 && lobes doctor --install-cuda-from-wheels ${dir}`,
    );
    expect(cuda.notes).toContain('provider built for CUDA 13');
  });

  it("checks the driver: absent, too old for the provider's CUDA, or fine", async () => {
    const bdir = bindingDir('driver');
    await installCudaFromWheels(wheels, { bindingDir: bdir, ortVersion: '1.30.0' });
    const check = (version: string | null, defaultDirs: string[]) => {
      const sys = path.join(tmp, `sys-${version}`);
      mkdirSync(path.join(sys, 'proc/driver/nvidia/gpus/0000:01:00.0'), { recursive: true });
      if (version)
        writeFileSync(path.join(sys, 'proc/driver/nvidia/version'),
          `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  ${version}  Release Build\n`);
      writeFileSync(path.join(sys, 'proc/driver/nvidia/gpus/0000:01:00.0/information'),
        'Model: \t\t NVIDIA H100 80GB HBM3\nIRQ: 1\n');
      return checkProviders({ bindingDir: bdir, sysRoot: sys, backends: [{ name: 'cuda', bundled: false }],
        linker: { cache: SYSTEM, defaultDirs, ldLibraryPath: [] }, env: {} });
    };
    const ok = check('580.95.05', [DRIVER]);
    expect(ok.system).toMatchObject({ nvidiaDriver: '580.95.05', gpus: ['NVIDIA H100 80GB HBM3 (0000:01:00.0)'] });
    expect(ok.providers.find((p) => p.name === 'cuda')!.problems).toEqual([]);
    expect(ok.providers.find((p) => p.name === 'cuda')!.usable).toBe(true);
    const old = check('575.57.08', [DRIVER]).providers.find((p) => p.name === 'cuda')!;
    expect(old.problems.map((p) => p.what)).toEqual([
      'NVIDIA driver 575.57.08 is older than 580.65.06, the minimum for CUDA 13',
    ]);
    const none = check(null, []).providers.find((p) => p.name === 'cuda')!;
    expect(none.problems.map((p) => p.what)).toEqual([
      'libcuda.so.1 (the CUDA driver library) is not found',
      'no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent): no CUDA GPU is usable here',
    ]);
    expect(none.problems[0]!.fix).toMatch(/NVIDIA driver/);
  });

  it('says how to get the provider when it is not installed', () => {
    const rep = checkProviders({ bindingDir: bindingDir('empty'), backends: [{ name: 'cuda', bundled: false }],
      linker: { cache: new Map(), defaultDirs: [], ldLibraryPath: [] }, env: {}, wheelDir: '/w' });
    const c = rep.providers[1]!;
    expect(c.name).toBe('cuda');
    expect(c.problems.map((p) => p.what)).toEqual([
      "the CUDA provider is not installed (libonnxruntime_providers_shared.so, libonnxruntime_providers_cuda.so missing from onnxruntime-node's binding folder)",
    ]);
    expect(c.problems[0]!.fix).toMatch(
      /^lobes doctor --install-cuda-from-wheels \/w --download .*onnxruntime-gpu==\d+\.\d+\.\d+.*ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules\/onnxruntime-node\/script\/install.js/,
    );
  });
});

describe.skipIf(!LINUX_X64)('library resolution (ld.so order)', () => {
  let lib: string;
  beforeAll(async () => {
    lib = path.join(tmp, 'res');
    mkdirSync(lib, { recursive: true });
    const w = path.join(WHEELS, readdirSync(WHEELS).find((f) => f.startsWith('onnxruntime_gpu-1.30.0'))!);
    await extractZipMember(w, listZip(w).find((m) => m.name.endsWith('providers_cuda.so'))!, path.join(lib, 'prov.so'),
      0o755);
    for (const prefix of ['nvidia_cuda_runtime-', 'nvidia_cublas-', 'nvidia_curand-']) {
      const f = path.join(WHEELS, readdirSync(WHEELS).find((x) => x.startsWith(prefix))!);
      for (const m of listZip(f))
        if (/\.so\.\d+$/.test(m.name)) {
          mkdirSync(path.join(lib, 'cuda'), { recursive: true });
          await extractZipMember(f, m, path.join(lib, 'cuda', path.basename(m.name)), 0o755);
        }
    }
  });
  const env = (over: Partial<LinkerEnv>): LinkerEnv => ({ ldLibraryPath: [], cache: new Map(), defaultDirs: [],
    loaded: new Map(), machine: 62, ...over });

  it('finds libraries through LD_LIBRARY_PATH, the cache and the default folders; lists the rest as missing', () => {
    const r = resolveClosure(path.join(lib, 'prov.so'),
      env({ ldLibraryPath: [path.join(lib, 'cuda')],
        cache: new Map([['libc.so.6', ['/lib/x86_64-linux-gnu/libc.so.6']]]), defaultDirs: [DRIVER] }));
    const by = Object.fromEntries(r.libs.map((l) => [l.soname, l.via]));
    // libc.so.6 in turn needs the dynamic loader, which is always there
    expect(by).toEqual({ 'libcublasLt.so.13': 'LD_LIBRARY_PATH', 'libcublas.so.13': 'LD_LIBRARY_PATH',
      'libcurand.so.10': 'LD_LIBRARY_PATH', 'libcudart.so.13': 'LD_LIBRARY_PATH', 'libcuda.so.1': 'default',
      'libc.so.6': 'ld.so.cache', 'ld-linux-x86-64.so.2': 'loaded' });
    const bare = resolveClosure(path.join(lib, 'prov.so'), env({}));
    expect(bare.libs.filter((l) => !l.path).map((l) => l.soname)).toEqual(['libcublasLt.so.13', 'libcublas.so.13',
      'libcurand.so.10', 'libcudart.so.13', 'libcuda.so.1', 'libc.so.6']);
  });

  it("prefers an already loaded library, expands $ORIGIN in RPATH, and skips another architecture's file", () => {
    const pre = new Map([['libcudart.so.13', '/preloaded/libcudart.so.13']]);
    expect(
      findLibrary('libcudart.so.13', { rpath: [], runpath: [], file: 'x' }, path.join(lib, 'prov.so'),
        env({ loaded: pre, ldLibraryPath: [path.join(lib, 'cuda')] })),
    ).toMatchObject({ path: '/preloaded/libcudart.so.13', via: 'loaded' });
    // libcurand's DT_RPATH is $ORIGIN/../rp: a library there is found via rpath
    mkdirSync(path.join(lib, 'rp'), { recursive: true });
    cpSync(path.join(lib, 'cuda', 'libcudart.so.13'), path.join(lib, 'rp', 'libdep.so.1'));
    const viaRpath = findLibrary('libdep.so.1', { rpath: ['$ORIGIN/../rp'], runpath: [], file: 'x' },
      path.join(lib, 'cuda', 'libcurand.so.10'), env({}));
    expect(viaRpath).toMatchObject({ via: 'rpath', path: path.join(lib, 'rp', 'libdep.so.1') });
    // RPATH is ignored when RUNPATH is present (ld.so(8))
    expect(
      findLibrary('libdep.so.1', { rpath: ['$ORIGIN/../rp'], runpath: ['/nowhere'], file: 'x' },
        path.join(lib, 'cuda', 'libcurand.so.10'), env({})).path,
    ).toBeNull();
    const arm = path.join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/arm64/libonnxruntime.so.1');
    if (existsSync(arm)) {
      mkdirSync(path.join(lib, 'arm'), { recursive: true });
      symlinkSync(arm, path.join(lib, 'arm', 'libcudart.so.13'));
      const r = findLibrary('libcudart.so.13', { rpath: [], runpath: [], file: 'x' }, path.join(lib, 'prov.so'),
        env({ ldLibraryPath: [path.join(lib, 'arm'), path.join(lib, 'cuda')] }));
      expect(r).toMatchObject({ via: 'LD_LIBRARY_PATH', path: path.join(lib, 'cuda', 'libcudart.so.13') });
      const only = findLibrary('libcudart.so.13', { rpath: [], runpath: [], file: 'x' }, path.join(lib, 'prov.so'),
        env({ ldLibraryPath: [path.join(lib, 'arm')] }));
      expect(only.path).toBeNull();
      expect(only.note).toMatch(/built for ELF machine 183, not 62/);
    }
  });

  it('orders libraries so each follows the ones it needs', () => {
    const files = ['libcublas.so.13', 'libcublasLt.so.13', 'libcudart.so.13'].map((f) => path.join(lib, 'cuda', f));
    expect(loadOrder(files).map((f) => path.basename(f))).toEqual(['libcudart.so.13', 'libcublasLt.so.13',
      'libcublas.so.13']);
  });
});

describe('catalogue and system facts', () => {
  it('maps sonames to NVIDIA wheels for CUDA 12 and 13', () => {
    expect(cudaMajorOf(['libcublasLt.so.13', 'libcudart.so.13'])).toBe(13);
    expect(cudaMajorOf(['libc.so.6'])).toBeNull();
    expect(pipRequirementFor('libcudart.so.12', 12)).toBe('nvidia-cuda-runtime-cu12');
    expect(pipRequirementFor('libcudart.so.13', 13)).toBe('nvidia-cuda-runtime~=13.0');
    expect(pipRequirementFor('libcublasLt.so.12', 12)).toBe('nvidia-cublas-cu12');
    expect(pipRequirementFor('libcudnn.so.9', 13)).toBe('nvidia-cudnn-cu13~=9.0');
    expect(pipRequirementFor('libstdc++.so.6', 13)).toBeNull();
    expect(driverAtLeast('580.65.06', '580.65.06')).toBe(true);
    expect(driverAtLeast('580.9', '580.65.06')).toBe(false);
    expect(driverAtLeast('590.1', '580.65.06')).toBe(true);
  });

  it('reads the driver version and the Vulkan drivers from fake /proc and /usr trees', () => {
    const sys = path.join(tmp, 'sys-vk');
    mkdirSync(path.join(sys, 'proc/driver/nvidia'), { recursive: true });
    writeFileSync(path.join(sys, 'proc/driver/nvidia/version'),
      'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n');
    expect(nvidiaDriverVersion(sys)).toBe('535.104.05');
    mkdirSync(path.join(sys, 'usr/share/vulkan/icd.d'), { recursive: true });
    writeFileSync(path.join(sys, 'usr/share/vulkan/icd.d/nvidia_icd.json'),
      JSON.stringify({ file_format_version: '1.0.0',
        ICD: { library_path: 'libGLX_nvidia.so.0', api_version: '1.3.242' } }));
    expect(vulkanIcds({}, sys)).toEqual([{ file: path.join(sys, 'usr/share/vulkan/icd.d/nvidia_icd.json'),
      library: 'libGLX_nvidia.so.0' }]);
    const explicit = path.join(tmp, 'my_icd.json');
    writeFileSync(explicit, '{"ICD": {"library_path": "/opt/x/libvk.so"}}');
    expect(vulkanIcds({ VK_ICD_FILENAMES: explicit }, sys)).toEqual([{ file: explicit, library: '/opt/x/libvk.so' }]);
    expect(readFileSync(explicit, 'utf8')).toContain('libvk');
  });
});

describe.skipIf(!LINUX_X64)('WebGPU: the Vulkan loader and drivers', () => {
  it('records a Vulkan loader found in an unpacked package and counts it as loaded', async () => {
    const { installVulkanFrom } = await import('../../src/doctor/vulkan.js');
    // the fixture loader (soname libvulkan.so.1) where Debian's libvulkan1 unpacks it
    const pkg = path.join(FIX, 'vulkan', 'usr', 'lib', 'x86_64-linux-gnu');
    const bdir = bindingDir('vk');
    const r = installVulkanFrom(path.join(FIX, 'vulkan'), { bindingDir: bdir, ortVersion: '1.30.0' });
    expect(r.library).toBe(path.join(pkg, 'libvulkan.so.1.3.239'));
    expect(readPreloadManifest(bdir)!.webgpu).toMatchObject({ libraries: [r.library], required: [r.library] });
    // a driver manifest naming a library the loader can find: no problem left
    const sys = path.join(tmp, 'sys-webgpu');
    mkdirSync(path.join(sys, 'usr/share/vulkan/icd.d'), { recursive: true });
    writeFileSync(path.join(sys, 'usr/share/vulkan/icd.d/nvidia_icd.json'),
      JSON.stringify({ ICD: { library_path: 'libcuda.so.1' } }));
    const ok = checkProviders({ bindingDir: bdir, sysRoot: sys, backends: [{ name: 'webgpu', bundled: true }],
      linker: { cache: new Map(), defaultDirs: [DRIVER], ldLibraryPath: [] }, env: { XDG_DATA_DIRS: '/usr/share' } });
    const w = ok.providers.find((p) => p.name === 'webgpu')!;
    expect(w.libraries[0]).toMatchObject({ soname: 'libvulkan.so.1', via: 'loaded', path: r.library });
    expect(w.problems).toEqual([]);
    expect(w.usable).toBe(true);
    // no loader, no driver: two problems, each with its fix
    const none = checkProviders({ bindingDir: bindingDir('vk-none'), sysRoot: path.join(tmp, 'empty-sys'),
      backends: [{ name: 'webgpu', bundled: true }], linker: { cache: new Map(), defaultDirs: [], ldLibraryPath: [] },
      env: {} });
    const n = none.providers.find((p) => p.name === 'webgpu')!;
    expect(n.problems.map((p) => p.what)).toEqual(['libvulkan.so.1 (the Vulkan loader) is not found',
      'no Vulkan driver (ICD) is registered, so WebGPU finds no adapter']);
    expect(n.problems[0]!.fix).toContain('apt-get download libvulkan1 && dpkg-deb -x libvulkan1_*.deb');
    expect(n.problems[0]!.fix).toContain('lobes doctor --install-vulkan-from');
  });

  it('refuses a folder whose libvulkan.so.1 is built for another architecture', async () => {
    const { installVulkanFrom } = await import('../../src/doctor/vulkan.js');
    const arm = path.join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/arm64/libonnxruntime.so.1');
    if (!existsSync(arm)) return;
    const d = path.join(tmp, 'vk-arm');
    mkdirSync(d, { recursive: true });
    symlinkSync(arm, path.join(d, 'libvulkan.so.1'));
    expect(() => installVulkanFrom(d, { bindingDir: bindingDir('vk-arm-b'), ortVersion: '1.30.0' })).toThrow(
      /not built for this machine's architecture/,
    );
    expect(() =>
      installVulkanFrom(path.join(tmp, 'site'), { bindingDir: bindingDir('vk-arm-b'), ortVersion: '1.30.0' })
    ).toThrow(/no libvulkan\.so\.1 in the folder/);
  });
});
