"""
Recall@10 of saved t-SNE maps: the mean share of each sampled point's 10 nearest neighbours in
the data (exact, euclidean) that are among its 10 nearest in the map, as bench/tsne-scaling.py
computes it, on a sample drawn with numpy's default_rng(SEED) (5,000 points, seed 5 in
bench/RESULTS.md's tables).

    /work/venv/bin/python bench/tsne-recall.py X.npy MAP.npy [MAP.npy ...] [--sample 5000] [--seed 5]
"""
import argparse, importlib.util, json, os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("scaling", os.path.join(HERE, "tsne-scaling.py"))
scaling = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scaling)

ap = argparse.ArgumentParser()
ap.add_argument("x")
ap.add_argument("maps", nargs="+")
ap.add_argument("--sample", type=int, default=5000)
ap.add_argument("--seed", type=int, default=5)
a = ap.parse_args()
X = np.load(a.x).astype(np.float64)
sample = np.random.default_rng(a.seed).choice(X.shape[0], size=min(X.shape[0], a.sample), replace=False)
for m in a.maps:
    Y = np.load(m).astype(np.float64)
    print(json.dumps({"map": m, "recall10": round(scaling.recall10(X, Y, sample), 4), "sample": len(sample), "seed": a.seed}))
