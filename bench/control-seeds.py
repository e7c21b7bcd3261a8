#!/usr/bin/env python3
"""The random-weights control at three seeds: the final state's and the mean state's probe and
kNN (cosine) against their label nulls, from each seed's `lobes cluster` metrics.json.

    python3 bench/control-seeds.py runs/ctl > bench/control-seeds.out.md

Expects DIR/en-qr-mean-control-sS/cluster-POINT/metrics.json for S in 0 1 2 and POINT in
final.hidden, final.mean (bench/control-seeds.sh makes them). Standard library only."""
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else 'runs/ctl'
SPACES = [('original-euclidean', 'probe', 'probe'), ('original-cosine', 'knn', 'kNN (k = 10, cosine)')]


def fmt(x, d=3):
    return '–' if x is None else f'{x:.{d}f}'


def pfmt(x):
    return '–' if x is None else (f'{x:.0e}' if x < 0.001 else f'{x:.3f}')


print('# The random-weights control at three seeds (bench/control-seeds.py)\n')
print('English question + response, 1,985 items, `lobes extract … --control random --control-seed S --capture final,mean`,')
print('then `lobes cluster RUN --by aspect --point P --metric-points 2200 --seed 0` (defaults otherwise: counts sized')
print('to the family of 5 classifiers, 99 probe and 200 kNN permutations). Balanced accuracy, chance 0.200.\n')
print('| seed | point | classifier | balanced accuracy [95% CI] | null mean | p | z | Holm (family of 5) | verdict |')
print('|---|---|---|---|---|---|---|---|---|')
for s in (0, 1, 2):
    for point in ('final.hidden', 'final.mean'):
        f = os.path.join(root, f'en-qr-mean-control-s{s}', f'cluster-{point}', 'metrics.json')
        if not os.path.exists(f):
            print(f'| {s} | {point} | – | not run | | | | | |')
            continue
        m = json.load(open(f))
        for space, key, name in SPACES:
            sp = next(x for x in m['spaces'] if x['space'] == space)
            b = sp[key]['balancedAccuracy']
            v = b.get('verdict') or {}
            ci = b.get('ci95') or [None, None]
            print(f"| {s} | `{point}` | {name} | {fmt(b['value'])} [{fmt(ci[0])}, {fmt(ci[1])}] | {fmt(b.get('nullMean'))} | {pfmt(b.get('p'))} | {fmt(b.get('z'), 1)} | {pfmt(v.get('adjusted'))} | {v.get('status', '–')} |")
