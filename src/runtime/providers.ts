/**
 * Execution providers: which ones this build of onnxruntime-node can use, and session
 * options for a device. A requested provider that is missing is an error that says what to
 * install; lobes never falls back to the CPU silently. Before a CUDA or WebGPU session, the
 * libraries `lobes doctor` installed for it are loaded (src/runtime/preload.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { LobesError, opt } from '../util/errors.js';
import { bindingDir, preloadProviderLibraries } from './preload.js';
import type { Device } from './types.js';
import { encodeModel, type ModelProto } from '../onnx/index.js';
import { rewriteFloatZeroPoints } from './nbits-zp.js';

export const CUDA_INSTALL_HINT =
  'install the CUDA provider on a GPU box: ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js (from NuGet), or from PyPI wheels: lobes doctor --install-cuda-from-wheels DIR --download; lobes doctor --device cuda says what is missing';

export interface ProviderStatus {
  name: string;
  available: boolean;
  note?: string;
}

/** Providers of this onnxruntime-node build and whether each can be used. */
export function listProviders(): ProviderStatus[] {
  const backends: { name: string; bundled: boolean }[] = (ort as any).listSupportedBackends?.() ??
    [{ name: 'cpu', bundled: true }];
  const dir = bindingDir();
  const out: ProviderStatus[] = [];
  for (const b of backends) {
    if (b.name === 'cpu') out.push({ name: 'cpu', available: true });
    else if (b.name === 'cuda') {
      const lib = dir
        ? join(dir,
          process.platform === 'win32' ? 'onnxruntime_providers_cuda.dll' : 'libonnxruntime_providers_cuda.so')
        : null;
      const ok = b.bundled || (lib !== null && existsSync(lib));
      out.push(
        ok
          ? { name: 'cuda', available: true, note: 'needs an NVIDIA GPU with CUDA 12 and cuDNN 9' }
          : { name: 'cuda', available: false, note: CUDA_INSTALL_HINT },
      );
    } else if (b.name === 'webgpu') {
      out.push({ name: 'webgpu', available: b.bundled,
        note: b.bundled ? 'needs a GPU adapter (Vulkan on Linux) at run time' : 'not in this build' });
    } else {
      out.push({ name: b.name, available: false, note: 'not used by lobes' });
    }
  }
  return out;
}

/** Execution-provider list for a device; throws an actionable error when it is missing. */
export function executionProviders(device: Device, deviceId = 0): ort.InferenceSession.ExecutionProviderConfig[] {
  const st = listProviders().find((p) => p.name === device);
  if (device === 'cpu') return ['cpu'];
  if (!st || !st.available) {
    throw new LobesError(`the ${device} execution provider is not available in this onnxruntime-node build`, {
      hint: device === 'cuda'
        ? CUDA_INSTALL_HINT
        : `use ${opt('device', 'cpu')}, or an onnxruntime-node build with WebGPU`,
    });
  }
  if (device === 'cuda') {
    preloadProviderLibraries('cuda');
    return [{ name: 'cuda', deviceId } as any];
  }
  // The WebGPU provider picks its adapter itself (by power preference); it has no GPU index.
  if (deviceId !== 0) {
    throw new LobesError(
      `${opt('deviceId', deviceId)} is not supported with webgpu (the WebGPU provider picks the adapter itself)`,
      {
        hint: `use ${opt('device', 'cuda')} ${
          opt('deviceId', 'N')
        }, or limit the visible GPUs (e.g. CUDA_VISIBLE_DEVICES / VK_ICD_FILENAMES)`,
      },
    );
  }
  preloadProviderLibraries('webgpu');
  return ['webgpu'];
}

/** Model files whose slow-path note was printed (once per process). */
const slowPathNoted = new Set<string>();

/**
 * A session on an edited graph (`model`: capture, attention or logit-head surgery) whose
 * external weights stay in `dataDir`, the model's own folder; a failure is a one-line error
 * naming `file`.
 */
export async function openEditedSession(model: ModelProto, dataDir: string,
  opts: { device: Device; deviceId?: number;
    threads?:
      number; /** onnxruntime's own log: 3 errors (default), 4 fatal only (a session whose failures lobes catches and reports itself). */
    logSeverityLevel?: 3 | 4 }, file: string): Promise<ort.InferenceSession>
{
  // On the CPU, MatMulNBits with float zero points (GGUF blocks with minima) run through
  // ONNX Runtime's fast integer path plus a small correction (src/runtime/nbits-zp.ts);
  // LOBES_NBITS_REWRITE=0 keeps the graph as it is (for bench/nbits-zp.ts's "before").
  const rewrite = opts.device === 'cpu' && process.env.LOBES_NBITS_REWRITE !== '0';
  let edited = model;
  if (rewrite) {
    const r = rewriteFloatZeroPoints(model, dataDir, file);
    edited = r.model;
    if (r.tooLarge && !slowPathNoted.has(file)) {
      slowPathNoted.add(file);
      process.stderr.write(
        `note: ${file}: ${r.tooLarge.nodes} MatMulNBits nodes with float zero points keep ONNX Runtime's slow CPU path (their minima, ${
          (r.tooLarge.bytes / 1e9).toFixed(2)
        } GB, are more than the in-memory graph can carry); results are the same, decoding is slower\n`,
      );
    }
  }
  const bytes = encodeModel(edited);
  const so = {
    executionProviders: executionProviders(opts.device, opts.deviceId ?? 0),
    graphOptimizationLevel: 'all',
    logSeverityLevel: opts.logSeverityLevel ?? 3,
    extra: { session: { model_external_initializers_file_folder_path: dataDir } },
    ...(opts.threads ? { intraOpNumThreads: opts.threads } : {}),
  } as ort.InferenceSession.SessionOptions;
  try {
    return await ort.InferenceSession.create(bytes, so);
  } catch (e) {
    throw sessionError(e, opts.device, file);
  }
}

/** Wrap a session-creation failure for `device` into a one-line actionable error. */
export function sessionError(e: unknown, device: Device, file: string): LobesError {
  const msg = String((e as Error)?.message ?? e).split('\n')[0]!.slice(0, 400);
  let hint: string | undefined;
  if (device === 'cuda' && /cuda|cudnn|libcu|provider/i.test(msg))
    hint = `CUDA provider failed to load; ${CUDA_INSTALL_HINT}, and check the CUDA 12 / cuDNN 9 libraries`;
  else if (device === 'webgpu' && /webgpu|adapter|dawn|vulkan/i.test(msg))
    hint =
      `no usable WebGPU adapter; lobes doctor --device webgpu says what is missing (Vulkan loader, GPU driver), or use ${
        opt('device', 'cpu/cuda')
      }`;
  return new LobesError(`onnxruntime could not create a ${device} session: ${msg}`, { file, hint });
}
