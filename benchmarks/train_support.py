"""Train the fact-check's support model (``tasks/check/support_model.npz.xz``) and report it on the test split.

``python -m benchmarks.train_support [DATA_DIR] [--out tasks/check/support_model.npz.xz] [--C 4] [--min-df 3]``
(needs the ``bench`` extra: numpy, scipy and scikit-learn; about 12 minutes on two shared cores at load
average 10, most of it the rules backend over the 340 contracts — ``--cache`` keeps that part for reruns).

Data: the shared CUAD contracts (``DATA_DIR``, default ``../shared/data/cuad``): the annotators'
TXT files, cleaned like an extracted page, and their highlighted spans
(``labels/master_clauses.csv``, each ``<omitted>`` piece separately). Split: the frozen test split
(:func:`tasks.observe.evaluate.split_of`: a seeded SHA-256 of the label ``Filename``, 75 of 340, the
eval's and the router's split); the model is trained on the other 265 and every ``test`` figure comes
from contracts it never saw. Thresholds, floors and bounds are chosen out-of-fold on the training
contracts only; the ``test`` lines are printed for the record, never to choose anything.

Examples (training contracts only):

- each labelled piece, and the sentence(s) around its first occurrence (sentences of
  :func:`tasks.review.backends.rules.split_sentences`, at most 600 characters), as its category;
- up to 60 sentences per contract that overlap no labelled piece, as ``none``;
- every quote of the offline rules backend (:class:`tasks.review.backends.rules.RulesBackend`,
  4,000/600-character chunks): as each category whose labelled piece it overlaps
  (:func:`tasks.observe.evaluate.evidence_overlaps`), or as ``none`` when it overlaps no
  labelled piece of any category — so the model also learns what wrong quotes look like.

Each example carries the section heading path above it (:func:`tasks.review.chunk.heading_path` over
the chunker's heading lines of the contract's text, the same code the fact-check reads at run time;
for a rules quote, :meth:`tasks.check.index.DocumentIndex.heading_path` at its first occurrence).

Model: multinomial logistic regression (scikit-learn ``LogisticRegression``, lbfgs, ``C``) over
sublinear tf-idf of :func:`tasks.check.support.features` (word unigrams and bigrams of the quote and,
``h:``-prefixed, of its heading path — ``--no-heading``: the quote alone, support-v1 — seen in at least
``--min-df`` training examples; smoothed idf ``ln((1 + n) / (1 + df)) + 1``; unit length).
Weights with absolute value below ``--prune`` are dropped from the stored file.

Threshold: the least support score (probability of the claimed category) chosen on
*out-of-fold* scores of the training contracts' rules findings (three folds by contract): the
lowest threshold at which at least ``--precision`` of the supported findings overlap a labelled
span of their category. The dismissal bound (:func:`choose_dismissal`): the largest support score
below which at least ``--dismiss-precision`` (0.9) of the doubted out-of-fold findings are no labelled
clause of their category; per category (:func:`choose_category_dismissal`) a higher bound of its own
where at least that share of the category's doubted findings below it (15 or more) are no clause of it.
Prints one JSON line per threshold and per dismissal bound on the test
split's contracts (supported findings, their overlap precision, presence macro-F1 over supported findings;
dismissed findings and the share not real) and writes the model.
Deterministic: the same data gives the same file.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cuad"
if not DEFAULT_DATA.is_dir():
    DEFAULT_DATA = Path("/work/shared/data/cuad")

#: Longest sentence context of a labelled piece used as an example, characters.
CONTEXT_CHARS = 600
#: Unlabelled sentences per training contract used as ``none`` examples.
NONE_PER_DOC = 60


def rules_findings(name: str, text: str) -> tuple[list, list[str | None]]:
    """The offline backend's findings for one contract (deduplicated by category and quote), and the
    section heading path of each quote in the document, as the fact-check reads it at run time
    (:meth:`tasks.check.index.DocumentIndex.heading_path` at the quote's first occurrence)."""
    from benchmarks.factcheck import load_document
    from tasks.check.index import DocumentIndex
    from tasks.observe.evaluate import locate
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.chunk import chunk_text
    from tasks.textnorm import match_form

    document = load_document(name, text)
    index = DocumentIndex.build(document)
    backend = RulesBackend()
    seen, out = set(), []
    for chunk in chunk_text(document.sha256, document.text, document.page_starts()):
        for f in backend.review_chunk(chunk, name).findings:
            key = (f.clause_type, match_form(f.evidence)[0])
            if key not in seen:
                seen.add(key)
                out.append(f)
    headings = []
    for f in out:
        hits = locate(index.norm, index.offsets, f.evidence, max_hits=1)
        headings.append(index.heading_path(hits[0][0]) if hits else None)
    return out, headings


def load(data_dir: Path) -> list[dict]:
    """Contracts as ``{filename, split, doc (LabelledDoc), examples: [(text, heading, class)], findings,
    headings}`` (``headings``: the section heading path of each finding's quote, None when unknown; an
    example's heading is the path at its start, :func:`tasks.review.chunk.heading_path` over the
    chunker's headings of the contract's text, as the fact-check reads it at run time)."""
    from tasks.observe.evaluate import CATEGORIES, evidence_overlaps, label_pieces, load_cuad, locate, split_of
    from tasks.review.backends.rules import split_sentences
    from tasks.review.chunk import heading_path, section_headings
    from tasks.textnorm import clean_page_text, match_form

    rng = random.Random(20240601)
    out = []
    for doc in load_cuad(data_dir):
        raw = (data_dir / doc.txt_file).read_text(encoding="utf-8", errors="replace")
        text = clean_page_text(raw)
        norm, offs = match_form(text)
        sents = split_sentences(text)
        heads = section_headings(text)

        def head(pos: int, heads: list[tuple[int, str]] = heads) -> str | None:
            return heading_path(heads, pos) or None

        examples: list[tuple[str, str | None, str]] = []
        covered: list[tuple[int, int]] = []
        for cat in CATEGORIES:
            for piece in label_pieces(doc.spans.get(cat, [])):
                hits = locate(norm, offs, piece, max_hits=1)
                examples.append((piece, head(hits[0][0]) if hits else None, cat.value))
                if not hits:
                    continue
                a, b = hits[0]
                covered.append((a, b))
                around = [(s, e) for s, e in sents if e > a and s < b]
                if around:
                    s, e = around[0][0], around[-1][1]
                    if e - s <= CONTEXT_CHARS and (s, e) != (a, b):
                        examples.append((text[s:e], head(s), cat.value))
        free = [(s, e) for s, e in sents if e - s >= 30 and not any(e > a and s < b for a, b in covered)]
        rng.shuffle(free)
        examples.extend((text[s:e][:CONTEXT_CHARS], head(s), "none") for s, e in free[:NONE_PER_DOC])
        findings, headings = rules_findings(doc.filename, raw)
        for f, h in zip(findings, headings):
            cats = [c for c in CATEGORIES if evidence_overlaps(f.evidence, doc.spans.get(c, []))]
            examples.extend((f.evidence, h, c.value) for c in cats)
            if not cats:
                examples.append((f.evidence, h, "none"))
        out.append(
            {
                "filename": doc.filename,
                "split": split_of(doc.filename),
                "doc": doc,
                "examples": examples,
                "findings": findings,
                "headings": headings,
            }
        )
    return out


def doc_to_json(doc: Any) -> dict[str, Any]:
    """A :class:`tasks.observe.evaluate.LabelledDoc` as JSON-safe values (categories by their values)."""
    return {
        "filename": doc.filename,
        "pdf_file": doc.pdf_file,
        "txt_file": doc.txt_file,
        "answers": {c.value: a for c, a in doc.answers.items()},
        "spans": {c.value: list(s) for c, s in doc.spans.items()},
    }


def doc_from_json(data: dict[str, Any]) -> Any:
    """The :class:`tasks.observe.evaluate.LabelledDoc` :func:`doc_to_json` wrote."""
    from schemas.taxonomy import ClauseType
    from tasks.observe.evaluate import LabelledDoc

    return LabelledDoc(
        filename=data["filename"],
        pdf_file=data["pdf_file"],
        txt_file=data["txt_file"],
        answers={ClauseType(c): a for c, a in data["answers"].items()},
        spans={ClauseType(c): list(s) for c, s in data["spans"].items()},
    )


def load_examples(data_dir: Path, cache: Path | None = None) -> list[dict]:
    """:func:`load`, read from ``cache`` (JSON, a format that executes nothing when read) when that file
    exists, else written to it when given. Raises ``ValueError`` for a cache that is not this JSON (an older
    pickle cache is never loaded: delete it and the next run writes the JSON)."""
    from schemas.findings import Finding

    if cache is not None and cache.is_file():
        try:
            stored = json.loads(cache.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ValueError(f"{cache} is not a JSON cache of loaded examples (delete it to rebuild it)") from None
        return [
            {
                **d,
                "doc": doc_from_json(d["doc"]),
                "examples": [tuple(e) for e in d["examples"]],
                "findings": [Finding.model_validate(f) for f in d["findings"]],
            }
            for d in stored
        ]
    docs = load(data_dir)
    if cache is not None:
        rows = [
            {
                **d,
                "doc": doc_to_json(d["doc"]),
                "examples": [list(e) for e in d["examples"]],
                "findings": [f.model_dump(mode="json") for f in d["findings"]],
            }
            for d in docs
        ]
        cache.write_text(json.dumps(rows), encoding="utf-8")
    return docs


#: A function giving the terms of a (quote, heading path): :func:`tasks.check.support.features`.
Features = Callable[[str, "str | None"], Counter]


def vocabulary(subset: list[dict], feats: Features, min_df: int) -> dict[str, float]:
    """Smoothed idf (``ln((1 + n) / (1 + df)) + 1``) of each term in at least ``min_df`` of the examples
    of the contracts ``subset`` (:func:`load`), in sorted term order."""
    df: Counter = Counter()
    n = 0
    for d in subset:
        for text, heading, _ in d["examples"]:
            df.update(feats(text, heading).keys())
            n += 1
    kept = sorted(t for t, k in df.items() if k >= min_df)
    return {t: math.log((1 + n) / (1 + df[t])) + 1 for t in kept}


def tfidf_matrix(
    texts: list[tuple[str, str | None]], idf: dict[str, float], index: dict[str, int], feats: Features
) -> Any:
    """Rows of sublinear tf-idf (``(1 + ln tf) * idf``, unit length) of (quote, heading path) pairs over
    the terms of ``idf``, columns by ``index``: a SciPy CSR matrix, ``len(texts)`` × ``len(index)``."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for r, (text, heading) in enumerate(texts):
        vec = {index[t]: (1 + math.log(n)) * idf[t] for t, n in feats(text, heading).items() if t in idf}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        for c, v in vec.items():
            rows.append(r)
            cols.append(c)
            vals.append(v / norm)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), len(index)))


#: Candidate thresholds for any finding (``threshold``) and floors for a document's strongest finding
#: of a category (``category_floor``), searched on out-of-fold scores.
THRESHOLD_GRID = (0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
FLOOR_GRID = (0.0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


#: A category's floor is searched only when at least this many training contracts are labelled with it;
#: below that, one contract decides the floor (and it did: a floor chosen on the one labelled
#: Unlimited/All-You-Can-Eat-License contract removed every such finding from the held-out ones).
MIN_LABELLED_CONTRACTS = 10


def choose_floors(
    records: list[dict],
    docs: list,
    max_f1_drop: float = 0.01,
    min_documents: int = MIN_LABELLED_CONTRACTS,
    thresholds: tuple[float, ...] = THRESHOLD_GRID,
    floors: tuple[float, ...] = FLOOR_GRID,
) -> dict:
    """Choose the support rule's ``threshold`` and per-category ``category_floor`` on scored findings.

    ``records``: one per finding, ``{doc (filename), cat (ClauseType), score (0..1), overlap (bool),
    flagged (bool: heading only or negation)}``; ``docs``: the labelled documents they come from. A
    finding counts as supported when it is not flagged and its score is at least ``threshold``, or
    it is the strongest finding of its category in its document and its score is at least the
    category's floor (:func:`tasks.check.support.relative_support`). For each threshold, floors are
    raised greedily, the step that buys the most evidence overlap per point of presence macro-F1
    first, while macro-F1 stays within ``max_f1_drop`` of every finding counted; a category labelled
    in fewer than ``min_documents`` of ``docs`` keeps floor 0 (its strongest passage is always
    supported). The threshold whose rule ends with the highest overlap wins. Returns ``{threshold, category_floor: {category value:
    floor}, overlap_precision, presence_macro_f1, presence_macro_f1_all}``.
    """
    from tasks.observe.evaluate import CATEGORIES, prf

    best: dict[tuple[str, object], float] = {}
    for r in records:
        if not r["flagged"]:
            key = (r["doc"], r["cat"])
            best[key] = max(best.get(key, 0.0), r["score"])
    present = {(d.filename, c) for d in docs for c in CATEGORIES if d.present(c)}
    gold = Counter(c for _, c in present)

    def table(threshold: float, cat: object, floor: float | None) -> tuple[int, int, int, int, int]:
        """(kept, overlapping, tp, fp, fn) of one category; ``floor=None``: every finding counts."""
        kept = hits = 0
        found = set()
        for r in by_cat.get(cat, []):
            ok = not r["flagged"] and (
                floor is None
                or r["score"] >= threshold
                or (r["score"] >= floor and r["score"] == best[(r["doc"], cat)])
            )
            if ok:
                kept += 1
                hits += r["overlap"]
                found.add(r["doc"])
        tp = sum((d, cat) in present for d in found)
        return kept, hits, tp, len(found) - tp, gold[cat] - tp

    def macro(rows: dict) -> float:
        f1s = [prf(tp, fp, fn)[2] for (_, _, tp, fp, fn) in rows.values() if tp + fp + fn]
        return sum(f1s) / len(f1s) if f1s else 0.0

    by_cat: dict[object, list[dict]] = {}
    for r in records:
        by_cat.setdefault(r["cat"], []).append(r)
    cats = list(CATEGORIES)
    reference = macro({c: table(0.0, c, None) for c in cats})
    outcome = None
    for threshold in thresholds:
        tables = {c: {f: table(threshold, c, f) for f in floors} for c in cats}
        chosen = dict.fromkeys(cats, floors[0])
        rows = {c: tables[c][chosen[c]] for c in cats}

        def overlap(rows: dict) -> float:
            kept = sum(r[0] for r in rows.values())
            return sum(r[1] for r in rows.values()) / kept if kept else 0.0

        while True:
            now_ov, now_f1 = overlap(rows), macro(rows)
            step = None
            for c in cats:
                if gold[c] < min_documents:
                    continue
                for f in floors:
                    if f <= chosen[c]:
                        continue
                    trial = {**rows, c: tables[c][f]}
                    ov, f1 = overlap(trial), macro(trial)
                    if ov <= now_ov or reference - f1 > max_f1_drop:
                        continue
                    gain = (ov - now_ov) / (max(0.0, now_f1 - f1) + 1e-4)
                    if step is None or gain > step[0]:
                        step = (gain, c, f)
            if step is None:
                break
            chosen[step[1]] = step[2]
            rows[step[1]] = tables[step[1]][step[2]]
        result = {
            "threshold": threshold,
            "category_floor": {c.value: f for c, f in chosen.items()},
            "overlap_precision": round(overlap(rows), 4),
            "presence_macro_f1": round(macro(rows), 4),
            "presence_macro_f1_all": round(reference, 4),
        }
        print(
            json.dumps({"out_of_fold": True, **{k: v for k, v in result.items() if k != "category_floor"}}), flush=True
        )
        if outcome is None or result["overlap_precision"] > outcome["overlap_precision"]:
            outcome = result
    return outcome


#: Candidate dismissal bounds (support score below which a doubted finding is dismissed), searched on
#: out-of-fold scores.
DISMISS_GRID = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1)
#: A dismissal bound must dismiss at least this many out-of-fold findings (a precision on fewer says little).
MIN_DISMISSED = 30


def supported_by_rule(records: list[dict], rule: dict) -> list[bool]:
    """Per record (as :func:`choose_floors` takes them), whether the support rule ``rule``
    (``{threshold, category_floor}``) supports it: not flagged, and a score of at least the threshold, or
    the strongest of its category in its document with at least the category's floor."""
    best: dict[tuple[str, object], float] = {}
    for r in records:
        if not r["flagged"]:
            key = (r["doc"], r["cat"])
            best[key] = max(best.get(key, 0.0), r["score"])
    out = []
    for r in records:
        floor = rule["category_floor"].get(getattr(r["cat"], "value", r["cat"]))
        out.append(
            not r["flagged"]
            and (
                r["score"] >= rule["threshold"]
                or (floor is not None and r["score"] >= floor and r["score"] == best[(r["doc"], r["cat"])])
            )
        )
    return out


def dismissal_rows(records: list[dict], rule: dict, grid: tuple[float, ...] = DISMISS_GRID) -> list[dict]:
    """For each bound of ``grid``: the findings the support check doubts on the model's score (not
    flagged, not supported by ``rule``) with a score below it — ``{bound, dismissed, not_real (share that
    overlaps no labelled span of its category), real_lost (overlapping ones dismissed)}``."""
    ok = supported_by_rule(records, rule)
    doubted = [r for r, s in zip(records, ok) if not s and not r["flagged"]]
    rows = []
    for bound in grid:
        out = [r for r in doubted if r["score"] < bound]
        real = sum(bool(r["overlap"]) for r in out)
        rows.append(
            {
                "bound": bound,
                "doubted": len(doubted),
                "dismissed": len(out),
                "not_real": round(1 - real / len(out), 4) if out else None,
                "real_lost": real,
            }
        )
    return rows


def choose_dismissal(
    records: list[dict], rule: dict, precision: float = 0.9, min_dismissed: int = MIN_DISMISSED
) -> float:
    """The largest bound of :data:`DISMISS_GRID` at which at least ``precision`` of the dismissed
    out-of-fold findings are no labelled clause of their category and at least ``min_dismissed`` are
    dismissed (:func:`dismissal_rows`); 0.0 (dismiss none) when no bound qualifies."""
    chosen = 0.0
    for row in dismissal_rows(records, rule):
        print(json.dumps({"out_of_fold_dismissal": True, **row}), flush=True)
        if row["dismissed"] >= min_dismissed and row["not_real"] is not None and row["not_real"] >= precision:
            chosen = row["bound"]
    return chosen


#: Candidate per-category dismissal bounds (above the global one), searched on out-of-fold scores.
CATEGORY_DISMISS_GRID = (0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)
#: A category's own dismissal bound must dismiss at least this many of its out-of-fold findings.
MIN_CATEGORY_DISMISSED = 15


def choose_category_dismissal(
    records: list[dict],
    rule: dict,
    floor: float,
    precision: float = 0.9,
    min_dismissed: int = MIN_CATEGORY_DISMISSED,
    grid: tuple[float, ...] = CATEGORY_DISMISS_GRID,
) -> dict[str, float]:
    """Per category (value), the largest bound of ``grid`` above ``floor`` (the global dismissal bound)
    at which at least ``precision`` of the category's doubted out-of-fold findings (as
    :func:`dismissal_rows` takes them) scored below it are no labelled clause of the category, and at
    least ``min_dismissed`` are dismissed. Categories with no such bound are absent (the global one
    applies). The doubted findings of a category differ in how well the model separates them: most of
    Revenue/Profit Sharing's are keyword hits that are no clause, most of License Grant's are real."""
    ok = supported_by_rule(records, rule)
    by_cat: dict[str, list[dict]] = {}
    for r, s in zip(records, ok):
        if not s and not r["flagged"]:
            by_cat.setdefault(getattr(r["cat"], "value", r["cat"]), []).append(r)
    chosen: dict[str, float] = {}
    for cat, doubted in sorted(by_cat.items()):
        for bound in grid:
            out = [r for r in doubted if r["score"] < bound]
            real = sum(bool(r["overlap"]) for r in out)
            if bound > floor and len(out) >= min_dismissed and 1 - real / len(out) >= precision:
                chosen[cat] = bound
    return chosen


def category_dismissal_row(records: list[dict], rule: dict, floor: float, bounds: dict[str, float]) -> dict:
    """The doubted findings (as :func:`dismissal_rows` takes them) dismissed below ``floor`` or their
    category's bound in ``bounds``: ``{doubted, dismissed, not_real, real_lost}``."""
    ok = supported_by_rule(records, rule)
    doubted = [r for r, s in zip(records, ok) if not s and not r["flagged"]]
    out = [r for r in doubted if r["score"] < max(floor, bounds.get(getattr(r["cat"], "value", r["cat"]), 0.0))]
    real = sum(bool(r["overlap"]) for r in out)
    return {
        "doubted": len(doubted),
        "dismissed": len(out),
        "not_real": round(1 - real / len(out), 4) if out else None,
        "real_lost": real,
    }


#: Support bands of :func:`first_screen_rows` (the report's first-screen floor is the first band's top).
FIRST_SCREEN_BANDS = ((0.0, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 1.01))


def first_screen_rows(records: list[dict], rule: dict, bands: tuple = FIRST_SCREEN_BANDS) -> list[dict]:
    """How often the passage that puts a category's question on the report's first screen is a real
    clause, by its support score: per (document, category) that no finding supported by ``rule``
    shows present, the doubted, unflagged finding of highest score; per band ``[low, high)`` of that
    score ``{low, high, passages, real}`` (``real``: share whose quote is a labelled clause of the
    category, None without passages). The evidence for ``tasks.observe.report.FIRST_SCREEN_SUPPORT``."""
    ok = supported_by_rule(records, rule)
    shown = {(r["doc"], r["cat"]) for r, s in zip(records, ok) if s}
    strongest: dict[tuple[str, object], dict] = {}
    for r, s in zip(records, ok):
        key = (r["doc"], r["cat"])
        if s or r["flagged"] or key in shown:
            continue
        if key not in strongest or r["score"] > strongest[key]["score"]:
            strongest[key] = r
    rows = []
    for low, high in bands:
        band = [bool(r["overlap"]) for r in strongest.values() if low <= r["score"] < high]
        rows.append(
            {"low": low, "high": high, "passages": len(band), "real": round(sum(band) / len(band), 4) if band else None}
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Train, choose the threshold, print the test split's figures and write the model file."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from tasks.check.support import (
        MODEL_FILE,
        NAME_CATEGORIES,
        NONE_CLASS,
        SupportModel,
        features,
        heading_only,
        negation,
    )
    from tasks.observe.evaluate import CATEGORIES, evidence_overlaps, macro_f1, presence_scores, split_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default=str(MODEL_FILE))
    ap.add_argument("--C", type=float, default=4.0, help="inverse L2 regularisation strength")
    ap.add_argument("--min-df", type=int, default=3)
    ap.add_argument("--prune", type=float, default=0.02, help="stored weights below this (absolute) are dropped")
    ap.add_argument(
        "--precision",
        type=float,
        default=0.88,
        help="overlap precision of the single-threshold rule printed for comparison (oof_threshold)",
    )
    ap.add_argument(
        "--oof-records",
        type=Path,
        default=None,
        help="write the out-of-fold records (score, overlap, flagged per finding) here, as JSON",
    )
    ap.add_argument(
        "--max-f1-drop",
        type=float,
        default=0.01,
        help="presence macro-F1 the per-category floors may cost on out-of-fold scores",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="JSON cache of the loaded examples and rules findings (written when absent, read when present)",
    )
    ap.add_argument(
        "--no-heading",
        action="store_true",
        help="the quote alone (support-v1), without its section headings, for comparison",
    )
    ap.add_argument(
        "--dismiss-precision",
        type=float,
        default=0.9,
        help="least out-of-fold share of dismissed findings that are no labelled clause of their category",
    )
    args = ap.parse_args(argv)
    reads_heading = not args.no_heading

    def feats(text: str, heading: str | None) -> Counter:
        return features(text, heading if reads_heading else None)

    docs = load_examples(Path(args.data_dir), args.cache)
    train = [d for d in docs if split_of(d["filename"]) == "train"]
    test = [d for d in docs if split_of(d["filename"]) == "test"]
    classes = [c.value for c in CATEGORIES] + [NONE_CLASS]
    cls_index = {c: i for i, c in enumerate(classes)}

    def vocab_of(subset):
        return vocabulary(subset, feats, args.min_df)

    def matrix(texts, idf, index):
        return tfidf_matrix(texts, idf, index, feats)

    def fit(subset):
        idf = vocab_of(subset)
        index = {t: i for i, t in enumerate(idf)}
        texts = [(t, h) for d in subset for t, h, _ in d["examples"]]
        y = np.array([cls_index[c] for d in subset for _, _, c in d["examples"]])
        clf = LogisticRegression(C=args.C, max_iter=300, tol=1e-3).fit(matrix(texts, idf, index), y)
        return clf, idf, index

    def to_model(clf, idf, index, prune):
        coef = clf.coef_
        stored = {}
        for t, i in index.items():
            ws = [(k, round(float(coef[k, i]), 3)) for k in range(len(clf.classes_)) if abs(coef[k, i]) >= prune]
            if ws:
                stored[t] = (round(idf[t], 4), [(int(clf.classes_[k]), w) for k, w in ws])
        bias = [0.0] * len(classes)
        for k, c in enumerate(clf.classes_):
            bias[int(c)] = round(float(clf.intercept_[k]), 4)
        return SupportModel(
            classes=classes,
            bias=bias,
            terms=stored,
            reads_heading=reads_heading,
            version="support-v2" if reads_heading else "support-v1",
        )

    # out-of-fold support scores of the training contracts' rules findings (3 folds by contract)
    folds = [train[k::3] for k in range(3)]
    oof: list[tuple[float, bool, bool]] = []  # (score, overlaps, rule_flagged)
    records: list[dict] = []  # the same, per finding, for the per-category floors
    for k in range(3):
        rest = [d for j, fold in enumerate(folds) if j != k for d in fold]
        m = to_model(*fit(rest), prune=0.0)
        for d in folds[k]:
            for f, h in zip(d["findings"], d["headings"]):
                p = m.probabilities(f.evidence, h)[f.clause_type.value] if f.clause_type.value in cls_index else 1.0
                flagged = (f.clause_type not in NAME_CATEGORIES and heading_only(f.evidence)) or bool(
                    negation(f.evidence, f.clause_type)
                )
                oof.append((p, evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, [])), flagged))
                records.append(
                    {"doc": d["filename"], "cat": f.clause_type, "score": p, "overlap": oof[-1][1], "flagged": flagged}
                )
    threshold = 1.0
    for t in sorted({round(s, 3) for s, _, _ in oof}):
        kept = [o for s, o, fl in oof if s >= t and not fl]
        if kept and sum(kept) / len(kept) >= args.precision:
            threshold = t
            break

    if args.oof_records is not None:
        docs_json = [doc_to_json(d["doc"]) for d in train]
        args.oof_records.write_text(json.dumps({"records": records, "docs": docs_json}, default=str), encoding="utf-8")
    rule = choose_floors(records, [d["doc"] for d in train], max_f1_drop=args.max_f1_drop)
    print(json.dumps({"out_of_fold_chosen": True, **rule}), flush=True)
    dismiss_below = choose_dismissal(records, rule, args.dismiss_precision)
    print(json.dumps({"out_of_fold_dismiss_below": dismiss_below}), flush=True)
    category_dismiss = choose_category_dismissal(records, rule, dismiss_below, args.dismiss_precision)
    print(json.dumps({"out_of_fold_category_dismiss_below": category_dismiss}), flush=True)
    row = category_dismissal_row(records, rule, dismiss_below, category_dismiss)
    print(json.dumps({"out_of_fold_category_dismissal": True, **row}), flush=True)
    for row in first_screen_rows(records, rule):
        print(json.dumps({"out_of_fold_first_screen": True, **row}), flush=True)

    clf, idf, index = fit(train)
    model = to_model(clf, idf, index, args.prune)
    # The stored, pruned model (weights rounded to 3 decimals): check it agrees with the fitted one.
    sample = [(t, h) for d in train[:20] for t, h, _ in d["examples"]][:1500]
    full = clf.predict_proba(matrix(sample, idf, index))
    drift = max(
        abs(full[r, k] - model.probabilities(*text)[classes[int(c)]])
        for r, text in enumerate(sample)
        for k, c in enumerate(clf.classes_)
    )
    print(
        json.dumps(
            {
                "examples_train": sum(len(d["examples"]) for d in train),
                "terms": model.vocabulary_size,
                "oof_threshold": threshold,
                "pruned_drift_max": round(float(drift), 4),
            }
        ),
        flush=True,
    )

    scored = {}  # (contract, finding position) -> (score, flagged)
    strongest: dict[tuple[str, object], float] = {}
    for d in test:
        for i, f in enumerate(d["findings"]):
            p = model.probabilities(f.evidence, d["headings"][i]).get(f.clause_type.value, 1.0)
            flagged = (f.clause_type not in NAME_CATEGORIES and heading_only(f.evidence)) or bool(
                negation(f.evidence, f.clause_type)
            )
            scored[(d["filename"], i)] = (p, flagged)
            if not flagged:
                key = (d["filename"], f.clause_type)
                strongest[key] = max(strongest.get(key, 0.0), p)

    def test_row(t: float, floors: dict[str, float] | None = None) -> dict:
        kept = hits = total = 0
        predicted_all: dict[str, set] = {}
        predicted: dict[str, set] = {}
        for d in test:
            for i, f in enumerate(d["findings"]):
                total += 1
                predicted_all.setdefault(d["filename"], set()).add(f.clause_type)
                p, flagged = scored[(d["filename"], i)]
                floor = None if floors is None else floors.get(f.clause_type.value, 0.0)
                relative = floor is not None and p >= floor and p == strongest.get((d["filename"], f.clause_type))
                if (p >= t or relative) and not flagged:
                    kept += 1
                    hits += evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, []))
                    predicted.setdefault(d["filename"], set()).add(f.clause_type)
        labelled = [d["doc"] for d in test]
        return {
            "threshold": t,
            "floors": floors is not None,
            "findings": total,
            "supported": kept,
            "overlap_precision": round(hits / kept, 4) if kept else None,
            "presence_macro_f1": round(macro_f1(presence_scores(labelled, predicted)), 4),
            "presence_macro_f1_all_findings": round(macro_f1(presence_scores(labelled, predicted_all)), 4),
        }

    for t in sorted({0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, threshold}):
        print(json.dumps({"test": True, **test_row(t), "chosen": False}), flush=True)
    chosen = test_row(rule["threshold"], rule["category_floor"])
    print(json.dumps({"test": True, **chosen, "chosen": True}), flush=True)
    test_records = [
        {
            "doc": d["filename"],
            "cat": f.clause_type,
            "score": scored[(d["filename"], i)][0],
            "flagged": scored[(d["filename"], i)][1],
            "overlap": evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, [])),
        }
        for d in test
        for i, f in enumerate(d["findings"])
    ]
    for row in dismissal_rows(test_records, rule):
        print(json.dumps({"test_dismissal": True, **row, "chosen": row["bound"] == dismiss_below}), flush=True)
    row = category_dismissal_row(test_records, rule, dismiss_below, category_dismiss)
    print(json.dumps({"test_category_dismissal": True, **row}), flush=True)
    model.threshold = rule["threshold"]
    model.category_floor = rule["category_floor"]
    model.dismiss_below = dismiss_below
    model.category_dismiss_below = category_dismiss
    model.trained_on = (
        f"the {len(train)} shared CUAD contracts of the training split (TXT files), "
        f"C={args.C}, min_df={args.min_df}, prune={args.prune}, "
        f"{'quote and section headings' if reads_heading else 'quote alone'}"
    )
    model.held_out = {
        "documents": float(len(test)),
        "overlap_precision": chosen["overlap_precision"] or 0.0,
        "presence_macro_f1": chosen["presence_macro_f1"],
    }
    print(json.dumps({"model": args.out, "bytes": model.save(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
