"""Goldens for the multiplicity of lobes cluster's metrics (src/cluster/multiplicity.ts), from statsmodels.

    /path/to/venv/bin/python test/goldens/cluster/make_holm_goldens.py

writes holm_goldens.json beside this script (committed; test/cluster/multiplicity.test.ts reads it,
never Python). Each family is a list of raw p-values as a cluster metrics file carries them
(None: a classifier without a permutation null, left out of its family), with statsmodels'
multipletests 'holm' and 'fdr_bh' over the p-values that are present:

- classifiers: the verdict's family (probe, kNN cosine, kNN in the map, two token baselines),
  one family per score;
- layers: 30 layers of a sweep with 20 permutations (p on the grid k/21) and with 199;
- layer steps: 29 paired-bootstrap p-values.
"""
import json
import os

import numpy as np
from statsmodels.stats.multitest import multipletests


def adjusted(p):
    present = [i for i, v in enumerate(p) if v is not None]
    vals = [p[i] for i in present]
    holm = [None] * len(p)
    bh = [None] * len(p)
    if vals:
        h = multipletests(vals, method="holm")[1]
        q = multipletests(vals, method="fdr_bh")[1]
        for j, i in enumerate(present):
            holm[i] = float(h[j])
            bh[i] = float(q[j])
    return {"p": p, "holm": holm, "bh": bh}


rng = np.random.default_rng(2024)
out = {
    "classifiers": {
        "balancedAccuracy": adjusted([0.02, 0.005, 0.01, 0.02, None]),
        "accuracy": adjusted([0.02, 0.005, 0.3, 0.04, 0.02]),
        "macroF1": adjusted([0.6, 0.005, 0.01, 0.9, 0.02]),
    },
    "layers20": adjusted([float(k) / 21 for k in rng.integers(1, 22, 30)]),
    "layers199": adjusted([float(k) / 200 for k in rng.integers(1, 40, 30)]),
    "layerSteps": adjusted([float(round(x, 4)) for x in rng.uniform(0.001, 1, 29)]),
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "holm_goldens.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
