"""
openTSNE's Annoy neighbour index on a bench matrix, for comparison with lobes' approximate search
(bench/RESULTS.md, "t-SNE against openTSNE on a quiet machine"):

    /work/venv/bin/python bench/knn-annoy.py bench/out/scaling/100k_X.npy

Prints the index's wall time (90 neighbours, 2 threads, seed 0), its recall of the exact 90
neighbours, and the share of the exact 10 nearest in its lists, on 200 seeded rows (exact lists
from scikit-learn).
"""
import numpy as np, time, sys
from openTSNE.nearest_neighbors import Annoy
from sklearn.neighbors import NearestNeighbors
X = np.load(sys.argv[1]).astype(np.float32); n = len(X); k = 90
t = time.perf_counter(); idx, dist = Annoy(X, k, metric="euclidean", n_jobs=2, random_state=0).build(); t = time.perf_counter() - t
rng = np.random.default_rng(0); s = rng.choice(n, 200, replace=False)
ex = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[s], return_distance=False)
rec = np.mean([len(set(ex[r][ex[r] != i][:k]) & set(idx[i])) / k for r, i in enumerate(s)])
print({"n": n, "secs": round(t, 2), "recall": round(float(rec), 4)})
ex10 = NearestNeighbors(n_neighbors=11).fit(X).kneighbors(X[s], return_distance=False)
t10 = np.mean([len(set(ex10[r][ex10[r] != i][:10]) & set(idx[i])) / 10 for r, i in enumerate(s)])
print({"top10_in_list": round(float(t10), 4)})
