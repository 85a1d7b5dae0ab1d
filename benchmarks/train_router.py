"""Train the router's segment scorer (``tasks/review/route_model.json.gz``) and report it on the test split.

``python -m benchmarks.train_router [DATA_DIR] [--text pdf|txt] [--rate 0.43] [--out tasks/review/route_model.json.gz]``
(needs the ``bench`` extra: numpy, scipy and scikit-learn).

Data: the shared CUAD contracts (``DATA_DIR``, default ``../shared/data/cuad``) and their
highlighted spans (``labels/master_clauses.csv``). With ``--text pdf`` (default) the text is what
the pipeline reads: each PDF extracted by the review's own extraction child process, pages joined
by the page separator (about 10 minutes on two cores the first time, then cached in
``--pdf-cache``); with ``--text txt`` the annotators' text files, cleaned like an extracted page.
Split: the frozen test split (:func:`tasks.observe.evaluate.split_of`, a seeded SHA-256 of the label
``Filename``, 75 of 340); the scorer is trained on the training split and every figure printed as
``test`` comes from contracts it never saw (the threshold is chosen out-of-fold on the training contracts).

Model: L2-regularised logistic regression (scikit-learn ``LogisticRegression``, liblinear,
``C``) over the tf-idf blocks of :func:`tasks.review.route.segment_terms` (sublinear term frequency,
smoothed idf ``ln((1 + n) / (1 + df)) + 1`` over the training segments, each block normalised to
unit length; the neighbour blocks weighted ``--neighbour-scale``). Vocabulary: word n-grams
and neighbour words seen in at least ``--min-df`` training segments, the ``--char-features``
most frequent character n-grams. A segment is a positive when it overlaps the first occurrence
of a labelled span.

Threshold: chosen so that the router as a whole (preamble, obligation signals and scorer)
sends ``--rate`` of the training contracts' characters deep, using *out-of-fold* scores (three
folds by contract), because scores of a model on its own training segments are too confident.

Prints one JSON line per threshold row (on the test split's contracts and out-of-fold on the training ones:
per-span recall, per-document-category recall and routing rate; a contract *keeps* a CUAD category
labelled in it when at least one labelled span of that category is wholly inside deep segments), the
rate the test contracts would need for a per-span recall of 0.95 and 0.98 and a per-document-category
recall of 0.98, and writes the model.
Deterministic: the same data gives the same file.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import math
import sys
from collections import Counter
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cuad"


def load(data_dir: Path, source: str = "txt", cache: Path | None = None, jobs: int = 2) -> list[dict]:
    """Contracts as ``{filename, split, text, pieces: [(category, [(start, end), ...])]}``.

    ``source="txt"``: the annotators' text files, cleaned like an extracted page. ``source="pdf"``:
    the text the pipeline itself reads, extracted from the PDFs by :func:`tasks.ingest.extract.run_extraction`
    (the same child process and limits as a review) and joined with the page separator, cached as
    ``cache/<sha1 of Filename>.txt`` (``jobs`` extractions at once); a contract whose extraction
    fails is left out and counted on stderr.
    """
    from tasks.observe.evaluate import label_pieces, load_cuad, locate, split_of
    from tasks.textnorm import clean_page_text, match_form

    labelled = load_cuad(data_dir)
    texts: dict[str, str] = {}
    if source == "pdf":
        texts = pdf_texts(data_dir, labelled, cache or Path(".router-pdf-text"), jobs)
    out = []
    for doc in labelled:
        if source == "pdf":
            if doc.filename not in texts:
                continue
            text = texts[doc.filename]
        else:
            text = clean_page_text((data_dir / doc.txt_file).read_text(encoding="utf-8", errors="replace"))
        norm, offs = match_form(text)
        pieces = []
        for cat, spans in doc.spans.items():
            for piece in label_pieces(spans):
                hits = locate(norm, offs, piece)
                if hits:
                    pieces.append((cat.value, hits))
        out.append({"filename": doc.filename, "split": split_of(doc.filename), "text": text, "pieces": pieces})
    return out


def _extract(job: tuple[str, str]) -> tuple[str, str | None]:
    from schemas.documents import PAGE_SEPARATOR
    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction

    path, out = job
    result = run_extraction(path, Limits())
    if not result.get("ok"):
        return path, None
    text = PAGE_SEPARATOR.join(p["text"] for p in result["pages"])
    Path(out).write_text(text, encoding="utf-8")
    return path, text


def pdf_texts(data_dir: Path, labelled: list, cache: Path, jobs: int) -> dict[str, str]:
    """``Filename`` -> pipeline text of its PDF (see :func:`load`)."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    cache.mkdir(parents=True, exist_ok=True)
    texts, todo = {}, {}
    for doc in labelled:
        file = cache / (hashlib.sha1(doc.filename.encode("utf-8")).hexdigest() + ".txt")
        if file.is_file():
            texts[doc.filename] = file.read_text(encoding="utf-8")
        else:
            todo[str(data_dir / doc.pdf_file)] = (doc.filename, str(file))
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each extraction is its own child process
        for path, text in pool.map(_extract, [(p, out) for p, (_, out) in todo.items()]):
            if text is not None:
                texts[todo[path][0]] = text
    missing = len(labelled) - len(texts)
    if missing:
        print(json.dumps({"pdf_extraction_failed": missing}), file=sys.stderr)
    return texts


