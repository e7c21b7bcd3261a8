"""
Reference numbers for test/cluster/geometry-sklearn.test.ts, from scikit-learn and numpy.

    /work/venv-wt41/bin/python test/goldens/geometry/make_geometry_goldens.py

Writes geometry_goldens.json next to this file (committed; the tests never run Python):
  - metrics: small labelled data sets (imbalanced classes, a singleton class, overlapping
    classes) with sklearn.metrics.silhouette_samples (euclidean and cosine) and
    davies_bouldin_score;
  - tsne: a 300 x 10 data set of three anisotropic blobs, scikit-learn's TSNE embedding of it
    (perplexity 30, PCA init, Barnes-Hut, 1000 iterations, seed 0), its KL divergence under the
    exact dense P of perplexity 30 (computed here with numpy, bisection on each row's
    precision), and its neighbourhood recall@10 (the share of each point's 10 nearest
    neighbours in the data that are among its 10 nearest in the map).
Values are rounded to float32 where they are inputs, so both sides read the same numbers.
"""
import json, os
import numpy as np
import sklearn
from sklearn.metrics import silhouette_samples, davies_bouldin_score
from sklearn.manifold import TSNE

rng = np.random.default_rng(2026)
out = {"sklearn": sklearn.__version__, "metrics": [], "tsne": None}


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def metric_case(name, X, y):
    X = f32(X)
    y = np.asarray(y, dtype=np.int64)
    out["metrics"].append({
        "name": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "C": int(y.max() + 1),
        "X": X.ravel().tolist(), "y": y.tolist(),
        "silhouetteEuclidean": silhouette_samples(X, y, metric="euclidean").tolist(),
        "silhouetteCosine": silhouette_samples(X, y, metric="cosine").tolist(),
        "daviesBouldin": float(davies_bouldin_score(X, y)),
    })


# Imbalanced classes (30, 20, 10) in 5 dimensions, shifted means.
sizes = [30, 20, 10]
X = np.concatenate([rng.normal(loc=2.0 * k, scale=1.0 + 0.3 * k, size=(s, 5)) for k, s in enumerate(sizes)])
metric_case("imbalanced", X, np.repeat(np.arange(3), sizes))
# A singleton class (silhouette 0 by convention) among three others.
sizes = [13, 12, 14, 1]
X = np.concatenate([rng.normal(loc=1.5 * k, scale=1.0, size=(s, 4)) for k, s in enumerate(sizes)])
metric_case("singleton", X, np.repeat(np.arange(4), sizes))
# Four overlapping classes in 8 dimensions, labels interleaved (not sorted).
y = rng.integers(0, 4, size=80)
X = rng.normal(size=(80, 8)) + 0.6 * np.eye(8)[y * 2]
metric_case("overlapping", X, y)

# t-SNE: three anisotropic blobs in 10 dimensions, 100 points each.
n, d = 300, 10
lab = np.repeat(np.arange(3), 100)
A = rng.normal(size=(3, d, d)) * 0.5 + np.eye(d)
X = np.concatenate([rng.normal(size=(100, d)) @ A[k] + 4.0 * rng.normal(size=d) for k in range(3)])
X = f32(X)
Y = TSNE(n_components=2, perplexity=30.0, init="pca", method="barnes_hut", max_iter=1000, learning_rate="auto", random_state=0).fit_transform(X)
Y = f32(Y)


def dense_p(X, perplexity):
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    P = np.zeros_like(D)
    target = np.log(perplexity)
    for i in range(len(X)):
        di = np.delete(D[i], i)
        lo, hi, beta = 0.0, np.inf, 1.0
        for _ in range(200):
            w = np.exp(-(di - di.min()) * beta)
            p = w / w.sum()
            H = -(p * np.log(np.maximum(p, 1e-300))).sum()
            if abs(H - target) < 1e-10:
                break
            if H > target:
                lo = beta
                beta = beta * 2 if hi == np.inf else (beta + hi) / 2
            else:
                hi = beta
                beta = (beta + lo) / 2
        P[i, np.arange(len(X)) != i] = p
    return (P + P.T) / (2 * len(X))


def kl(P, Y):
    D = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    W = 1.0 / (1.0 + D)
    np.fill_diagonal(W, 0.0)
    Q = W / W.sum()
    m = P > 0
    return float((P[m] * np.log(P[m] / Q[m])).sum())


def recall(X, Y, k=10):
    def nn(Z):
        D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(D, np.inf)
        return np.argsort(D, axis=1, kind="stable")[:, :k]
    a, b = nn(X), nn(Y)
    return float(np.mean([len(set(a[i]) & set(b[i])) / k for i in range(len(X))]))


P = dense_p(X, 30.0)
out["tsne"] = {
    "n": n, "d": d, "perplexity": 30.0, "X": X.ravel().tolist(), "labels": lab.tolist(),
    "Y": Y.ravel().tolist(), "klDense": kl(P, Y), "recall10": recall(X, Y),
}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "geometry_goldens.json"), "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("tsne KL (dense P)", out["tsne"]["klDense"], "recall@10", out["tsne"]["recall10"])
