import { parseCommand } from './args.js';
import { DEVICES, JSON_OPTION } from './options.js';
import { UsageError } from '../util/errors.js';
import { expandHome, formatReport, runDoctor, type ProviderName } from '../doctor/index.js';
import { installCudaFromWheels, pipDownloadCommand, shellJoin } from '../doctor/cuda.js';
import { installVulkanFrom } from '../doctor/vulkan.js';

const spec = {
  usage:
    'lobes doctor [--device cpu|cuda|webgpu] [--no-probe] [--json] | --install-cuda-from-wheels DIR [--download] | --install-vulkan-from DIR',
  help: `
Which execution providers onnxruntime-node can load on this machine, which shared libraries
each one misses (resolved as the dynamic loader would), and the one command that fixes each.
Each provider is also loaded for real: a child process creates a session on a one-node model.

  --device D                  exit 1 unless provider D (default cpu) is usable
  --no-probe                  static checks only (no provider is loaded)
  --json                      the report as JSON on stdout

  --install-cuda-from-wheels DIR
                              add the CUDA provider from PyPI wheels instead of NuGet. DIR holds
                              the wheels (pip download -d DIR ...) or a tree they were installed
                              into (pip install --target DIR ...): onnxruntime-gpu of exactly
                              onnxruntime-node's version (a wheel of another release is refused)
                              and NVIDIA's CUDA wheels (nvidia-cuda-runtime, nvidia-cublas,
                              nvidia-curand, nvidia-cudnn-cuXX, ...). The provider is copied next
                              to onnxruntime-node's binding, the CUDA libraries into lobes-cuda/
                              beside it (symlinked from an installed tree), and lobes loads them
                              before a CUDA session (no LD_LIBRARY_PATH needed).
  --download                  with --install-cuda-from-wheels: run pip to download what DIR lacks
                              (the command is printed first; without this flag nothing is downloaded)
  --install-vulkan-from DIR   use the Vulkan loader (libvulkan.so.1) found in DIR for WebGPU, e.g.
                              apt-get download libvulkan1 && dpkg-deb -x libvulkan1_*.deb DIR

Exit status: 0 when the provider asked for with --device (default cpu) is usable, or the
installation succeeded; 1 when it is not, or the installation was refused; 2 for usage errors.
`,
  options: {
    device: { type: 'string', choices: DEVICES },
    'no-probe': { type: 'boolean' },
    ...JSON_OPTION,
    'install-cuda-from-wheels': { type: 'string' },
    download: { type: 'boolean' },
    'install-vulkan-from': { type: 'string' },
  },
  positionals: [0, 0] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = p.values;
  const device = (v.device ?? 'cpu') as ProviderName;
  if (v.download && !v['install-cuda-from-wheels'])
    throw new UsageError('--download goes with --install-cuda-from-wheels DIR');
  if (v['install-cuda-from-wheels'] && v['install-vulkan-from'])
    throw new UsageError('give --install-cuda-from-wheels or --install-vulkan-from, not both');
  const log = (l: string) => process.stderr.write(l + '\n');

  if (v['install-cuda-from-wheels']) {
    const dir = expandHome(String(v['install-cuda-from-wheels']));
    const r = await installCudaFromWheels(dir, { download: !!v.download, log });
    if (v.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    else {
      for (const x of r.refused) process.stdout.write(`refused: ${x}\n`);
      process.stdout.write(
        `installed the CUDA ${r.cudaMajor} provider of onnxruntime-gpu ${r.ortVersion} and ${r.libraries.length} CUDA libraries (${r.manifest})\n`,
      );
      if (r.missing.length) {
        process.stdout.write(`still missing (the provider links them): ${r.missing.join(', ')}\n`);
      }
      if (r.missingRecommended.length)
        process.stdout.write(
          `not installed (recommended, opened at run time by some kernels): ${r.missingRecommended.join(', ')}\n`,
        );
      if (r.missing.length || r.missingRecommended.length) {
        process.stdout.write(
          `  fix: ${
            shellJoin(pipDownloadCommand(dir, r.pipRequirements))
          } && lobes doctor --install-cuda-from-wheels ${dir}\n`,
        );
      }
      process.stdout.write('check with: lobes doctor --device cuda\n');
    }
    return r.missing.length ? 1 : 0;
  }
  if (v['install-vulkan-from']) {
    const r = installVulkanFrom(expandHome(String(v['install-vulkan-from'])));
    if (v.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    else
      process.stdout.write(
        `WebGPU will load the Vulkan loader ${r.library} (${r.manifest}); check with: lobes doctor --device webgpu\n`,
      );
    return 0;
  }

  const report = runDoctor({ probe: !v['no-probe'] });
  if (v.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  else process.stdout.write(formatReport(report));
  const asked = report.providers.find((x) => x.name === device);
  if (!asked) {
    process.stderr.write(`lobes doctor: this onnxruntime-node build has no ${device} provider\n`);
    return 1;
  }
  if (!asked.usable) {
    if (!v.json) process.stderr.write(`lobes doctor: the ${device} provider is not usable here (fixes above)\n`);
    return 1;
  }
  return 0;
}
