"""
t-SNE: lobes vs scikit-learn (Barnes-Hut) vs openTSNE (FFT), in one run on the same data.

    /work/venv/bin/python bench/tsne-vs-sklearn.py [--cases 2k,20k] [--methods sklearn,opentsne,lobes] [--out bench/out]

Data (seeded, written to .npy so every method reads the same numbers):
  2k : N = 2,000 x 4,096, 10 Gaussian clusters in two super-groups on a 20-dim latent
       subspace, mapped to 4,096 dims plus isotropic noise.
  20k: N = 20,000 x 50, 20 Gaussian clusters with spreads 0.5-2.
  5c : N = 2,000 x 4,096, 5 Gaussian clusters (centres N(0, 0.3^2) per coordinate) with
       isotropic unit noise: the neighbourhoods live in all 4,096 dimensions, so building them
       from 50 principal components distorts them ("PCA-50 distorts neighbourhoods").
  50k: the same generator as 20k with N = 50,000 (not in the default cases: a scaling check).
Settings: perplexity 30, PCA initialisation, 1000 iterations, 2 threads everywhere;
sklearn: method='barnes_hut', angle=0.5; openTSNE: negative_gradient_method='fft';
lobes: its defaults (neighbourhoods from the original space, theta 0.5), --threads 2;
lobes-pca50: lobes with --pca 50 (neighbourhoods from 50 principal components, the old default).

Reported per method:
  time   wall seconds of the embedding itself (fit / fit_transform; for lobes the span from
         the loaded matrix to the coordinates, measured inside the process)
  KL     exact KL(P||Q) of every output against ONE P: scikit-learn's joint P from the
         k = 3*perplexity+1 nearest neighbours of the raw data (the P its Barnes-Hut optimizes),
         with exact Q over all pairs. Each library's own reported KL is listed too.
  trust  sklearn.manifold.trustworthiness(X, Y, n_neighbors=10); for N = 20,000 on a fixed
         random subsample of 5,000 points (the full N x N distance matrices do not fit).
"""
import argparse, json, os, subprocess, sys, time
import numpy as np
from sklearn.manifold import TSNE, trustworthiness
from sklearn.manifold._t_sne import _joint_probabilities_nn
from sklearn.neighbors import NearestNeighbors
from scipy.sparse import csr_matrix

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_2k(rng):
    n, d, latent, C = 2000, 4096, 20, 10
    group = rng.normal(size=(2, latent)) * 4.0
    centers = np.repeat(group, C // 2, axis=0) + rng.normal(size=(C, latent)) * 2.0
    lab = rng.integers(0, C, size=n)
    z = centers[lab] + rng.normal(size=(n, latent))
    A = rng.normal(size=(latent, d)) / np.sqrt(latent)
    X = z @ A + rng.normal(size=(n, d)) * 0.5
    return X.astype(np.float32), lab


def make_20k(rng, n=20000):
    d, C = 50, 20
    centers = rng.normal(size=(C, d)) * 2.0
    spread = rng.uniform(0.5, 2.0, size=C)
    lab = rng.integers(0, C, size=n)
    X = centers[lab] + rng.normal(size=(n, d)) * spread[lab, None]
    return X.astype(np.float32), lab


def make_5c(rng):
    n, d, C = 2000, 4096, 5
    centers = rng.normal(size=(C, d)) * 0.3
    lab = rng.integers(0, C, size=n)
    X = centers[lab] + rng.normal(size=(n, d))
    return X.astype(np.float32), lab


def joint_p(X, perplexity):
    n = X.shape[0]
    k = min(n - 1, int(3.0 * perplexity + 1))
    nn = NearestNeighbors(n_neighbors=k, metric="euclidean").fit(X)
    D = nn.kneighbors_graph(mode="distance")
    D.data **= 2
    P = _joint_probabilities_nn(D, perplexity, 0)
    return csr_matrix(P)


def exact_kl(P, Y, block=2000):
    """KL(P||Q) with Q over all pairs: Z = sum_{i!=j} 1/(1+|yi-yj|^2)."""
    Y = Y.astype(np.float64)
    n = Y.shape[0]
    Z = 0.0
    sq = (Y ** 2).sum(1)
    for s in range(0, n, block):
        d2 = sq[s:s + block, None] + sq[None, :] - 2 * Y[s:s + block] @ Y.T
        np.maximum(d2, 0, out=d2)
        w = 1.0 / (1.0 + d2)
        Z += w.sum() - min(block, n - s)  # remove the diagonal terms (w_ii = 1)
    P = P.tocoo()
    d2 = ((Y[P.row] - Y[P.col]) ** 2).sum(1)
    q = 1.0 / (1.0 + d2) / Z
    p = P.data
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def trust(X, Y, rng_sub):
    if X.shape[0] > 5000:
        X, Y = X[rng_sub], Y[rng_sub]
    return float(trustworthiness(X, Y, n_neighbors=10))


def run_case(name, X, outdir, methods, perplexity=30, seed=0):
    n, d = X.shape
    path = os.path.join(outdir, f"{name}_X.npy")
    np.save(path, X)
    sub = np.random.default_rng(123).choice(n, size=min(n, 5000), replace=False)
    P = joint_p(X, perplexity)
    rows = []

    if "sklearn" in methods:
        t = time.perf_counter()
        sk = TSNE(n_components=2, perplexity=perplexity, init="pca", method="barnes_hut", angle=0.5,
                  n_jobs=2, random_state=seed, max_iter=1000, learning_rate="auto")
        Ys = sk.fit_transform(X)
        rows.append(("sklearn (BH)", time.perf_counter() - t, Ys, float(sk.kl_divergence_)))

    if "opentsne" in methods:
        try:
            from openTSNE import TSNE as OTSNE
            t = time.perf_counter()
            ot = OTSNE(n_components=2, perplexity=perplexity, initialization="pca", negative_gradient_method="fft",
                       n_jobs=2, random_state=seed, n_iter=750, early_exaggeration_iter=250, early_exaggeration=12)
            Yo = ot.fit(X)
            rows.append(("openTSNE (FFT)", time.perf_counter() - t, np.asarray(Yo), float(Yo.kl_divergence)))
        except Exception as e:  # keep the comparison going
            print(f"openTSNE failed: {e}", file=sys.stderr)

    info = None
    for method, extra in (("lobes", []), ("lobes-pca50", ["--pca", "50"])):
        if method not in methods:
            continue
        out = os.path.join(outdir, f"{name}_{method}.npy")
        cmd = ["node", "--import", "tsx", os.path.join(HERE, "tsne-lobes.ts"), path, out,
               "--perplexity", str(perplexity), "--seed", str(seed), "--threads", "2", *extra]
        t = time.perf_counter()
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if res.returncode != 0:
            raise SystemExit(f"{method} failed: {res.stderr}")
        got = json.loads(res.stdout.strip().splitlines()[-1])
        if method == "lobes":
            info = got
        Yl = np.load(out)
        rows.append((method, got["seconds"], Yl, float(got["kl"])))

    print(f"\n== {name}: N = {n:,} x {d:,}, perplexity {perplexity} ==")
    if info:
        print(f"lobes stages: {info['stages']}, process wall {wall:.1f} s, cpu {info['cpuSeconds']:.1f} s")
    base = None  # the first method run is the reference of the ratio columns
    print(f"{'method':<16}{'time s':>9}{'x first':>11}{'KL (same P)':>13}{'x first':>11}{'own KL':>9}{'trust@10':>10}{'- first':>11}")
    result = {}
    for label, secs, Y, own in rows:
        kl = exact_kl(P, Y)
        tw = trust(X, Y, sub)
        if base is None:
            base = (secs, kl, tw)
        print(f"{label:<16}{secs:>9.1f}{secs / base[0]:>11.2f}{kl:>13.4f}{kl / base[1]:>11.3f}{own:>9.4f}{tw:>10.4f}{tw - base[2]:>+11.4f}")
        result[label] = {"seconds": secs, "kl_same_p": kl, "own_kl": own, "trustworthiness": tw}
    if name == "5c" and "sklearn (BH)" in result and "lobes" in result:
        r = result["lobes"]["kl_same_p"] / result["sklearn (BH)"]["kl_same_p"]
        print(f"5c target: lobes' default KL against the raw-space P within 1.05x of sklearn's: {r:.3f}x -> {'met' if r <= 1.05 else 'NOT met'}")
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="2k,20k,5c", help="any of 2k, 20k, 5c, 50k")
    ap.add_argument("--methods", default="sklearn,opentsne,lobes,lobes-pca50", help="which to run; the first of sklearn, opentsne, lobes, lobes-pca50 that runs is the reference of the ratio columns")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    allres = {}
    for c in a.cases.split(","):
        rng = np.random.default_rng(0)
        X, _ = make_2k(rng) if c == "2k" else make_5c(rng) if c == "5c" else make_20k(rng, 50000 if c == "50k" else 20000)
        allres[c] = run_case(c, X, a.out, a.methods.split(","))
    load = os.getloadavg()
    print(f"\nload average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with open(os.path.join(a.out, "tsne-vs-sklearn.json"), "w") as f:
        json.dump(allres, f, indent=2)


if __name__ == "__main__":
    main()
