"""
`lobes cluster` (the whole command) against scikit-learn's bare t-SNE at an 8B run's shape,
2,000 x 4,096 (bench/tsne-vs-sklearn.py's 2k data, seed 0, its 10 clusters as the labels), with
the threads pinned on both sides and the runs alternated:

    /work/venv-wt41/bin/python bench/cluster-vs-sklearn.py [--pairs 5] [--lobes DIR ...] [--out DIR]
        [--lobes-args "--bootstrap 0 --permutations 0 --no-baselines"]

  sklearn  a fresh Python process with OMP_NUM_THREADS = MKL_NUM_THREADS = OPENBLAS_NUM_THREADS = 2
           (and threadpoolctl's limit 2): TSNE(perplexity 30, init 'pca', max_iter 1000,
           method 'barnes_hut', angle 0.5, n_jobs 2, random_state 0).fit_transform(X); its time
           is the fit alone (the matrix already loaded), so the ratio favours scikit-learn.
  lobes    `node DIR/dist/cli/bin.js cluster X.npy --labels L --threads 2 --quiet` plus
           --lobes-args (default: no bootstrap, no permutations, no baselines; the probe at its
           defaults: 5 repeats x 5 folds, C nested over 6 values), the wall time of the process
           (what the user waits for: start-up, load, t-SNE, metrics, writing). Each --lobes DIR
           (a checkout built with `npm run build`; default this one) runs once per pair.

Per pair the order alternates (even pairs: sklearn first; odd: lobes first). Before every run the
1-minute load average (/proc/loadavg) is recorded. The ratio reported is the median over pairs
of lobes' wall / sklearn's fit, beside the ratio of the medians; the machine has 2 cores, so any
load above about 1 from other jobs inflates both sides, and the ratio is provisional then.
"""
import argparse, json, os, statistics, subprocess, sys, time
import importlib.util
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SKLEARN_RUN = r"""
import sys, time, numpy as np
from threadpoolctl import threadpool_limits
from sklearn.manifold import TSNE
X = np.load(sys.argv[1])
with threadpool_limits(2):
    t0 = time.perf_counter()
    TSNE(n_components=2, perplexity=30.0, init='pca', max_iter=1000, method='barnes_hut', angle=0.5, n_jobs=2, random_state=0).fit_transform(X)
    print(time.perf_counter() - t0)
"""


def load():
    return float(open('/proc/loadavg').read().split()[0])


def data(out):
    X_path, L_path = os.path.join(out, '2k_X.npy'), os.path.join(out, '2k_labels.txt')
    if not os.path.exists(X_path):
        spec = importlib.util.spec_from_file_location('tvs', os.path.join(HERE, 'tsne-vs-sklearn.py'))
        tvs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tvs)
        X, lab = tvs.make_2k(np.random.default_rng(0))
        np.save(X_path, X)
        with open(L_path, 'w') as f:
            f.write(''.join(f'c{v}\n' for v in lab))
    return X_path, L_path


def run_sklearn(X_path):
    env = dict(os.environ, OMP_NUM_THREADS='2', MKL_NUM_THREADS='2', OPENBLAS_NUM_THREADS='2')
    res = subprocess.run([sys.executable, '-c', SKLEARN_RUN, X_path], env=env, capture_output=True, text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


def run_lobes(checkout, X_path, L_path, out, extra):
    if os.path.exists(out):
        subprocess.run(['rm', '-rf', out], check=True)
    cmd = ['node', os.path.join(checkout, 'dist', 'cli', 'bin.js'), 'cluster', X_path, '--labels', L_path, '--threads', '2', '--quiet', '--out', out] + extra
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    m = json.load(open(os.path.join(out, 'metrics.json')))
    return wall, m.get('timings', {}), m.get('cpuTimings', {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pairs', type=int, default=5)
    ap.add_argument('--lobes', action='append', help='a lobes checkout with dist/ built (repeatable; default this one)')
    ap.add_argument('--lobes-args', default='--bootstrap 0 --permutations 0 --no-baselines')
    ap.add_argument('--out', default=os.path.join(ROOT, 'bench', 'out', 'cluster-vs-sklearn'))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    checkouts = a.lobes or [ROOT]
    X_path, L_path = data(a.out)
    extra = a.lobes_args.split()
    sk, lo, loads = [], {c: [] for c in checkouts}, []
    print(f'lobes cluster {" ".join(extra)} --threads 2 against sklearn TSNE (2 threads), {a.pairs} alternating pairs, 2,000 x 4,096')
    for p in range(a.pairs):
        order = ['sklearn'] + checkouts if p % 2 == 0 else checkouts + ['sklearn']
        for who in order:
            l0 = load()
            loads.append(l0)
            if who == 'sklearn':
                t = run_sklearn(X_path)
                sk.append(t)
                print(f'pair {p}: sklearn fit {t:6.2f} s  (load {l0:.2f})', flush=True)
            else:
                wall, tim, cpu = run_lobes(who, X_path, L_path, os.path.join(a.out, f'lobes-{checkouts.index(who)}'), extra)
                lo[who].append(wall)
                stages = ', '.join(f'{k} {v:.1f}' for k, v in tim.items())
                cpus = sum(cpu.values()) if cpu else float('nan')
                print(f'pair {p}: lobes [{who}] wall {wall:6.2f} s  (load {l0:.2f}; stages s: {stages}; process CPU of the stages {cpus:.1f} s)', flush=True)
    print(f'load before each run: median {statistics.median(loads):.2f}, range {min(loads):.2f}-{max(loads):.2f}')
    print(f'sklearn fit: median {statistics.median(sk):.2f} s (range {min(sk):.2f}-{max(sk):.2f})')
    for c in checkouts:
        ratios = [w / s for w, s in zip(lo[c], sk)]
        print(f'lobes [{c}]: median {statistics.median(lo[c]):.2f} s (range {min(lo[c]):.2f}-{max(lo[c]):.2f}); '
              f'ratio lobes / sklearn: median of pairs {statistics.median(ratios):.2f}x, of medians {statistics.median(lo[c]) / statistics.median(sk):.2f}x')


if __name__ == '__main__':
    main()
