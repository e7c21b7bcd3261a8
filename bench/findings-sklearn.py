"""
An independent check of the probe numbers in docs/findings.md: scikit-learn on the same runs.

    /work/venv/bin/python bench/findings-sklearn.py [--repeats 5] [--c nested|C] [--state-only] runs/findings/en-qr [more runs...]
    /work/venv/bin/python bench/findings-sklearn.py [--repeats 5] --texts FILE.jsonl [...] --tokenizer MODEL_DIR

--state-only scores the final state only (no token features). The second form needs no run: FILE.jsonl is `lobes data export SPEC` output (e.g. the response
alone, socialeval:PATH?lang=en&text=response), scored on the token-id and word counts only.

The protocol is lobes' probe (docs/cluster.md, "The probe's cross-validation"), built from
scikit-learn parts: every step that is fitted is fitted on the training part of each fold only,
as one Pipeline inside the cross-validation:
  - PCA to 50 components (where a row says so), fitted on the training fold;
  - StandardScaler, fitted on the training fold;
  - LogisticRegression (multinomial, L2) with C chosen on the training fold by an inner
    stratified 3-fold GridSearchCV over {0.01, 0.1, 1, 10} by accuracy (`--c nested`, the
    default, for the 50-component rows), or a fixed C (`--c 1`); under `--c nested` the rows on
    every dimension use C = 1, as bench/findings-smollm2.sh's probe on every dimension does (a
    nested search is 13 fits per fold there);
  - stratified 5-fold CV repeated `--repeats` times (RepeatedStratifiedKFold, random_state=0).
Each row prints the mean over repeats of balanced accuracy and accuracy with the standard
deviation between repeats (the fold variation the bootstrap of one CV left out), and the C most
often chosen. Feature sets:
  - final.hidden, all dimensions, and its top 50 principal components;
  - token-id counts of the item text under the run's tokenizer (ids seen in at least two items),
    and the mean of the model's input embedding rows of the item's tokens (the table read from
    the ONNX folder's external data), each on every dimension and on its top 50 components
    (lobes' token baselines use the latter);
  - word unigram counts of the text (CountVectorizer's default tokenization), the plain
    bag-of-words a reader would try first; for Chinese text (no spaces) character unigrams.
Folds differ from lobes' (its own seeded stratified folds), so expect agreement within the
repeats' spread, not to the digit. (Earlier versions fitted PCA and the scaler on all items
before one 5-fold CV with C = 1.)
"""
import json, os, sys
import numpy as np
from safetensors.numpy import load_file
from sklearn.decomposition import PCA
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def load(run, hook):
    index = json.load(open(f"{run}/activations/index.json"))
    parts = [load_file(f"{run}/activations/{c['files'][hook]['path']}")[hook] for c in index["chunks"]]
    return np.concatenate(parts).astype(np.float64)


REPEATS = 5
C_MODE = "nested"
C_GRID = [0.01, 0.1, 1.0, 10.0]


def score(X, y, name, pca=0):
    """Repeated stratified 5-fold CV of [PCA(pca)] + StandardScaler + LogisticRegression, every step fitted in the fold."""
    nested = C_MODE == "nested" and pca > 0
    fixed_c = 1.0 if C_MODE == "nested" else float(C_MODE)
    steps = ([PCA(pca, random_state=0)] if pca else []) + [StandardScaler()]
    bal, acc, chosen = [], [], []
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=REPEATS, random_state=0)
    preds = {}
    for k, (tr, te) in enumerate(cv.split(X, y)):
        r = k // 5
        lr = LogisticRegression(C=fixed_c, max_iter=2000)
        clf = make_pipeline(*steps, lr)
        if nested:
            clf = GridSearchCV(clf, {"logisticregression__C": C_GRID}, cv=StratifiedKFold(3, shuffle=True, random_state=r), scoring="accuracy")
        clf.fit(X[tr], y[tr])
        if nested:
            chosen.append(clf.best_params_["logisticregression__C"])
        p = preds.setdefault(r, np.empty(len(y), dtype=y.dtype))
        p[te] = clf.predict(X[te])
    for r in range(REPEATS):
        bal.append(balanced_accuracy_score(y, preds[r]))
        acc.append(accuracy_score(y, preds[r]))
    c_text = f"C {max(set(chosen), key=chosen.count):g} (nested)" if nested else f"C {fixed_c:g}"
    label = f"{name}, top {pca} components" if pca else name
    print(f"  {label:<52} dim {X.shape[1]:>5}  balanced accuracy {np.mean(bal):.3f} ± {np.std(bal, ddof=1) if REPEATS > 1 else 0:.3f}  accuracy {np.mean(acc):.3f} ± {np.std(acc, ddof=1) if REPEATS > 1 else 0:.3f}  {c_text}", flush=True)


