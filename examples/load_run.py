"""Load a lobes run directory with numpy and safetensors (no lobes needed).

    python examples/load_run.py RUN [HOOK]
"""
import json
import sys

import numpy as np
from safetensors.numpy import load_file


def load(run: str, hook: str) -> np.ndarray:
    """All rows of one capture point as float32 [n_samples, dim], in samples.jsonl order."""
    index = json.load(open(f"{run}/activations/index.json"))
    parts = [load_file(f"{run}/activations/{c['files'][hook]['path']}")[hook] for c in index["chunks"]]
    return np.concatenate(parts).astype(np.float32)


if __name__ == "__main__":
    run = sys.argv[1]
    hook = sys.argv[2] if len(sys.argv) > 2 else "final.hidden"
    samples = [json.loads(line) for line in open(f"{run}/samples.jsonl")]
    x = load(run, hook)
    assert x.shape[0] == len(samples)
    axes = list(samples[0]["labels"]) if samples else []
    print(f"{hook}: {x.shape[0]} samples x {x.shape[1]} features; label axes {axes}")
    if axes:
        labels = np.array([s["labels"][axes[0]] for s in samples])
        for value in sorted(set(labels)):
            print(f"  {axes[0]}={value}: {int((labels == value).sum())} rows, mean norm {np.linalg.norm(x[labels == value], axis=1).mean():.4f}")
