"""scikit-learn's side of bench/knn-vs-sklearn.ts: the neighbour search and affinities that
sklearn.manifold.TSNE (method='barnes_hut') computes before optimizing, exactly as its _fit
does: NearestNeighbors(n_neighbors = min(n - 1, 3*perplexity + 1), metric='euclidean') on the
raw data, squared distances, then _joint_probabilities_nn (binary search of each row's beta,
symmetrized, normalized). Prints one JSON line: seconds of the kNN and of P, and the neighbour
indices' checksum (to compare with lobes'), and the CPU seconds of all the process's threads
over both (time.process_time).

    OMP_NUM_THREADS=2 /work/venv/bin/python bench/knn-sklearn.py X.npy [--perplexity 30]
"""
import argparse
import json
import time

import numpy as np
from sklearn.manifold._t_sne import _joint_probabilities_nn
from sklearn.neighbors import NearestNeighbors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("x")
    ap.add_argument("--perplexity", type=float, default=30.0)
    ap.add_argument("--out", help="write the [n, k] neighbour indices here (.npy)")
    a = ap.parse_args()
    X = np.load(a.x)
    n = X.shape[0]
    k = min(n - 1, int(3.0 * a.perplexity + 1))
    t0 = time.perf_counter()
    c0 = time.process_time()
    nn = NearestNeighbors(n_neighbors=k, metric="euclidean").fit(X)
    D = nn.kneighbors_graph(mode="distance")
    t1 = time.perf_counter()
    D.data **= 2
    P = _joint_probabilities_nn(D, a.perplexity, 0)
    t2 = time.perf_counter()
    c2 = time.process_time()
    if a.out:
        np.save(a.out, D.indices.reshape(n, k).astype(np.float32))  # float32: exact for indices < 2^24, and what readNpy reads
    print(json.dumps({"knn": t1 - t0, "p": t2 - t1, "total": t2 - t0, "cpu": c2 - c0, "k": k, "nnz": int(P.nnz), "dtype": str(X.dtype)}))


if __name__ == "__main__":
    main()