def router_figures(
    docs: list[dict], flags: dict[str, list[bool]], segs: dict[str, list[tuple[int, int]]], rate_only: bool = False
) -> tuple[float, float, float]:
    """``(recall, rate, category_recall)``: labelled spans wholly inside deep segments; deep characters / all
    characters; and per document and category, the share of (contract, CUAD category labelled in it) pairs
    with at least one labelled span of that category wholly inside deep segments (a contract *keeps* a
    category). Both recalls are 0.0 with ``rate_only``."""
    from tasks.observe.evaluate import is_covered
    from tasks.review.route import covered_chars

    located = routed = deep = total = 0
    categories = kept = 0
    for d in docs:
        ranges = [s for s, f in zip(segs[d["filename"]], flags[d["filename"]]) if f]
        total += len(d["text"])
        deep += covered_chars(ranges)
        if rate_only:
            continue
        by_category: dict[str, bool] = {}
        for cat, hits in d["pieces"]:
            located += 1
            hit = any(is_covered(a, b, ranges) for a, b in hits)
            routed += hit
            by_category[cat] = by_category.get(cat, False) or hit
        categories += len(by_category)
        kept += sum(by_category.values())
    return (
        (routed / located if located else 0.0),
        (deep / total if total else 0.0),
        (kept / categories if categories else 0.0),
    )


def build_vocab(train_terms: list[dict], min_df: int, char_features: int) -> dict[str, dict[str, float]]:
    """Per block, term -> idf over the training segments (``train_terms``: :func:`segment_terms` entries)."""
    df = {b: Counter() for b in ("word", "char")}
    for t in train_terms:
        for b in df:
            df[b].update(t[b].keys())
    n = len(train_terms)
    idf = lambda c: round(math.log((1 + n) / (1 + c)) + 1.0, 4)  # noqa: E731
    word = {k: idf(c) for k, c in df["word"].items() if c >= min_df}
    chars = sorted(((c, k) for k, c in df["char"].items() if c >= min_df), key=lambda x: (-x[0], x[1]))
    char = {k: idf(c) for c, k in chars[:char_features]}
    unigrams = {k: v for k, v in word.items() if " " not in k}
    return {"word": word, "char": char, "prev": unigrams, "next": unigrams}


def matrix(
    np,
    sp,
    terms: list[dict],
    vocab: dict[str, dict[str, float]],
    index: dict[str, dict[str, int]],
    scales: dict[str, float],
):
    """CSR matrix of the normalised tf-idf blocks (columns from ``index``), one row per segment."""
    data, cols, indptr = [], [], [0]
    for t in terms:
        for b, voc in vocab.items():
            vals = [(index[b][k], (1.0 + math.log(c)) * voc[k]) for k, c in t[b].items() if k in voc]
            norm = math.sqrt(sum(v * v for _, v in vals)) or 1.0
            for col, v in vals:
                cols.append(col)
                data.append(scales[b] * v / norm)
        indptr.append(len(cols))
    width = sum(len(i) for i in index.values())
    return sp.csr_matrix(
        (np.array(data), np.array(cols, dtype=np.int64), np.array(indptr, dtype=np.int64)), shape=(len(terms), width)
    )


