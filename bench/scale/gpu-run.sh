#!/usr/bin/env bash
# The scale benchmark on a GPU box, in one command: CUDA and WebGPU, each compared with PyTorch.
#
#   bench/scale/gpu-run.sh [OUT_DIR]          (default bench/out/gpu)
#
# Needs: npm ci done; python3 with torch (CUDA), transformers, safetensors, numpy for the
# PyTorch comparison; ~45 GB free under $LOBES_MODEL_CACHE (default /tmp/lobes-models) for the
# generated checkpoint and exports (bf16 checkpoint 16.1 GB, int4 export 7.0 GB, fp16 export 16.1 GB) and runs.
# Steps:
#   1. lobes doctor --device cuda; when the CUDA provider is missing, it is installed from PyPI
#      wheels (lobes doctor --install-cuda-from-wheels DIR --download: pip, never NuGet);
#   2. lobes doctor --device webgpu; when no Vulkan loader is installed and apt-get can download,
#      Debian's libvulkan1 is unpacked under the cache and used (--install-vulkan-from);
#   3. bench/scale-8b.ts --device cuda and --device webgpu (fp16 export), --torch python3:
#      one JSON line each, in OUT_DIR/scale-cuda.json and OUT_DIR/scale-webgpu.json, with the
#      doctor reports beside them. A provider that cannot be made to work is reported and skipped.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-bench/out/gpu}"
mkdir -p "$OUT"
CACHE="${LOBES_MODEL_CACHE:-/tmp/lobes-models}"
export LOBES_MODEL_CACHE="$CACHE"
PY="${PYTHON:-python3}"
[ -f dist/cli/bin.js ] || npm run build >/dev/null
LOBES="node dist/cli/bin.js"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || true
echo "GPU: $(cat "$OUT/gpu.txt")"

# 1. CUDA
if ! $LOBES doctor --device cuda --no-probe > "$OUT/doctor-cuda-before.txt" 2>&1; then
  echo "CUDA provider not usable yet; installing it from PyPI wheels into $CACHE/cuda-wheels"
  $LOBES doctor --install-cuda-from-wheels "$CACHE/cuda-wheels" --download || true
fi
$LOBES doctor --device cuda --json > "$OUT/doctor-cuda.json"; CUDA_OK=$?

# 2. WebGPU
if ! $LOBES doctor --device webgpu --no-probe > "$OUT/doctor-webgpu-before.txt" 2>&1; then
  if grep -q "libvulkan.so.1 (the Vulkan loader) is not found" "$OUT/doctor-webgpu-before.txt" && command -v apt-get >/dev/null; then
    echo "no Vulkan loader; unpacking Debian's libvulkan1 under $CACHE/vulkan"
    mkdir -p "$CACHE/vulkan" && (cd "$CACHE/vulkan" && apt-get download libvulkan1 >/dev/null 2>&1 && for d in libvulkan1_*.deb; do dpkg-deb -x "$d" root; done) \
      && $LOBES doctor --install-vulkan-from "$CACHE/vulkan/root" || true
  fi
fi
$LOBES doctor --device webgpu --json > "$OUT/doctor-webgpu.json"; WEBGPU_OK=$?

TORCH=()
if "$PY" -c 'import torch, transformers, safetensors, numpy; assert torch.cuda.is_available()' 2>/dev/null; then TORCH=(--torch "$PY"); else echo "PyTorch with CUDA not found ($PY): no PyTorch comparison"; fi

for dev in cuda webgpu; do
  ok=$([ "$dev" = cuda ] && echo $CUDA_OK || echo $WEBGPU_OK)
  if [ "$ok" != 0 ]; then echo "$dev: not usable (see $OUT/doctor-$dev.json); skipped"; continue; fi
  echo "== $dev"
  npx tsx bench/scale-8b.ts --device "$dev" --stages inspect,session,extract,forward,cat,wanda,cluster,report,torch ${TORCH[@]+"${TORCH[@]}"} --out "$OUT/scale-$dev.json" \
    || echo "$dev: the benchmark failed (its log is above)"
done
ls -la "$OUT"
