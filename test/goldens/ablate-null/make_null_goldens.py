"""Goldens for the ablation null's tests (src/util/shapiro.ts, src/util/wilcoxon.ts, the t
quantile of src/util/stats.ts), from scipy.

    /path/to/venv/bin/python test/goldens/ablate-null/make_null_goldens.py

writes null_goldens.json beside this script (committed; tests read it, never Python):

- Shapiro-Wilk W and p (scipy.stats.shapiro, Royston's AS R94) on samples of 3 to 60 values:
  normal, lognormal (the shape of random regions' costs), uniform, with ties, n = 3 exactly;
- the Wilcoxon signed-rank test (scipy.stats.wilcoxon, zero_method='wilcox', one-sided
  'less' and 'greater' and two-sided): exact for small samples without ties or zeros,
  the normal approximation (no continuity correction, tie-corrected variance) otherwise;
- Student's t quantiles (scipy.stats.t.ppf) at 0.95 and 0.8 for 2 to 99 degrees of freedom.
"""
import json
import os

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(41)
out = {"scipy": scipy.__version__, "shapiro": [], "wilcoxon": [], "tq": []}

samples = [
    ("n3", [1.0, 2.0, 4.0]),
    ("n3-near-equal", [1.0, 1.0001, 3.0]),
    ("n4", [0.3, -1.2, 2.5, 0.9]),
    ("n5", list(rng.normal(size=5))),
    ("n6", list(rng.normal(size=6))),
    ("n11", list(rng.normal(size=11))),
    ("n12", list(rng.normal(size=12))),
    ("normal20", list(rng.normal(3, 2, size=20))),
    ("lognormal20", list(np.exp(rng.normal(0, 1.0, size=20)))),
    ("lognormal10", list(np.exp(rng.normal(0, 0.8, size=10)))),
    ("uniform30", list(rng.uniform(size=30))),
    ("ties25", list(np.round(rng.normal(size=25), 1))),
    ("normal60", list(rng.normal(size=60))),
    ("skew40", list(rng.exponential(size=40))),
    ("outlier20", list(rng.normal(size=19)) + [8.0]),
]
for name, x in samples:
    r = stats.shapiro(np.asarray(x, dtype=np.float64))
    out["shapiro"].append({"name": name, "x": [float(v) for v in x], "w": float(r.statistic), "p": float(r.pvalue)})

pairs = [
    ("exact12", rng.normal(-0.5, 1, size=12), "exact"),
    ("exact20", rng.normal(0.2, 1, size=20), "exact"),
    ("exact7", rng.normal(1.0, 1, size=7), "exact"),
    ("approx40", rng.normal(-0.3, 1, size=40), "approx"),
    ("approx-ties", np.round(rng.normal(-0.2, 1, size=30), 1), "approx"),
    ("approx-zeros", np.concatenate([np.zeros(4), rng.normal(0.4, 1, size=26)]), "approx"),
    ("approx80", rng.normal(0.05, 1, size=80), "approx"),
]
for name, d, method in pairs:
    d = np.asarray(d, dtype=np.float64)
    row = {"name": name, "d": [float(v) for v in d], "method": method}
    for alt in ("less", "greater", "two-sided"):
        r = stats.wilcoxon(d, zero_method="wilcox", correction=False, alternative=alt, method=method)
        row[alt] = float(r.pvalue)
        row["stat-" + alt] = float(r.statistic)
    # W+ (the sum of the positive differences' ranks), the statistic of the one-sided tests
    nz = d[d != 0]
    ranks = stats.rankdata(np.abs(nz))
    row["rplus"] = float(ranks[nz > 0].sum())
    out["wilcoxon"].append(row)

for df in [2, 3, 4, 5, 9, 10, 19, 20, 29, 49, 99]:
    out["tq"].append({"df": df, "q95": float(stats.t.ppf(0.95, df)), "q80": float(stats.t.ppf(0.8, df)), "q975": float(stats.t.ppf(0.975, df))})

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "null_goldens.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
