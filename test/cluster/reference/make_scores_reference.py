"""
Reference numbers for test/cluster/scores.test.ts and the probe test, from scikit-learn and numpy.

    /work/venv/bin/python test/cluster/reference/make_scores_reference.py

Writes scores_reference.json next to this file (committed; the tests never run Python):
  - cases: label/prediction vectors with scikit-learn's accuracy_score, balanced_accuracy_score,
    f1_score(average='macro') and recall_score(average=None, labels=range(C), zero_division=nan);
  - nulls: random null distributions with numpy.percentile(v, [2.5, 97.5]) and their mean;
  - logistic: a small standardized data set and the coefficients, intercepts and predictions of
    LogisticRegression(C=1, solver='lbfgs', tol=1e-10, max_iter=10000), the multinomial model
    with an L2 penalty on the weights only (the probe's objective).
"""
import json, os, warnings
import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, recall_score
from sklearn.linear_model import LogisticRegression

warnings.filterwarnings("ignore")
rng = np.random.default_rng(12)
cases = []


def case(name, y, p, C):
    y = np.asarray(y); p = np.asarray(p)
    rec = recall_score(y, p, average=None, labels=list(range(C)), zero_division=np.nan)
    cases.append({
        "name": name, "C": C, "y": y.tolist(), "pred": p.tolist(),
        "accuracy": float(accuracy_score(y, p)),
        "balancedAccuracy": float(balanced_accuracy_score(y, p)),
        "macroF1": float(f1_score(y, p, average="macro")),
        "recall": [None if np.isnan(r) else float(r) for r in rec],
    })


case("hand", [0, 0, 0, 0, 1, 1, 2, 2, 2, 2], [0, 0, 1, 2, 1, 0, 2, 2, 2, 0], 3)
case("majority guess", [0] * 9 + [1], [0] * 10, 2)
case("class 2 never predicted", [0, 1, 2, 0, 1, 2, 0, 1], [0, 1, 0, 0, 1, 1, 0, 1], 3)
case("a predicted class with no true items", [0, 0, 1, 1, 0], [0, 2, 1, 2, 0], 3)
for k in range(4):
    C = 5
    w = rng.dirichlet(np.ones(C) * 0.7)
    y = rng.choice(C, size=200, p=w)
    p = np.where(rng.random(200) < 0.4, y, rng.choice(C, size=200))
    case(f"random imbalanced {k}", y, p, C)

nulls = []
for k in range(3):
    v = rng.normal(0.2, 0.03, size=[50, 200, 37][k])
    lo, hi = np.percentile(v, [2.5, 97.5])
    nulls.append({"values": v.tolist(), "mean": float(v.mean()), "band": [float(lo), float(hi)]})

n, d, C = 120, 4, 3
y = rng.integers(0, C, size=n)
X = rng.normal(size=(n, d)) + np.eye(C, d)[y] * 1.2
X = (X - X.mean(0)) / X.std(0)
lr = LogisticRegression(C=1.0, solver="lbfgs", tol=1e-10, max_iter=10000).fit(X, y)
logistic = {"n": n, "d": d, "C": C, "X": X.ravel().tolist(), "y": y.tolist(),
            "coef": lr.coef_.tolist(), "intercept": lr.intercept_.tolist(), "pred": lr.predict(X).tolist()}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scores_reference.json")
with open(out, "w") as f:
    json.dump({"cases": cases, "nulls": nulls, "logistic": logistic}, f)
print("wrote", out)
