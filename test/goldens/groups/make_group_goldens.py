"""Goldens for grouped validation (src/cluster/probe.ts stratifiedGroupFolds), from scikit-learn.

    /path/to/venv/bin/python test/goldens/groups/make_group_goldens.py

writes group_goldens.json beside this script (committed; tests read it, never Python): the fold
of every sample under StratifiedGroupKFold(n_splits, shuffle=False) for several planted designs
(groups of unequal sizes, classes spread unevenly over the groups, a label constant within its
group), with groups and classes numbered 0.. in sorted order as scikit-learn encodes them.
"""
import json
import os

import numpy as np
from sklearn.model_selection import StratifiedGroupKFold

rng = np.random.default_rng(3)
cases = []
for name, G, K, k, const in [("mixed", 30, 3, 5, False), ("constant", 24, 4, 3, True), ("uneven", 40, 5, 5, False), ("few", 9, 2, 3, False)]:
    sizes = rng.integers(1, 9, G)
    groups = np.repeat(np.arange(G), sizes)
    if const:
        y = np.repeat(rng.integers(0, K, G), sizes)
    else:
        # each group leans to one class
        lean = rng.integers(0, K, G)
        y = np.array([lean[g] if rng.random() < 0.6 else rng.integers(0, K) for g in groups])
    y = np.unique(y, return_inverse=True)[1]
    K = int(y.max()) + 1
    fold = np.zeros(len(y), dtype=int)
    for f, (_, test) in enumerate(StratifiedGroupKFold(n_splits=k, shuffle=False).split(np.zeros(len(y)), y, groups)):
        fold[test] = f
    cases.append({"name": name, "K": K, "folds": k, "y": [int(v) for v in y], "groups": [int(v) for v in groups], "fold": [int(v) for v in fold]})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_goldens.json")
with open(path, "w") as f:
    json.dump({"stratifiedGroupKFold": cases}, f)
print("wrote", path)
