"""Markdown tables of a `lobes ablate` summary.json: the effect matrix (region × label: mean
change of log-likelihood, the random regions' mean, p, z) and the specificity rows.

    python3 bench/ablate-table.py bench/ablate/smollm2-en-summary.json [runs/ablate/en-all/records.jsonl]

With the records: the same matrix per continuation token (Σ change / Σ tokens over a label's
items), and where each label's own region ranks among the regions in damage to its items.
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

if len(sys.argv) > 2:
    recs = [json.loads(l) for l in open(sys.argv[2])]
    by = s["by"]
    regs = list(recs[0]["after"].keys())
    print(f"\n| region ↓ / items → ({s['unit']} per token) | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    def per_token(rs, after):
        return sum(after(r) - r["before"] for r in rs) / sum(r["continuationTokens"] for r in rs)
    for g in regs + ["random regions (mean)"]:
        f = (lambda r: sum(r["random"].values()) / len(r["random"])) if g.startswith("random") else (lambda r, g=g: r["after"][g])
        print(f"| {g} | " + " | ".join(f"{per_token([r for r in recs if r['labels'][by] == l], f):.2f}" for l in labels) + " |")
    print("| before (LL per token) | " + " | ".join(f"{sum(r['before'] for r in recs if r['labels'][by] == l) / sum(r['continuationTokens'] for r in recs if r['labels'][by] == l):.2f}" for l in labels) + " |")
    print("| continuation tokens per item | " + " | ".join(f"{sum(r['continuationTokens'] for r in recs if r['labels'][by] == l) / sum(1 for r in recs if r['labels'][by] == l):.1f}" for l in labels) + " |")
    for l in labels:
        if l not in regs:
            continue
        rs = [r for r in recs if r["labels"][by] == l]
        order = sorted(regs, key=lambda g: sum(r["after"][g] - r["before"] for r in rs))
        print(f"\n{l} items: own region ranks {order.index(l) + 1} of {len(regs)} in damage (1 = most)", end="")
    print()