def token_counts(texts, tokenizer_dir):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    ids = [tok.encode(t).ids for t in texts]
    df = {}
    for seq in ids:
        for t in set(seq):
            df[t] = df.get(t, 0) + 1
    vocab = sorted(t for t, c in df.items() if c >= 2)
    col = {t: j for j, t in enumerate(vocab)}
    C = np.zeros((len(ids), len(vocab)))
    for i, seq in enumerate(ids):
        for t in seq:
            if t in col:
                C[i, col[t]] += 1
    return C


def embedding_table(model_dir):
    """The input embedding [vocab, hidden] of an ONNX model folder: the 2-D float initializer
    a Gather reads with the token ids, read from the external data file without loading the rest."""
    import onnx
    m = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
    inits = {i.name: i for i in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type == "Gather" and node.input[0] in inits and len(inits[node.input[0]].dims) == 2:
            t = inits[node.input[0]]
            ext = {e.key: e.value for e in t.external_data}
            assert t.data_type == onnx.TensorProto.FLOAT and ext, "expected an fp32 table in external data"
            with open(os.path.join(model_dir, ext["location"]), "rb") as f:
                f.seek(int(ext.get("offset", 0)))
                return np.frombuffer(f.read(int(ext["length"])), dtype=np.float32).reshape(tuple(t.dims))
    raise ValueError("no embedding Gather found")


def text_baselines(texts, y, tokenizer_dir):
    if tokenizer_dir:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
        E = embedding_table(tokenizer_dir)
        M = np.stack([E[tok.encode(t).ids].astype(np.float64).mean(axis=0) for t in texts])
        score(M, y, "mean input embedding of the tokens")
        score(M, y, "mean input embedding", pca=50)
        C = token_counts(texts, tokenizer_dir)
        score(C, y, "token-id counts (ids in >= 2 items)")
        score(C, y, "token-id counts", pca=50)
    chinese = sum(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts) > len(texts) / 2
    vec = CountVectorizer(analyzer="char") if chinese else CountVectorizer()
    W = vec.fit_transform(texts).toarray().astype(np.float64)
    score(W, y, "character unigram counts" if chinese else "word unigram counts (CountVectorizer)")


def header(name, y):
    print(f"{name}: {len(y)} items, {len(set(y))} classes; majority rate {max(np.mean(y == c) for c in set(y)):.3f}", flush=True)


args = sys.argv[1:]
STATE_ONLY = False
while args and args[0] in ("--repeats", "--c", "--state-only"):
    if args[0] == "--state-only":
        STATE_ONLY = True
        args = args[1:]
        continue
    if args[0] == "--repeats":
        REPEATS = int(args[1])
    else:
        C_MODE = args[1]
    args = args[2:]
print(f"# in-fold PCA and scaling, stratified 5-fold CV x {REPEATS} repeats, C {C_MODE} on the 50-component rows, C 1 on every dimension", flush=True)
if args and args[0] == "--texts":
    tokenizer_dir = None
    files = []
    i = 1
    while i < len(args):
        if args[i] == "--tokenizer":
            tokenizer_dir = args[i + 1]
            i += 2
        else:
            files.append(args[i])
            i += 1
    for f in files:
        rows = [json.loads(l) for l in open(f)]
        y = np.array([r["labels"]["aspect"] for r in rows])
        header(f, y)
        text_baselines([r["text"] for r in rows], y, tokenizer_dir)
    sys.exit(0)

for run in args:
    samples = [json.loads(l) for l in open(f"{run}/samples.jsonl")]
    y = np.array([s["labels"]["aspect"] for s in samples])
    man = json.load(open(f"{run}/manifest.json"))
    header(run, y)
    X = load(run, "final.hidden")
    score(X, y, "final.hidden")
    score(X, y, "final.hidden", pca=50)
    if not STATE_ONLY:
        text_baselines([s["text"] for s in samples], y, man["model"]["dir"])
