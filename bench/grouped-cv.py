"""Grouped against ungrouped validation on one run (issue 41: pseudo-replication within world trees).

Reads the metrics.json of `lobes cluster` run twice on the same run and point: once with its
default grouping (folds keep each SocialEval world tree whole; bootstraps resample trees, then
items) and once with `--group none` (item-level folds and bootstrap, as the findings' runs were
made). Prints, per classifier, both balanced accuracies with their CIs, nulls and adjusted p, and
the difference (ungrouped - grouped): how much the item-level protocol inflated the number.

    python3 bench/grouped-cv.py OUT/c-final.hidden-grouped OUT/c-final.hidden-none [more pairs]
"""
import json
import sys


def rows(m):
    out = []
    for s in m["spaces"]:
        for kind in ("knn", "probe"):
            c = s.get(kind) or {}
            b = c.get("balancedAccuracy")
            if b:
                out.append((f"{s['space']} {kind}", b))
    for base in m.get("baselines") or []:
        b = base["probe"]["balancedAccuracy"]
        out.append((f"baseline {base['name']} probe", b))
    for ctl in m.get("controls") or []:
        b = ctl["probe"]["balancedAccuracy"]
        out.append((f"control {ctl['name']} probe", b))
    return out


def fmt(b):
    lo, hi = b["ci95"]
    null = b.get("nullMean")
    adj = (b.get("verdict") or {}).get("adjusted", b.get("pHolm"))
    status = (b.get("verdict") or {}).get("status", "")
    text = f"{b['value']:.3f} [{lo:.3f}, {hi:.3f}]"
    if null is not None:
        text += f" null {null:.3f}"
    if adj is not None:
        text += f" Holm {adj:.3g} {status}"
    return text


args = sys.argv[1:]
print("| point | classifier | grouped (trees whole) | ungrouped (items) | ungrouped - grouped |")
print("|---|---|---|---|---|")
for g, u in zip(args[0::2], args[1::2]):
    mg, mu = (json.load(open(f"{d}/metrics.json")) for d in (g, u))
    point = g.rstrip("/").split("/")[-1].removeprefix("c-").removesuffix("-grouped")
    ru = dict(rows(mu))
    for name, b in rows(mg):
        if name not in ru:
            continue
        print(f"| {point} | {name} | {fmt(b)} | {fmt(ru[name])} | {ru[name]['value'] - b['value']:+.3f} |")
    print(f"| {point} | chance | {mg['chance']['balancedAccuracy']:.3f} | {mu['chance']['balancedAccuracy']:.3f} | |")
