"""Does a language model's embedding help the support model? Out-of-fold comparison on the training contracts.

``python -m benchmarks.support_embeddings [DATA_DIR] [--cache FILE] [--alpha 1.0]`` (needs the ``bench``
extra: scikit-learn and ``wordllama``; about 6 minutes on two cores with ``--cache``, the cache file of
``python -m benchmarks.train_support --cache``).

The support model (:class:`tasks.check.support.SupportModel`) is a linear classifier over tf-idf terms of
the quote and its section headings. The fact-check's false alarms (correct findings it does not verify)
come from the scores it gives correct quotes of contracts it has not seen. This benchmark asks whether
a pretrained sentence embedding, added as features, separates them better.

Embedding: WordLlama ``l2_supercat`` at 256 dimensions (``pip install wordllama``, MIT; token embeddings
taken from a large language model's embedding codebook and trained for sentence similarity, average-
pooled). It is the one model found on the package registries that ships its weights inside its wheel
(16 MB, ``wordllama/weights/l2_supercat_256.safetensors``), so nothing is downloaded at run time. Its
loader looks for the tokenizer in ``wordllama/tokenizer/`` and otherwise downloads it, while the wheel
holds it in ``wordllama/tokenizers/``. This script therefore builds the model from the wheel's two files
itself (:func:`load_wordllama`).

Method: the training contracts of :func:`benchmarks.train_support.load`, in the trainer's three folds
by contract. Per fold, two multinomial logistic regressions (lbfgs, C 4) are fitted on the trainer's
examples:

- ``base``: the trainer's unit-length tf-idf rows;
- ``embedding``: the same rows with the quote's unit embedding × ``alpha`` and the heading path's
  unit embedding × ``alpha``/2 appended.

Both score the held-out fold's rules findings. Per support threshold ``t``, the script prints one
JSON line per model:

- ``false_alarm``: the share of faithful findings (quote overlaps a labelled span of its category)
  scored below ``t``;
- ``precision``: the overlap precision of the findings scored at least ``t``;
- ``wrong_category_catch``: the share of faithful findings that score below ``t`` when claimed as a
  random category the labels do not give the quote.

The embedding helps when it lowers ``false_alarm`` at the same ``precision``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from benchmarks.train_support import DEFAULT_DATA, load_examples, tfidf_matrix, vocabulary

#: Support thresholds reported.
THRESHOLDS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)


def load_wordllama() -> Any:
    """WordLlama ``l2_supercat`` (256 dimensions) built from the files its wheel ships: no download.
    Raises ``FileNotFoundError`` when the installed package lacks them."""
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), framework="np", device="cpu") as fh:
        embedding = fh.get_tensor("embedding.weight")
    return WordLlamaInference(embedding, tokenizer)


def _prob(probs: Any, column: dict[int, int], cls: int) -> float:
    """The probability of class ``cls`` in a row of ``predict_proba`` (0 for a class no example of the fold had)."""
    return float(probs[column[cls]]) if cls in column else 0.0


def main(argv: list[str] | None = None) -> int:
    """Fit both models per fold, print one JSON line per (model, threshold)."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    from tasks.check.support import NONE_CLASS, features
    from tasks.observe.evaluate import CATEGORIES, evidence_overlaps, split_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--cache", type=Path, default=None, help="the trainer's cache of loaded examples")
    ap.add_argument("--alpha", type=float, default=1.0, help="weight of the embedding block")
    args = ap.parse_args(argv)

    docs = load_examples(Path(args.data_dir), args.cache)
    train = [d for d in docs if split_of(d["filename"]) == "train"]
    classes = [c.value for c in CATEGORIES] + [NONE_CLASS]
    index_of = {c: i for i, c in enumerate(classes)}
    by_value = {c.value: c for c in CATEGORIES}
    model = load_wordllama()
    vectors: dict[str, Any] = {"": np.zeros(256)}

    def embed(texts: list[str]) -> Any:
        missing = sorted({t for t in texts if t not in vectors})
        if missing:
            for text, vec in zip(missing, model.embed(missing, norm=True)):
                vectors[text] = vec
        return np.array([vectors[t] for t in texts])

    def matrix(texts: list[tuple[str, str | None]], idf: dict[str, float], column: dict[str, int], dense: bool) -> Any:
        x = tfidf_matrix(texts, idf, column, features)
        if not dense:
            return x
        quotes = embed([t for t, _ in texts]) * args.alpha
        headings = embed([h or "" for _, h in texts]) * (args.alpha / 2)
        return sp.hstack([x, sp.csr_matrix(quotes), sp.csr_matrix(headings)]).tocsr()

    folds = [train[k::3] for k in range(3)]
    for name, dense in (("base", False), ("embedding", True)):
        scored: list[tuple[float, bool, float]] = []  # (score, faithful, score as a wrong category)
        for k in range(3):
            rest = [d for j, fold in enumerate(folds) if j != k for d in fold]
            idf = vocabulary(rest, features, 3)
            column = {t: i for i, t in enumerate(idf)}
            texts = [(t, h) for d in rest for t, h, _ in d["examples"]]
            y = np.array([index_of[c] for d in rest for _, _, c in d["examples"]])
            clf = LogisticRegression(C=4.0, max_iter=300, tol=1e-3).fit(matrix(texts, idf, column, dense), y)
            col = {int(c): j for j, c in enumerate(clf.classes_)}
            rng = random.Random(7)
            for d in folds[k]:
                found = [(f, h) for f, h in zip(d["findings"], d["headings"]) if f.clause_type.value in index_of]
                if not found:
                    continue
                probs = clf.predict_proba(matrix([(f.evidence, h) for f, h in found], idf, column, dense))
                for (f, _), p in zip(found, probs):
                    wrong = rng.choice(
                        [
                            c
                            for c in classes[:-1]
                            if c != f.clause_type.value
                            and not evidence_overlaps(f.evidence, d["doc"].spans.get(by_value[c], []))
                        ]
                    )
                    faithful = evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, []))
                    scored.append(
                        (_prob(p, col, index_of[f.clause_type.value]), faithful, _prob(p, col, index_of[wrong]))
                    )
        correct = [s for s, ok, _ in scored if ok]
        for t in THRESHOLDS:
            kept = [ok for s, ok, _ in scored if s >= t]
            line = {
                "model": name,
                "alpha": args.alpha if dense else None,
                "threshold": t,
                "faithful": len(correct),
                "false_alarm": round(sum(s < t for s in correct) / len(correct), 3),
                "precision": round(sum(kept) / len(kept), 3) if kept else None,
                "wrong_category_catch": round(sum(w < t for _, ok, w in scored if ok) / len(correct), 3),
                "kept": len(kept),
            }
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
