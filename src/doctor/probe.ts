/**
 * One execution-provider probe, run in a child process by `lobes doctor` (a provider that
 * crashes or prints to stderr from native code cannot disturb the doctor):
 *
 *   node probe.js DEVICE
 *
 * Preloads the provider's listed libraries, creates a session on a one-node model
 * (z = x + y) and runs it; prints one JSON line {ok, ms, error?} and exits 0 either way.
 */
import * as ort from 'onnxruntime-node';
import { DataType, encodeModel, makeGraph, makeModel, makeNode, makeValueInfo } from '../onnx/index.js';
import { preloadProviderLibraries } from '../runtime/preload.js';

async function probe(device: string): Promise<{ ok: boolean; ms: number; error?: string }> {
  const t0 = Date.now();
  try {
    if (device === 'cuda' || device === 'webgpu') preloadProviderLibraries(device);
    const graph = makeGraph('probe', [makeNode('Add', ['x', 'y'], ['z'])], [makeValueInfo('x', DataType.FLOAT, [4]),
      makeValueInfo('y', DataType.FLOAT, [4])], [makeValueInfo('z', DataType.FLOAT, [4])], []);
    const bytes = encodeModel(makeModel(graph, { opsets: { '': 17 } }));
    const ep = device === 'cuda' ? [{ name: 'cuda', deviceId: 0 }] : [device];
    const s = await ort.InferenceSession.create(bytes, {
      executionProviders: ep as ort.InferenceSession.ExecutionProviderConfig[],
      logSeverityLevel: 3,
    });
    const x = new ort.Tensor('float32', Float32Array.of(1, 2, 3, 4), [4]);
    const y = new ort.Tensor('float32', Float32Array.of(10, 20, 30, 40), [4]);
    const z = (await s.run({ x, y })).z!.data as Float32Array;
    await s.release();
    if (z[0] !== 11 || z[3] !== 44)
      return { ok: false, ms: Date.now() - t0, error: `wrong result ${Array.from(z).join(',')} for 1..4 + 10..40` };
    return { ok: true, ms: Date.now() - t0 };
  } catch (e) {
    return { ok: false, ms: Date.now() - t0, error: String((e as Error).message ?? e).split('\n')[0]!.slice(0, 500) };
  }
}

const device = process.argv[2] ?? 'cpu';
probe(device).then((r) => {
  process.stdout.write('LOBES_PROBE ' + JSON.stringify(r) + '\n');
  process.exit(0);
});
