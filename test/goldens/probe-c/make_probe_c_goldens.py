"""Goldens for the probe's choice of C (src/cluster/probecv.ts chooseCOnFolds), from scikit-learn.

    /path/to/venv/bin/python test/goldens/probe-c/make_probe_c_goldens.py

writes probe_c_goldens.json beside this script (committed; tests read it, never Python).

A planted, imbalanced 3-class problem (60 / 24 / 12 items, 6 features, standardized) whose
minority classes are readable only weakly: plain accuracy is best served by a strong penalty
that answers the majority class, balanced accuracy by a weaker one. On fixed 3 inner folds
(PredefinedSplit, written out so both sides use the same ones), for each C of the grid:

- GridSearchCV's mean test score (the mean over folds of each fold's score) of
  LogisticRegression(class_weight='balanced') scored by balanced accuracy, and of
  LogisticRegression() scored by accuracy, and the C each chooses (ties: the first);
- the predictions of LogisticRegression(class_weight='balanced', C) fitted on all items.
"""
import json
import os

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, PredefinedSplit

GRID = [0.0001, 0.001, 0.01, 0.1, 1.0, 10.0]
rng = np.random.default_rng(41)
counts = [60, 24, 12]
y = np.concatenate([np.full(c, k) for k, c in enumerate(counts)])
n, d = len(y), 6
centres = np.zeros((3, d))
centres[1, 0] = 0.9
centres[2, 1] = 1.1
X = rng.normal(size=(n, d)) + centres[y]
X = (X - X.mean(0)) / X.std(0)
# stratified inner folds, dealt round-robin within each class after a shuffle
fold = np.zeros(n, dtype=int)
for k in range(3):
    idx = np.flatnonzero(y == k)
    rng.shuffle(idx)
    fold[idx] = np.arange(len(idx)) % 3

def search(weight, scoring):
    lr = LogisticRegression(class_weight=weight, max_iter=10000, tol=1e-10)
    gs = GridSearchCV(lr, {"C": GRID}, scoring=scoring, cv=PredefinedSplit(fold), refit=False)
    gs.fit(X, y)
    return [float(s) for s in gs.cv_results_["mean_test_score"]], float(GRID[int(np.argmax(gs.cv_results_["mean_test_score"]))])

bal_scores, bal_c = search("balanced", "balanced_accuracy")
acc_scores, acc_c = search(None, "accuracy")
full = {}
for C in GRID:
    m = LogisticRegression(class_weight="balanced", C=C, max_iter=10000, tol=1e-10).fit(X, y)
    full[str(C)] = [int(v) for v in m.predict(X)]
out = {
    "n": n, "d": d, "K": 3, "grid": GRID, "X": [float(v) for v in X.ravel()], "y": [int(v) for v in y], "fold": [int(v) for v in fold],
    "balanced": {"scores": bal_scores, "chosen": bal_c},
    "accuracy": {"scores": acc_scores, "chosen": acc_c},
    "fullPredictions": full,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_c_goldens.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, "balanced", bal_c, [round(s, 3) for s in bal_scores], "accuracy", acc_c, [round(s, 3) for s in acc_scores])
