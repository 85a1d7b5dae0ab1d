"""Train the router's segment scorer (``tasks/route_model.json``) and report it on held-out contracts.

``python -m benchmarks.train_router [DATA_DIR] [--rate 0.42] [--out tasks/route_model.json]``

Data: the shared CUAD contracts (``DATA_DIR``, default ``../shared/data/cuad``): the annotators'
text files (``txt/``, cleaned like an extracted page) and their highlighted spans
(``labels/master_clauses.csv``). Split: a contract is *held out* when the SHA-1 of its label
``Filename`` is 0 modulo 3 (:func:`tasks.evaluate.held_out`), about a third; the scorer is trained on the rest
and every figure printed for "held-out" comes from contracts it never saw.

Model: logistic regression (full-batch Adagrad, L2 ``1e-4``, 300 passes, numpy) over the
features of :func:`tasks.route.segment_features`, keeping n-grams seen in at least 10 training
contracts; a segment is a positive when it overlaps the first occurrence of a labelled span.
The decision threshold is set on the *training* contracts so that the router as a whole
(vocabulary, preamble and scorer) sends ``--rate`` of their characters deep; recall cannot be
used for that, because on its own training data the scorer finds almost everything. Weights
smaller than 0.05 in absolute value are dropped from the stored file.

Prints one JSON line per granularity/threshold row (recall and rate on held-out contracts) and
writes the model. Deterministic: the same data gives the same file.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import Counter
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cuad"




def load(data_dir: Path) -> list[dict]:
    """Contracts as ``{filename, held_out, text, pieces: [(category, [(start, end), ...])]}``."""
    from tasks.evaluate import held_out, label_pieces, load_cuad, locate
    from tasks.textnorm import clean_page_text, match_form

    out = []
    for doc in load_cuad(data_dir):
        text = clean_page_text((data_dir / doc.txt_file).read_text(encoding="utf-8", errors="replace"))
        norm, offs = match_form(text)
        pieces = []
        for cat, spans in doc.spans.items():
            for piece in label_pieces(spans):
                hits = locate(norm, offs, piece)
                if hits:
                    pieces.append((cat.value, hits))
        out.append({"filename": doc.filename, "held_out": held_out(doc.filename), "text": text, "pieces": pieces})
    return out


def router_figures(docs: list[dict], flags: dict[str, list[bool]], segs: dict[str, list[tuple[int, int]]],
                   rate_only: bool = False) -> tuple[float, float]:
    """``(recall, rate)``: labelled spans wholly inside deep segments, and deep characters / all
    characters (recall is 0.0 with ``rate_only``)."""
    from tasks.evaluate import is_covered
    from tasks.route import covered_chars

    located = routed = deep = total = 0
    for d in docs:
        ranges = [s for s, f in zip(segs[d["filename"]], flags[d["filename"]]) if f]
        total += len(d["text"])
        deep += covered_chars(ranges)
        if rate_only:
            continue
        for _, hits in d["pieces"]:
            located += 1
            routed += any(is_covered(a, b, ranges) for a, b in hits)
    return (routed / located if located else 0.0), (deep / total if total else 0.0)


def main(argv: list[str] | None = None) -> int:
    """Train, choose the threshold, print held-out figures and write the model file."""
    import numpy as np

    from tasks.route import MODEL_FILE, ScorerModel, route_text, segment_features, segment_text

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--rate", type=float, default=0.43, help="routing rate to reach on the training contracts")
    ap.add_argument("--out", default=str(MODEL_FILE))
    ap.add_argument("--min-docs", type=int, default=10)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--passes", type=int, default=300)
    ap.add_argument("--weights", help="take the weights from this model file instead of training")
    args = ap.parse_args(argv)

    never = ScorerModel(threshold=float("inf"), weights={})  # preamble and obligation signals only
    docs = load(Path(args.data_dir))
    train = [d for d in docs if not d["held_out"]]
    test = [d for d in docs if d["held_out"]]
    segs, feats, labels, vocab_flag = {}, {}, {}, {}
    for d in docs:
        spans = segment_text(d["text"])
        segs[d["filename"]] = spans
        feats[d["filename"]] = segment_features(d["text"], spans)
        starts = [a for a, _ in spans]
        y = np.zeros(len(spans))
        for _, hits in d["pieces"]:
            a, b = hits[0]
            y[max(0, bisect.bisect_right(starts, a) - 1):bisect.bisect_left(starts, b)] = 1
        labels[d["filename"]] = y
        vocab_flag[d["filename"]] = [s.deep for s in route_text(d["text"], model=never)]

    if args.weights:  # reuse trained weights, only choose the threshold again
        weights = ScorerModel.model_validate_json(Path(args.weights).read_text()).weights
    else:
        weights = train_weights(np, train, feats, labels, args)
    model = ScorerModel(threshold=0.0, weights=weights)
    scores = {d["filename"]: [model.score(f) for f in feats[d["filename"]]] for d in docs}
    report(train, test, segs, vocab_flag, scores, weights, args)
    return 0


def train_weights(np, train: list[dict], feats: dict, labels: dict, args: argparse.Namespace) -> dict[str, float]:
    """Logistic-regression weights (see module docstring) over the training contracts."""
    df: Counter[str] = Counter()
    for d in train:
        df.update(set().union(*feats[d["filename"]]))
    vocab = {f: k for k, f in enumerate(sorted(f for f, c in df.items() if c >= args.min_docs))}
    idx, lens, ys = [], [], []
    for d in train:
        for f, y in zip(feats[d["filename"]], labels[d["filename"]]):
            ii = [vocab[x] for x in f if x in vocab]
            idx += ii
            lens.append(len(ii))
            ys.append(y)
    index, target = np.array(idx, dtype=np.int64), np.array(ys)
    rows = np.repeat(np.arange(len(lens)), lens)
    w, g2 = np.zeros(len(vocab)), np.full(len(vocab), 1e-8)
    for _ in range(args.passes):
        z = np.bincount(rows, weights=w[index], minlength=len(target))
        p = 1.0 / (1.0 + np.exp(-z))
        grad = np.bincount(index, weights=(p - target)[rows], minlength=len(vocab)) / len(target) + args.l2 * w
        g2 += grad ** 2
        w -= 0.2 * grad / np.sqrt(g2)
    return {f: round(float(w[k]), 3) for f, k in vocab.items() if abs(w[k]) >= 0.05 or f == "_bias"}


def report(train: list[dict], test: list[dict], segs: dict, vocab_flag: dict, scores: dict,
           weights: dict[str, float], args: argparse.Namespace) -> None:
    """Choose the threshold for the training rate, print held-out figures, write the model file."""
    from tasks.route import ScorerModel

    def flags_at(threshold: float, subset: list[dict]) -> dict[str, list[bool]]:
        return {d["filename"]: [v or s >= threshold for v, s in zip(vocab_flag[d["filename"]], scores[d["filename"]])]
                for d in subset}

    lo, hi = -12.0, 12.0  # rate falls as the threshold rises: bisect for the training rate
    for _ in range(20):
        mid = (lo + hi) / 2
        _, rate = router_figures(train, flags_at(mid, train), segs, rate_only=True)
        lo, hi = (mid, hi) if rate > args.rate else (lo, mid)
    threshold = round(hi, 3)

    vocab_only = {d["filename"]: vocab_flag[d["filename"]] for d in test}
    r, rate = router_figures(test, vocab_only, segs)
    print(json.dumps({"router": "preamble+obligations", "held_out_docs": len(test), "recall": round(r, 4),
                      "rate": round(rate, 4)}))
    for t in sorted({threshold - 1.0, threshold - 0.5, threshold, threshold + 0.5, threshold + 1.0}):
        r, rate = router_figures(test, flags_at(t, test), segs)
        tr, trate = router_figures(train, flags_at(t, train), segs)
        print(json.dumps({"router": "preamble+obligations+scorer", "threshold": round(t, 3), "chosen": t == threshold,
                          "held_out_recall": round(r, 4), "held_out_rate": round(rate, 4),
                          "train_recall": round(tr, 4), "train_rate": round(trate, 4)}))
        if t == threshold:
            held = {"recall": round(r, 4), "rate": round(rate, 4), "documents": len(test)}
    model = ScorerModel(threshold=threshold, weights=weights, held_out=held,
                        trained_on=f"{len(train)} shared CUAD contracts (txt), held out: SHA-1(Filename) % 3 == 0; "
                                   f"threshold for training rate {args.rate}")
    Path(args.out).write_text(json.dumps(model.model_dump(), sort_keys=True, separators=(",", ":")) + "\n",
                              encoding="utf-8")
    print(json.dumps({"model": args.out, "features": len(weights), "threshold": threshold}))


if __name__ == "__main__":
    sys.exit(main())
