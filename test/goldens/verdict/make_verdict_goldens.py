"""Goldens for src/util/resolution.ts, from scipy and statsmodels.

    /path/to/venv/bin/python test/goldens/verdict/make_verdict_goldens.py

writes verdict_goldens.json beside this script (committed; tests read it, never Python):

- the one-sided normal tail P(Z >= z) (scipy.stats.norm.sf) over z from -6 to 40;
- the smallest Holm-adjusted p a member of a permutation family can reach: every p set to its
  floor 1/(R+1) or to 1 for the other members, in every combination, member i at its floor,
  adjusted by statsmodels' multipletests('holm'); the minimum over the combinations.
"""
import itertools
import json
import os

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

out = {}
zs = [-6.0, -2.5, -1.0, -0.2, 0.0, 0.4, 1.0, 1.6448536, 1.96, 2.5, 3.3, 4.2, 6.0, 8.5, 12.0, 20.0, 37.0]
out["normalUpper"] = [{"z": z, "sf": float(stats.norm.sf(z))} for z in zs]

families = [
    [50, 200, 200, 50, 50],      # the SmolLM2 demo's classifiers: probe and baselines at 50, kNN at 200
    [39, 99, 99],                # the verdict tests' FAST settings
    [99, 99, 99, 99, 99],        # sized for 5
    [199] * 20,                  # wanda's 20 set differences at the old default
    [399] * 20,                  # sized for 20
    [20] * 30,                   # a 30-layer sweep
    [10, 1000, 1000],
]
out["holmReach"] = []
for Rs in families:
    floors = [1 / (R + 1) for R in Rs]
    m = len(Rs)
    reach = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        best = 1.0
        # the other members' p: at their floor or 1 (every combination for small m; for large
        # equal families the combinations are symmetric, so count how many sit at the floor)
        if len(set(Rs)) == 1 and m > 8:
            combos = [[1] * k + [0] * (m - 1 - k) for k in range(m)]
        else:
            combos = itertools.product([1, 0], repeat=m - 1)
        for c in combos:
            p = [1.0] * m
            p[i] = floors[i]
            for j, at in zip(others, c):
                p[j] = floors[j] if at else 1.0
            adj = multipletests(p, method="holm")[1]
            best = min(best, float(adj[i]))
        reach.append(best)
    out["holmReach"].append({"R": Rs, "reach": reach})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdict_goldens.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
