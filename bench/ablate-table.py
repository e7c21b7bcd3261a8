"""Markdown tables of a `lobes ablate` summary.json: the effect matrix (region × label: mean
change of log-likelihood, or of accuracy with --task iae, the random regions' mean, p, z) and the
specificity rows; with --task iae also accuracy before → after per cell, with the items lost and
gained and the exact McNemar p, and the test against chance.

    python3 bench/ablate-table.py bench/ablate/smollm2-en-summary.json [runs/ablate/en-all/records.jsonl]

With the records: the same matrix per continuation token (Σ change / Σ tokens over a label's
items), and where each label's own region ranks among the regions in damage to its items.
"""
import json
import sys

s = json.load(open(sys.argv[1]))
key = lambda r: r["region"] if r["minus"] is None else f"{r['region']}∖{r['minus']}"
labels = s["labels"]
acc = s["unit"] == "accuracy"
fmt = (lambda x: f"{100 * x:+.0f} pp") if acc else (lambda x: f"{x:.1f}")
print(f"Mean change per item ({'accuracy, percentage points' if acc else s['unit']}, after − before); in brackets the mean over the {s['random']} random regions; p (floor {s['pFloor']:.3f}) / z against them.\n")

def matrix(cells, heads, align, name, cell):
    """One row per region, one column per label: `cell(c)` of each region × label cell."""
    print("| region ↓ / items → | " + " | ".join(heads) + " |")
    print("|---|" + f"{align}|" * len(labels))
    for r in s["regions"]:
        k = r["name"] if r["minus"] is None else f"{r['name']}∖{r['minus']}"
        row = {c["label"]: c for c in cells if key(c) == k}
        print(f"| {name(r, k)} | " + " | ".join(cell(row[l]) for l in labels) + " |")


def effect(c):
    nm = sum(c["nullDelta"]) / len(c["nullDelta"])
    z = "—" if c["z"] is None else f"{c['z']:.1f}"
    return f"{fmt(c['delta'])} [{fmt(nm)}] p {c['p']:.2f} z {z}"


matrix(s["cells"], [f"{l} (n={next(c['n'] for c in s['cells'] if c['label'] == l)})" for l in labels], "---:", lambda r, k: f"{k} ({r['blocks']} blocks)", effect)
print("\n| region | contrast (own − other items) | 95% CI | random regions' contrasts (mean, range) | p | Holm |")
print("|---|---:|---|---|---:|---:|")
for sp in s["specificity"]:
    nc = sp["nullContrast"]
    print(f"| {key(sp)} | {fmt(sp['contrast'])} | [{fmt(sp['ci'][0])}, {fmt(sp['ci'][1])}] | {fmt(sum(nc)/len(nc))} ({fmt(min(nc))} to {fmt(max(nc))}) | {sp['p']:.3f} | {sp['pHolm']:.3f} |")

if s.get("iae"):
    iae = s["iae"]
    ch = iae["chance"]
    print(f"\nBefore ablating ({iae['scoring']}, {iae['metric']}): {ch['correct']}/{ch['n']} = {100 * ch['accuracy']:.1f}% right, chance {100 * ch['chance']:.1f}%, exact one-sided p = {ch['p']:.2g}; skipped {len(iae['skipped'])}.\n")
    def answers(c):
        nm = sum(c["nullChange"]) / len(c["nullChange"])
        return f"{100 * c['accuracyBefore']:.0f}→{100 * c['accuracyAfter']:.0f}% (−{c['lost']}/+{c['gained']}, McNemar {c['pMcNemar']:.2g}; random {100 * nm:+.0f})"
    matrix(iae["cells"], labels, "---", lambda r, k: k, answers)

    if len(sys.argv) > 2:
        # every item together, from the records: accuracy after each region and each random region
        from math import comb
        recs = [json.loads(l) for l in open(sys.argv[2])]
        recs = [r for r in recs if r["before"] is not None]
        def mcnemar(lost, gained):
            n = lost + gained
            return 1.0 if n == 0 else min(1.0, 2 * sum(comb(n, i) for i in range(min(lost, gained) + 1)) / 2 ** n)
        n = len(recs)
        b = sum(1 for r in recs if r["before"])
        print(f"\nAll {n} items together (right before ablating: {b}, {100 * b / n:.1f}%):\n")
        print("| zeroed | right after | lost | gained | exact McNemar p |")
        print("|---|---:|---:|---:|---:|")
        rows = [(g, lambda r, g=g: r["after"][g]) for g in recs[0]["after"]] + [(f"random {k}", lambda r, k=k: r["random"][k]) for k in recs[0]["random"]]
        for g, f in rows:
            lost = sum(1 for r in recs if r["before"] and not f(r))
            gained = sum(1 for r in recs if not r["before"] and f(r))
            a = sum(1 for r in recs if f(r))
            print(f"| {g} | {a} ({100 * a / n:.1f}%) | {lost} | {gained} | {mcnemar(lost, gained):.2g} |")

if len(sys.argv) > 2 and not s.get("iae"):
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
