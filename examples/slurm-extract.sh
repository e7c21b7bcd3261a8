#!/bin/bash
# Extract activations with a Slurm job array: one shard per array task, one GPU each,
# then merge the shards in a dependent job.
#
#   jid=$(sbatch --parsable examples/slurm-extract.sh)          # 8 shards (--array=0-7)
#   sbatch --dependency=afterok:$jid --wrap \
#     "lobes merge runs/llama8b/shard-*-of-8 --out runs/llama8b/merged"
#
# (sbatch --array=0-3 ... for 4 shards; then merge shard-*-of-4.)
#
# `--shard auto` reads SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP and
# SLURM_ARRAY_TASK_COUNT, so the array may start at any index and use any step.
# A task that is preempted or killed is resumed by requeueing it: the same command
# continues from the last complete chunk.
#
#SBATCH --job-name=lobes-extract
#SBATCH --array=0-7
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --output=logs/%x-%A_%a.out

set -euo pipefail

MODEL=${MODEL:-/models/llama-3.1-8b-onnx}
DATA=${DATA:-socialeval:/data/socialeval/worldtree_data?lang=en}
RUNS=${RUNS:-runs/llama8b}

# Every shard must use the same settings (model, data, capture, dtype, batching, chunk size).
lobes extract \
  --model "$MODEL" \
  --data "$DATA" \
  --capture final,mlp \
  --device cuda \
  --dtype fp16 \
  --batch 8 \
  --chunk-rows 64 \
  --shard auto \
  --out "$RUNS/shard-{i}-of-{n}"
