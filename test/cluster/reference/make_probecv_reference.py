"""
Reference numbers for the probe's nested cross-validation (test/cluster/probecv-sklearn.test.ts),
from scikit-learn.

    /work/venv/bin/python test/cluster/reference/make_probecv_reference.py

Writes probecv_reference.json next to this file (committed; the tests never run Python).

The planted problem: 3 classes of 50 items in 40 dimensions; the class means differ (N(0, 0.8²)
per coordinate) in the first 6 coordinates only, every coordinate has unit Gaussian noise, so
that with 30 principal components and ~100 training items a weak penalty overfits and the choice
of C matters. For each of R repeats (outer folds shuffled with random_state = r), an explicit outer
StratifiedKFold(5) loop fits PCA(30) and StandardScaler on the training part, then
GridSearchCV(LogisticRegression(max_iter=1000), C in [0.01, 0.1, 1, 10], cv=StratifiedKFold(3,
shuffle, random_state = r)) on the training part (accuracy, refit on the whole training part), and
predicts the test part. Recorded: the accuracy of every repeat, the count of each chosen C, and for
comparison the accuracy with C fixed at each grid value (same outer folds, no inner search).

class_weight: coefficients of LogisticRegression(C=1, class_weight='balanced') on a small
imbalanced standardized set (the probe's weighted objective).
"""
import json, os, warnings
import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore")
rng = np.random.default_rng(2024)
K, per, d, signal = 3, 50, 40, 6
n = K * per
y = np.arange(n) % K
means = rng.normal(0, 0.8, size=(K, signal))
X = rng.normal(size=(n, d))
X[:, :signal] += means[y]
GRID = [0.01, 0.1, 1.0, 10.0]
R = 20


def outer(r, C=None):
    pred = np.zeros(n, dtype=int)
    chosen = []
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=r).split(X, y):
        p = PCA(30).fit(X[tr])
        s = StandardScaler().fit(p.transform(X[tr]))
        A, B = s.transform(p.transform(X[tr])), s.transform(p.transform(X[te]))
        if C is None:
            g = GridSearchCV(LogisticRegression(max_iter=1000), {"C": GRID}, cv=StratifiedKFold(3, shuffle=True, random_state=r)).fit(A, y[tr])
            chosen.append(g.best_params_["C"])
            pred[te] = g.predict(B)
        else:
            pred[te] = LogisticRegression(C=C, max_iter=1000).fit(A, y[tr]).predict(B)
    return float(np.mean(pred == y)), chosen


nested = [outer(r) for r in range(R)]
acc = [a for a, _ in nested]
counts = {str(c): sum(ch.count(c) for _, ch in nested) for c in GRID}
fixed = {str(c): [outer(r, c)[0] for r in range(R)] for c in GRID}

# class weights
wrng = np.random.default_rng(7)
yw = np.array([0] * 30 + [1] * 6 + [2] * 12)
Xw = wrng.normal(size=(len(yw), 4)) + np.eye(3, 4)[yw] * 1.5
Xw = (Xw - Xw.mean(0)) / Xw.std(0)
lw = LogisticRegression(C=1.0, class_weight="balanced", tol=1e-10, max_iter=10000).fit(Xw, yw)

out = {
    "planted": {"n": n, "d": d, "K": K, "pca": 30, "folds": 5, "innerFolds": 3, "grid": GRID, "X": X.ravel().tolist(), "y": y.tolist()},
    "sklearn": {"repeats": R, "accuracy": acc, "mean": float(np.mean(acc)), "sd": float(np.std(acc, ddof=1)), "chosenC": counts,
                "fixed": {c: {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1))} for c, v in fixed.items()}},
    "classWeight": {"n": len(yw), "d": 4, "K": 3, "X": Xw.ravel().tolist(), "y": yw.tolist(), "coef": lw.coef_.tolist(), "intercept": lw.intercept_.tolist()},
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probecv_reference.json")
with open(path, "w") as f:
    json.dump(out, f)
print(json.dumps({k: v for k, v in out["sklearn"].items() if k != "accuracy"}, indent=1))
