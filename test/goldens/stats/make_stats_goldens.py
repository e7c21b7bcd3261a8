"""Goldens for src/util/stats.ts and src/wanda/placement.ts, from scipy and statsmodels.

    /path/to/venv/bin/python test/goldens/stats/make_stats_goldens.py

writes stats_goldens.json beside this script (committed; tests read it, never Python):

- Holm and Benjamini-Hochberg adjusted p-values (statsmodels multipletests 'holm', 'fdr_bh');
- Wilson and Clopper-Pearson 95% (and 90%) intervals (statsmodels proportion_confint
  'wilson' and 'beta'), including k = 0 and k = n;
- binomial tails (scipy.stats.binom.sf / cdf);
- the Poisson-binomial upper tail P(X >= k) of units with unequal chances, by brute-force
  enumeration of all outcomes (small n) and by a numpy convolution of the units'
  distributions (larger n);
- the random-placement null of a block set: the exact mean density of a uniformly random
  k-subset of an R x K map, by enumerating every subset, next to the hypergeometric
  expectation of its in-set neighbour slots 2E k(k-1)/(n(n-1)).
"""
import itertools
import json
import os

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

out = {}

rng = np.random.default_rng(24)
families = [
    [0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.04, 0.048, 0.9, 0.001],
    [0.048] * 10,
    list(np.round(rng.uniform(0, 0.2, 30), 6)),
    [0.5],
    [0.02, 0.02, 0.02, 0.3],
]
out["multiplicity"] = []
for p in families:
    out["multiplicity"].append({
        "p": [float(x) for x in p],
        "holm": [float(x) for x in multipletests(p, method="holm")[1]],
        "bh": [float(x) for x in multipletests(p, method="fdr_bh")[1]],
    })

cases = [(0, 8), (3, 21), (8, 8), (1, 1), (0, 1), (7, 64), (32, 64), (5, 7), (480, 1000), (0, 200), (199, 200)]
out["intervals"] = []
for k, n in cases:
    for conf in (0.95, 0.9):
        a = 1 - conf
        w = proportion_confint(k, n, alpha=a, method="wilson")
        cp = proportion_confint(k, n, alpha=a, method="beta")
        out["intervals"].append({"k": k, "n": n, "conf": conf, "wilson": [float(w[0]), float(w[1])], "clopperPearson": [float(np.nan_to_num(cp[0], nan=0.0)), float(np.nan_to_num(cp[1], nan=1.0))]})

out["binomial"] = []
for k, n, p in [(3, 21, 0.25), (0, 10, 0.3), (10, 10, 0.3), (15, 40, 0.2), (600, 1000, 0.55)]:
    out["binomial"].append({"k": k, "n": n, "p": p, "upper": float(stats.binom.sf(k - 1, n, p)), "lower": float(stats.binom.cdf(k, n, p))})

def pb_enumerate(ps, k):
    tot = 0.0
    for outcome in itertools.product([0, 1], repeat=len(ps)):
        if sum(outcome) >= k:
            pr = 1.0
            for o, p in zip(outcome, ps):
                pr *= p if o else 1 - p
            tot += pr
    return tot

def pb_convolve(ps, k):
    f = np.array([1.0])
    for p in ps:
        f = np.convolve(f, [1 - p, p])
    return float(f[k:].sum())

out["poissonBinomial"] = []
small = [0.5, 0.25, 0.125, 0.1, 0.33, 0.2, 0.05, 0.6, 0.3, 0.4, 0.15, 0.25]
for k in (0, 1, 3, 5, 8, 12):
    out["poissonBinomial"].append({"ps": small, "k": k, "upper": pb_enumerate(small, k), "method": "enumeration"})
big = list(np.round(rng.uniform(0.02, 0.5, 120), 6))
for k in (10, 25, 40, 60):
    out["poissonBinomial"].append({"ps": [float(x) for x in big], "k": k, "upper": pb_convolve(big, k), "method": "convolution"})
# Equal chances: the binomial.
out["poissonBinomial"].append({"ps": [0.25] * 21, "k": 3, "upper": float(stats.binom.sf(2, 21, 0.25)), "method": "binomial"})

def density(mask, R, K):
    ins = slots = 0
    for r in range(R):
        for c in range(K):
            if not mask[r][c]:
                continue
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= rr < R and 0 <= cc < K:
                    slots += 1
                    ins += mask[rr][cc]
    return ins / slots if slots else 0.0, ins, slots

out["placement"] = []
for R, K, k in [(4, 5, 6), (3, 6, 2), (5, 4, 10), (2, 8, 5)]:
    n = R * K
    dens = []
    ins_all = []
    for sub in itertools.combinations(range(n), k):
        m = [[0] * K for _ in range(R)]
        for i in sub:
            m[i // K][i % K] = 1
        d, ins, _ = density(m, R, K)
        dens.append(d)
        ins_all.append(ins)
    E = R * (K - 1) + K * (R - 1)
    out["placement"].append({
        "rows": R, "cols": K, "k": k,
        "meanDensity": float(np.mean(dens)),
        "meanInSet": float(np.mean(ins_all)),
        "hypergeometricInSet": 2 * E * k * (k - 1) / (n * (n - 1)),
        "ratioOfExpectations": (k - 1) / (n - 1),
    })

# Student's t and the incomplete beta (scipy.stats.t.cdf, scipy.special.betainc), and the
# prediction-interval t test of a value against K null draws: t.cdf((v - mean) / (sd * sqrt(1 + 1/K)), K - 1).
from scipy import special

out["studentT"] = [{"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))}
                   for t in (-40.0, -6.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.7, 4.0, 12.0)
                   for df in (1, 2, 4, 9, 30, 200)]
out["incompleteBeta"] = [{"x": x, "a": a, "b": b, "value": float(special.betainc(a, b, x))}
                         for x in (1e-6, 0.01, 0.3, 0.5, 0.77, 0.999)
                         for a, b in ((0.5, 0.5), (2.0, 3.0), (4.5, 0.5), (15.0, 0.5), (100.0, 40.0), (1.0, 1.0))]
out["prediction"] = []
prng = np.random.default_rng(25)
for K in (3, 5, 10, 40):
    for shift in (-8.0, -2.0, 0.0, 1.5):
        nulls = prng.normal(-100.0, 20.0, K)
        v = float(nulls.mean() + shift * nulls.std(ddof=1))
        t = (v - nulls.mean()) / (nulls.std(ddof=1) * np.sqrt(1 + 1 / K))
        out["prediction"].append({"value": v, "nulls": [float(x) for x in nulls],
                                  "lower": float(stats.t.cdf(t, K - 1)), "upper": float(stats.t.sf(t, K - 1))})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stats_goldens.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
