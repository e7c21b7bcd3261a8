"""Goldens for test/bench/findings-cloze.test.ts: the cloze table's statistics computed
independently (numpy convolution for the Poisson-binomial tail, statsmodels' Clopper-Pearson
interval and Holm adjustment, scipy's exact binomial test for McNemar).

    /work/venv/bin/python test/goldens/cloze-finding/make_cloze_finding_goldens.py

The planted counts: English 96 items with 4 options; Chinese 93 scored items, 91 with 4 options,
one with 3 and one with 5 (the option counts SocialEval has). Metrics in the table's order:
acc, acc_norm, acc_bytes, acc_mutual_info.
"""
import json
import os

import numpy as np
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint


def pb_upper(ps, k):
    f = np.array([1.0])
    for p in ps:
        f = np.convolve(f, [1 - p, p])
    return float(f[k:].sum())


sets = {"en": [4] * 96, "zh": [4] * 91 + [3, 5]}
counts = {"en": [25, 22, 22, 41], "zh": [24, 20, 20, 45]}
rows = []
for lang in ("en", "zh"):
    ch = [1 / k for k in sets[lang]]
    for k in counts[lang]:
        lo, hi = proportion_confint(k, len(ch), alpha=0.05, method="beta")
        rows.append({"language": lang, "k": k, "n": len(ch), "p": pb_upper(ch, k), "ci95": [float(lo), float(hi)], "chance": float(np.mean(ch))})
holm = multipletests([r["p"] for r in rows], method="holm")[1]
for r, h in zip(rows, holm):
    r["pHolm"] = float(h)
mcnemar = [{"onlyA": a, "onlyB": b, "p": float(binomtest(a, a + b, 0.5).pvalue) if a + b else 1.0} for a, b in [(20, 7), (3, 3), (0, 5), (12, 0)]]
out = {"options": sets, "counts": counts, "rows": rows, "mcnemar": mcnemar}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cloze_finding_goldens.json"), "w") as f:
    json.dump(out, f)
    f.write("\n")
