"""
An independent check of the probe numbers in docs/findings.md: scikit-learn on the same runs.

    /work/venv/bin/python bench/findings-sklearn.py runs/findings/en-qr [more runs...]
    /work/venv/bin/python bench/findings-sklearn.py --texts FILE.jsonl --tokenizer MODEL_DIR [...]

The second form needs no run: FILE.jsonl is `lobes data export SPEC` output (e.g. the response
alone, socialeval:PATH?lang=en&text=response), scored on the token-id and word counts only.

For each run (read from its files, as docs/run-format.md shows, no lobes code), 5-fold stratified
cross-validated predictions (shuffled, random_state=0) of LogisticRegression(C=1) after
StandardScaler, scored by balanced accuracy and accuracy, on:
  - final.hidden, all dimensions, and its top 50 principal components (PCA fitted on all items,
    as lobes does);
  - token-id counts of the item text under the run's tokenizer (ids seen in at least two items),
    and the mean of the model's input embedding rows of the item's tokens (the table read from
    the ONNX folder's external data), each on every dimension and on its top 50 components
    (lobes' token baselines use the latter);
  - word unigram counts of the text (CountVectorizer's default tokenization), the plain
    bag-of-words a reader would try first; for Chinese text (no spaces) character unigrams.
Folds differ from lobes' (its own seeded stratified folds), so expect agreement within a few
hundredths, not to the digit.
"""
import json, os, sys
import numpy as np
from safetensors.numpy import load_file
from sklearn.decomposition import PCA
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def load(run, hook):
    index = json.load(open(f"{run}/activations/index.json"))
    parts = [load_file(f"{run}/activations/{c['files'][hook]['path']}")[hook] for c in index["chunks"]]
    return np.concatenate(parts).astype(np.float64)


def score(X, y, name):
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    p = cross_val_predict(clf, X, y, cv=cv)
    print(f"  {name:<44} dim {X.shape[1]:>5}  balanced accuracy {balanced_accuracy_score(y, p):.3f}  accuracy {accuracy_score(y, p):.3f}", flush=True)


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
        score(PCA(50, random_state=0).fit_transform(M), y, "mean input embedding, top 50 components")
        C = token_counts(texts, tokenizer_dir)
        score(C, y, "token-id counts (ids in >= 2 items)")
        score(PCA(50, random_state=0).fit_transform(C), y, "token-id counts, top 50 components")
    chinese = sum(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts) > len(texts) / 2
    vec = CountVectorizer(analyzer="char") if chinese else CountVectorizer()
    W = vec.fit_transform(texts).toarray().astype(np.float64)
    score(W, y, "character unigram counts" if chinese else "word unigram counts (CountVectorizer)")


def header(name, y):
    print(f"{name}: {len(y)} items, {len(set(y))} classes; majority rate {max(np.mean(y == c) for c in set(y)):.3f}", flush=True)


args = sys.argv[1:]
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
    score(PCA(50, random_state=0).fit_transform(X), y, "final.hidden, top 50 principal components")
    text_baselines([s["text"] for s in samples], y, man["model"]["dir"])
