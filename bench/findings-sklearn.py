"""
An independent check of the probe numbers in docs/findings.md: scikit-learn on the same runs.

    /work/venv/bin/python bench/findings-sklearn.py runs/findings/en-qr [more runs...]

For each run (read from its files, as docs/run-format.md shows, no lobes code), 5-fold stratified
cross-validated predictions (shuffled, random_state=0) of LogisticRegression(C=1) after
StandardScaler, scored by balanced accuracy and accuracy, on:
  - final.hidden, all dimensions, and its top 50 principal components (PCA fitted on all items,
    as lobes does);
  - token-id counts of the item text under the run's tokenizer (ids seen in at least two items);
  - word unigram counts of the text (CountVectorizer's default tokenization), the kind of
    bag-of-words the issue quotes (balanced accuracy 0.625 on SocialEval English).
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
    print(f"  {name:<44} dim {X.shape[1]:>5}  balanced accuracy {balanced_accuracy_score(y, p):.3f}  accuracy {accuracy_score(y, p):.3f}")


for run in sys.argv[1:]:
    samples = [json.loads(l) for l in open(f"{run}/samples.jsonl")]
    y = np.array([s["labels"]["aspect"] for s in samples])
    texts = [s["text"] for s in samples]
    man = json.load(open(f"{run}/manifest.json"))
    print(f"{run}: {len(y)} items, {len(set(y))} classes; majority rate {max(np.mean(y == c) for c in set(y)):.3f}")
    X = load(run, "final.hidden")
    score(X, y, "final.hidden")
    score(PCA(50, random_state=0).fit_transform(X), y, "final.hidden, top 50 principal components")
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(man["model"]["dir"], "tokenizer.json"))
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
        score(C, y, "token-id counts (ids in >= 2 items)")
    except Exception as e:  # the tokenizer is optional for this check
        print(f"  token-id counts skipped: {e}")
    W = CountVectorizer().fit_transform(texts).toarray().astype(np.float64)
    score(W, y, "word unigram counts (CountVectorizer)")
