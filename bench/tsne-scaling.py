"""
t-SNE scaling: lobes vs openTSNE (FFT) vs scikit-learn (Barnes-Hut) at growing N, in one sitting.

    /work/venv/bin/python bench/tsne-scaling.py [--sizes 5k,10k,20k,50k,100k,200k]
        [--methods lobes,opentsne,sklearn] [--lobes-method auto] [--lobes-lr auto|per-phase] [--lobes-neighbours auto|exact|approximate] [--budget 1800] [--repeats 1] [--out bench/out/scaling]

Data (seeded, one .npy per size, so every method reads the same numbers): N points from 10
Gaussian clusters in 50 dimensions (centres N(0, 3^2) per coordinate, unit spread).
Settings: perplexity 30, PCA initialisation, 1000 iterations (250 of exaggeration 12), 2 threads:
  lobes    node --import tsx bench/tsne-lobes.ts X OUT --threads 2 --method M --neighbours S (exact
           neighbours in the data by default, as `lobes cluster`; S = --lobes-neighbours exact|approximate,
           the approximate search's recall printed; M = --lobes-method, default auto;
           --learning-rate --lobes-lr: auto is scikit-learn's rule, per-phase openTSNE's)
  openTSNE negative_gradient_method='fft', n_jobs=2, n_iter=750 + early_exaggeration_iter=250
  sklearn  method='barnes_hut', angle=0.5, n_jobs=2, max_iter=1000
--repeats R runs each size R times, the methods alternating (lobes, openTSNE, lobes, …), and reports the
median time and, per size, the ratio of each lobes run to the openTSNE run after it (on a shared machine the
speed drifts within minutes, so paired ratios say more than one run each).
Each method runs in its own process with a wall budget (--budget seconds, default 30 minutes);
one that runs out is reported as such, and a method is not run at a larger N once it has.

Reported per size and method:
  time    wall seconds of the embedding (fit / fit_transform; for lobes the span from the loaded
          matrix to the coordinates, measured inside its process)
  recall  10-NN recall of 1,000 sampled points (seeded): the mean fraction of each sampled point's
          10 nearest neighbours in the data (exact, euclidean) that are among its 10 nearest in
          the embedding
  load    the 1-minute load average before and after the run (os.getloadavg)
and per method the slope of log(time) against log(N) (least squares over the sizes it finished).
A JSON file with every figure goes to --out.
"""
import argparse, json, os, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = {"5k": 5000, "10k": 10000, "20k": 20000, "50k": 50000, "100k": 100000, "200k": 200000}


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    C, d = 10, 50
    centers = rng.normal(size=(C, d)) * 3.0
    lab = rng.integers(0, C, size=n)
    X = centers[lab] + rng.normal(size=(n, d))
    return X.astype(np.float32)


def worker(method, xpath, ypath):
    """Run one library on X and write Y; print the fit's wall seconds as JSON."""
    X = np.load(xpath)
    if method == "sklearn":
        from sklearn.manifold import TSNE
        t = time.perf_counter()
        Y = TSNE(n_components=2, perplexity=30, init="pca", method="barnes_hut", angle=0.5, n_jobs=2,
                 random_state=0, max_iter=1000, learning_rate="auto").fit_transform(X)
    else:
        from openTSNE import TSNE as OTSNE
        t = time.perf_counter()
        Y = np.asarray(OTSNE(n_components=2, perplexity=30, initialization="pca", negative_gradient_method="fft",
                             n_jobs=2, random_state=0, n_iter=750, early_exaggeration_iter=250,
                             early_exaggeration=12).fit(X))
    secs = time.perf_counter() - t
    np.save(ypath, Y)
    print(json.dumps({"seconds": secs}))


def recall10(X, Y, sample):
    from sklearn.neighbors import NearestNeighbors
    k = 10
    hx = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[sample], return_distance=False)
    hy = NearestNeighbors(n_neighbors=k + 1).fit(Y).kneighbors(Y[sample], return_distance=False)
    tot = 0.0
    for r, i in enumerate(sample):
        a = [j for j in hx[r] if j != i][:k]
        b = set(j for j in hy[r] if j != i)
        tot += len([j for j in a if j in b]) / k
    return tot / len(sample)