def main(argv: list[str] | None = None) -> int:
    """Train, choose the threshold, print the test split's figures and write the model file."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from tasks.review.route import MODEL_FILE, ScorerModel, route_text, segment_terms, segment_text

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--rate", type=float, default=0.43, help="routing rate to reach on the training contracts")
    ap.add_argument("--out", default=str(MODEL_FILE))
    ap.add_argument("--min-df", type=int, default=10, help="minimum training segments for a word term")
    ap.add_argument("--char-features", type=int, default=30000, help="character n-grams kept (most frequent)")
    ap.add_argument("--neighbour-scale", type=float, default=0.5)
    ap.add_argument("--C", type=float, default=1.0, help="inverse L2 regularisation strength")
    ap.add_argument(
        "--text",
        choices=("pdf", "txt"),
        default="pdf",
        help="train on the pipeline's PDF text (default) or on the annotators' TXT files",
    )
    ap.add_argument("--pdf-cache", type=Path, default=Path(".router-pdf-text"), help="extracted PDF text cache")
    ap.add_argument("--jobs", type=int, default=2, help="PDF extractions at once")
    args = ap.parse_args(argv)

    never = ScorerModel(threshold=float("inf"))  # preamble and obligation signals only
    docs = load(Path(args.data_dir), args.text, args.pdf_cache, args.jobs)
    train = [d for d in docs if d["split"] == "train"]
    test = [d for d in docs if d["split"] == "test"]
    segs, terms, labels, forced = {}, {}, {}, {}
    for d in docs:
        spans = segment_text(d["text"])
        segs[d["filename"]] = spans
        terms[d["filename"]] = segment_terms(d["text"], spans)
        starts = [a for a, _ in spans]
        y = np.zeros(len(spans))
        for _, hits in d["pieces"]:
            a, b = hits[0]
            y[max(0, bisect.bisect_right(starts, a) - 1) : bisect.bisect_left(starts, b)] = 1
        labels[d["filename"]] = y
        forced[d["filename"]] = [s.deep for s in route_text(d["text"], model=never)]

    train_terms = [t for d in train for t in terms[d["filename"]]]
    vocab = build_vocab(train_terms, args.min_df, args.char_features)
    index = {b: {k: i for i, k in enumerate(sorted(v))} for b, v in vocab.items()}
    offset = 0
    for b in index:  # blocks side by side
        index[b] = {k: i + offset for k, i in index[b].items()}
        offset += len(vocab[b])
    scales = {"word": 1.0, "char": 1.0, "prev": args.neighbour_scale, "next": args.neighbour_scale}
    x_train = matrix(np, sp, train_terms, vocab, index, scales)
    y_train = np.concatenate([labels[d["filename"]] for d in train])
    groups = np.concatenate([[k] * len(segs[d["filename"]]) for k, d in enumerate(train)])

    def fit(x, y):
        return LogisticRegression(C=args.C, solver="liblinear", max_iter=5000).fit(x, y)

    oof = np.zeros(len(y_train))
    for a, b in GroupKFold(n_splits=3).split(x_train, y_train, groups):
        oof[b] = fit(x_train[a], y_train[a]).decision_function(x_train[b])
    clf = fit(x_train, y_train)
    coef = clf.coef_[0]
    blocks = {}
    for b, voc in vocab.items():
        blocks[b] = {
            "scale": scales[b],
            "terms": {k: [voc[k], round(float(coef[index[b][k]]), 4)] for k in sorted(voc)},
        }
    model = ScorerModel(threshold=0.0, bias=round(float(clf.intercept_[0]), 4), blocks=blocks)
    # The shipped scorer re-implements the matrix in pure Python: it must agree with the fitted model
    # (up to the rounding of the stored weights), else the threshold chosen below would not carry over.
    sample = slice(0, min(2000, len(train_terms)))
    drift = np.max(np.abs(clf.decision_function(x_train[sample]) - [model.score(t) for t in train_terms[sample]]))
    if drift > 0.01:
        raise RuntimeError(f"pure-Python scorer disagrees with the fitted model by {drift:.4f} log-odds")

    def split(values, subset):
        out, k = {}, 0
        for d in subset:
            n = len(segs[d["filename"]])
            out[d["filename"]] = values[k : k + n]
            k += n
        return out

    oof_scores = split(oof, train)
    test_scores = {d["filename"]: [model.score(t) for t in terms[d["filename"]]] for d in test}
    report(train, test, segs, forced, oof_scores, test_scores, model, args)
    return 0


def report(train, test, segs, forced, oof_scores, test_scores, model, args) -> None:
    """Choose the threshold for the training rate (out-of-fold), print the test split's figures, write the file."""

    def flags_at(threshold, subset, scores):
        return {
            d["filename"]: [v or s >= threshold for v, s in zip(forced[d["filename"]], scores[d["filename"]])]
            for d in subset
        }

    def threshold_for(rate, subset, scores):
        lo, hi = -20.0, 20.0  # rate falls as the threshold rises: bisect
        for _ in range(30):
            mid = (lo + hi) / 2
            _, r, _ = router_figures(subset, flags_at(mid, subset, scores), segs, rate_only=True)
            lo, hi = (mid, hi) if r > rate else (lo, mid)
        return round(hi, 3)

    threshold = threshold_for(args.rate, train, oof_scores)
    r, rate, cr = router_figures(test, {d["filename"]: forced[d["filename"]] for d in test}, segs)
    print(
        json.dumps(
            {
                "router": "preamble+obligations",
                "test_docs": len(test),
                "recall": round(r, 4),
                "category_recall": round(cr, 4),
                "rate": round(rate, 4),
            }
        )
    )
    held = {}
    for t in sorted({threshold - 1.0, threshold - 0.5, threshold, threshold + 0.5}):
        r, rate, cr = router_figures(test, flags_at(t, test, test_scores), segs)
        tr, trate, tcr = router_figures(train, flags_at(t, train, oof_scores), segs)
        print(
            json.dumps(
                {
                    "router": "preamble+obligations+scorer",
                    "threshold": round(t, 3),
                    "chosen": t == threshold,
                    "test_recall": round(r, 4),
                    "test_category_recall": round(cr, 4),
                    "test_rate": round(rate, 4),
                    "train_out_of_fold_recall": round(tr, 4),
                    "train_out_of_fold_category_recall": round(tcr, 4),
                    "train_out_of_fold_rate": round(trate, 4),
                }
            )
        )
        if t == threshold:
            held = {
                "recall": round(r, 4),
                "category_recall": round(cr, 4),
                "rate": round(rate, 4),
                "documents": len(test),
            }
    for metric, want in (("recall", 0.95), ("recall", 0.98), ("category_recall", 0.98)):
        # the test rate a given recall (per span, or per contract and category) would cost
        lo, hi = -20.0, 20.0
        for _ in range(30):
            mid = (lo + hi) / 2
            r, _, cr = router_figures(test, flags_at(mid, test, test_scores), segs)
            lo, hi = (mid, hi) if (r if metric == "recall" else cr) >= want else (lo, mid)
        r, rate, cr = router_figures(test, flags_at(lo, test, test_scores), segs)
        print(
            json.dumps(
                {
                    f"test_{metric}_wanted": want,
                    "threshold": round(lo, 3),
                    "test_recall": round(r, 4),
                    "test_category_recall": round(cr, 4),
                    "test_rate": round(rate, 4),
                }
            )
        )
    model = model.model_copy(
        update={
            "threshold": threshold,
            "held_out": held,
            "trained_on": f"the {len(train)} shared CUAD contracts of the training split ({args.text} text); "
            f"threshold for an out-of-fold training rate of {args.rate}; C={args.C}",
        }
    )
    payload = json.dumps(model.model_dump(), sort_keys=True, separators=(",", ":")) + "\n"
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        fh.write(payload.encode("utf-8"))
    print(
        json.dumps(
            {
                "model": args.out,
                "bytes": Path(args.out).stat().st_size,
                "terms": sum(len(b.terms) for b in model.blocks.values()),
                "threshold": threshold,
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
