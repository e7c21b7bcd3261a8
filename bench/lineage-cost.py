"""Ratios of bench/lineage-cost.sh's times: per stage, after / before in each pair, the first
pair ("first run") and the median of the later pairs, with the load average around each step."""
import csv
import statistics
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
t = {}
load = defaultdict(list)
for r in rows:
    parts = r["step"].split()
    if len(parts) == 3:
        stage, side, pair = parts
        t[(stage, side, int(pair))] = float(r["seconds"])
        load[stage].append(float(r["load_avg_1m_start"]))
    elif len(parts) == 2:
        print(f"{r['step']}: {float(r['seconds']):.1f} s (load {r['load_avg_1m_start']})")
pairs = sorted({k[2] for k in t})
print("stage    pair  before s  after s  after/before")
summary = []
for stage in ["wanda", "cluster", "ablate", "report"]:
    ratios = []
    for p in pairs:
        if (stage, "before", p) in t and (stage, "after", p) in t:
            b, a = t[(stage, "before", p)], t[(stage, "after", p)]
            ratios.append(a / b)
            print(f"{stage:8s} {p:4d}  {b:8.1f}  {a:7.1f}  {a / b:.3f}")
    if ratios:
        later = ratios[1:]
        summary.append(f"{stage}: first run {ratios[0]:.3f}, later runs median {statistics.median(later):.3f}" if later else f"{stage}: {ratios[0]:.3f}")
print("load average (1 min) at the steps' start:", ", ".join(f"{s} {min(v):.2f}-{max(v):.2f}" for s, v in load.items()))
print("\n".join(summary))