def run_one(method, xpath, ypath, budget, lobes_method, lobes_lr, lobes_nn):
    if method == "lobes":
        cmd = ["node", "--import", "tsx", os.path.join(HERE, "tsne-lobes.ts"), xpath, ypath, "--threads", "2",
               "--method", lobes_method, "--learning-rate", lobes_lr, "--neighbours", lobes_nn]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", method, xpath, ypath]
    try:
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return None
    if res.returncode != 0:
        raise SystemExit(f"{method} failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="5k,10k,20k,50k,100k,200k")
    ap.add_argument("--methods", default="lobes,opentsne,sklearn")
    ap.add_argument("--lobes-method", default="auto", help="lobes' --method: auto, bh or fft")
    ap.add_argument("--lobes-neighbours", default="auto", help="lobes' --neighbours: auto (exact), exact or approximate")
    ap.add_argument("--lobes-lr", default="auto", help="lobes' --learning-rate: auto (scikit-learn's rule) or per-phase (openTSNE's)")
    ap.add_argument("--budget", type=float, default=1800, help="wall seconds per run at most")
    ap.add_argument("--repeats", type=int, default=1, help="runs per size and method, the methods alternating; the table shows medians")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "scaling"))
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "X", "Y"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(*a.worker)
        return
    os.makedirs(a.out, exist_ok=True)
    methods = a.methods.split(",")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {os.cpu_count()} cores, lobes method {a.lobes_method}, learning rate {a.lobes_lr}, neighbours {a.lobes_neighbours}")
    results = {m: {} for m in methods}
    out_of_budget = set()
    for name in a.sizes.split(","):
        n = SIZES[name]
        X = make_data(n)
        xpath = os.path.join(a.out, f"{name}_X.npy")
        np.save(xpath, X)
        sample = np.random.default_rng(123).choice(n, size=min(n, 1000), replace=False)
        for rep in range(a.repeats):
            for m in methods:
                if m in out_of_budget:
                    print(f"{name:>5} {m:<9} skipped (ran out of budget)", flush=True)
                    continue
                ypath = os.path.join(a.out, f"{name}_{m}.npy")
                l0 = os.getloadavg()[0]
                got = run_one(m, xpath, ypath, a.budget, a.lobes_method, a.lobes_lr, a.lobes_neighbours)
                l1 = os.getloadavg()[0]
                if got is None:
                    out_of_budget.add(m)
                    results[m][name] = {"n": n, "seconds": None, "load": [l0, l1]}
                    print(f"{name:>5} {m:<9} over the {a.budget:.0f} s budget (load {l0:.1f} -> {l1:.1f})", flush=True)
                    continue
                rec = recall10(X.astype(np.float64), np.load(ypath).astype(np.float64), sample)
                prev = results[m].get(name, {}).get("runs", [])
                runs = prev + [got["seconds"]]
                results[m][name] = {"n": n, "seconds": float(np.median(runs)), "runs": runs, "recall10": rec, "load": [l0, l1], **({"stages": got.get("stages"), "neighbours": got.get("neighbours"), "neighbourRecall": got.get("neighbourRecall")} if m == "lobes" else {})}
                print(f"{name:>5} {m:<9} {got['seconds']:8.1f} s  recall@10 {rec:.4f}  load {l0:.1f} -> {l1:.1f}"
                      + (f"  run {rep + 1} of {a.repeats}" if a.repeats > 1 else "")
                      + (f"  stages {got.get('stages')}  neighbours {got.get('neighbours')} (recall {got.get('neighbourRecall')})" if m == "lobes" else ""), flush=True)
    # the table and the slopes
    names = [s for s in a.sizes.split(",")]
    print("\n| N | " + " | ".join(f"{m} s (recall@10)" for m in methods) + " | lobes ÷ openTSNE | lobes ÷ sklearn |")
    print("|---|" + "---|" * (len(methods) + 2))
    for name in names:
        cells = []
        for m in methods:
            r = results[m].get(name)
            cells.append("—" if not r else "over budget" if r["seconds"] is None else f"{r['seconds']:.1f} ({r['recall10']:.3f})")
        def ratio(b):
            ra, rb = results.get("lobes", {}).get(name), results.get(b, {}).get(name)
            return f"{ra['seconds'] / rb['seconds']:.2f}×" if ra and rb and ra["seconds"] and rb["seconds"] else "—"
        print(f"| {SIZES[name]:,} | " + " | ".join(cells) + f" | {ratio('opentsne')} | {ratio('sklearn')} |")
    if a.repeats > 1 and "lobes" in results and "opentsne" in results:
        print("\npaired ratios lobes ÷ openTSNE (run r of lobes against run r of openTSNE, which follows it):")
        for name in names:
            ra, rb = results["lobes"].get(name, {}).get("runs", []), results["opentsne"].get(name, {}).get("runs", [])
            pairs = [x / y for x, y in zip(ra, rb)]
            if pairs:
                print(f"  {SIZES[name]:,}: " + ", ".join(f"{p:.3f}" for p in pairs) + f"  (median {float(np.median(pairs)):.3f})")
    slopes = {}
    for m in methods:
        pts = [(r["n"], r["seconds"]) for r in results[m].values() if r["seconds"]]
        if len(pts) >= 2:
            slopes[m] = float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])
    print("\nslope of log(time) against log(N): " + ", ".join(f"{m} {s:.2f}" for m, s in slopes.items()))
    with open(os.path.join(a.out, "tsne-scaling.json"), "w") as f:
        json.dump({"results": results, "slopes": slopes, "lobesMethod": a.lobes_method, "lobesLearningRate": a.lobes_lr, "lobesNeighbours": a.lobes_neighbours}, f, indent=2)


if __name__ == "__main__":
    main()
