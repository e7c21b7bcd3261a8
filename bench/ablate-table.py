"""Markdown tables of a `lobes ablate` summary.json: the effect matrix (region × label: mean
change of log-likelihood, the random regions' mean, p, z) and the specificity rows.

    python3 bench/ablate-table.py bench/ablate/smollm2-en-summary.json
"""
import json
import sys

s = json.load(open(sys.argv[1]))
key = lambda r: r["region"] if r["minus"] is None else f"{r['region']}∖{r['minus']}"
labels = s["labels"]
print(f"Mean change of LL per item ({s['unit']}, after − before); in brackets the mean over the {s['random']} random regions; p (floor {s['pFloor']:.3f}) / z against them.\n")
print("| region ↓ / items → | " + " | ".join(f"{l} (n={next(c['n'] for c in s['cells'] if c['label'] == l)})" for l in labels) + " |")
print("|---|" + "---:|" * len(labels))
for r in s["regions"]:
    k = r["name"] if r["minus"] is None else f"{r['name']}∖{r['minus']}"
    cells = {c["label"]: c for c in s["cells"] if key(c) == k}
    row = []
    for l in labels:
        c = cells[l]
        nm = sum(c["nullDelta"]) / len(c["nullDelta"])
        z = "—" if c["z"] is None else f"{c['z']:.1f}"
        row.append(f"{c['delta']:.1f} [{nm:.1f}] p {c['p']:.2f} z {z}")
    print(f"| {k} ({r['blocks']} blocks) | " + " | ".join(row) + " |")
print("\n| region | contrast (own − other items) | 95% CI | random regions' contrasts (mean, range) | p | Holm |")
print("|---|---:|---|---|---:|---:|")
for sp in s["specificity"]:
    nc = sp["nullContrast"]
    print(f"| {key(sp)} | {sp['contrast']:.1f} | [{sp['ci'][0]:.1f}, {sp['ci'][1]:.1f}] | {sum(nc)/len(nc):.1f} ({min(nc):.1f} to {max(nc):.1f}) | {sp['p']:.3f} | {sp['pHolm']:.3f} |")
