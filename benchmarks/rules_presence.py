"""Rules-backend presence benchmark: CUAD document-level presence F1 without the full pipeline.

``python -m benchmarks.rules_presence [--split all|dev|held] [--jobs N] [--out FILE.json]
[--dump FILE.jsonl] [--limit N] [--table]`` prints one JSON line (``--table`` adds a
per-category table, lowest F1 first, on stderr).

Data: the shared CUAD contracts (``../shared/data/cuad``): the plain-text versions in ``txt/``
(the text the annotators labelled) and the labels in ``labels/master_clauses.csv``, paired
through ``manifest.csv`` by :func:`tasks.observe.evaluate.load_cuad`. Each text is cut into pseudo-pages
and cleaned like extracted text (:func:`benchmarks.factcheck.load_document`), chunked with
:func:`tasks.review.chunk.chunk_text` at the chunk budget and overlap the CUAD evaluation flow uses
(:func:`flows.eval.evaluate_cuad`: 1,500/200 characters) and every chunk is reviewed by
:class:`tasks.review.backends.rules.RulesBackend` (routing ``all``, as the flow does for ``rules``).
A document's predicted categories are those with at least one finding; scores come from
:func:`tasks.observe.evaluate.presence_scores` and :func:`tasks.observe.evaluate.macro_f1`, value accuracy from
:func:`tasks.observe.evaluate.value_correct` (first value in document order, as the flow reads it).

Splits (to keep rule development honest): ``dev`` is the contracts whose 0-based row index in
``manifest.csv`` is even, ``held`` those whose index is odd. Rules are studied on ``dev`` and
confirmed on ``held``. The result JSON holds the macro-F1 of all three (``macro_f1`` of
``dev``, ``held`` and ``all``) whatever ``--split`` selects for the per-category table.

What it does not cover: PDF text extraction (the flow reads the PDFs; the TXT files differ in
line breaks and spacing) and the fact-check (rules quotes are verbatim, so none is dropped).
Wall time is about a minute per core on the 340 shared contracts.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from flows.eval import VALUE_NAMES  # the value names the eval reads, per value category
from schemas.taxonomy import ClauseType
from tasks.observe.evaluate import (
    CATEGORIES,
    VALUE_CATEGORIES,
    LabelledDoc,
    load_cuad,
    macro_f1,
    presence_scores,
    value_correct,
)

#: Chunk budget and overlap (characters) of the CUAD evaluation flow (``flows.eval.evaluate_cuad``).
CHUNK_CHARS, OVERLAP_CHARS = 1500, 200

SPLITS = ("all", "dev", "held")


def default_data_dir() -> Path:
    """``../shared/data/cuad`` next to the checkout (else ``/work/shared/data/cuad``)."""
    here = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad"
    return here if here.is_dir() else Path("/work/shared/data/cuad")


def manifest_index(data_dir: Path) -> dict[str, int]:
    """``Filename`` → 0-based row index in ``manifest.csv`` (decides the dev/held split)."""
    with open(data_dir / "manifest.csv", newline="", encoding="utf-8") as fh:
        return {row["Filename"]: i for i, row in enumerate(csv.DictReader(fh))}


def split_of(index: int) -> str:
    """``"dev"`` for an even manifest index, ``"held"`` for an odd one."""
    return "dev" if index % 2 == 0 else "held"


def review_text(name: str, text: str) -> list[dict[str, Any]]:
    """Review one TXT contract with the rules backend.

    Returns the findings in document order as ``{category, chunk, page, evidence, values}``
    dicts (``values`` maps a value name to its values, in order). Never raises on odd text.
    """
    from benchmarks.factcheck import load_document
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.chunk import chunk_text

    document = load_document(name, text)
    backend = RulesBackend()
    out: list[dict[str, Any]] = []
    for chunk in chunk_text(document.sha256, document.text, document.page_starts(), CHUNK_CHARS, OVERLAP_CHARS):
        for f in backend.review_chunk(chunk, name).findings:
            values: dict[str, list[str]] = {}
            for v in f.values:
                values.setdefault(v.name, []).append(v.value)
            out.append(
                {
                    "category": f.clause_type.value,
                    "chunk": chunk.index,
                    "page": f.page,
                    "evidence": f.evidence,
                    "values": values,
                }
            )
    return out


def _review_file(args: tuple[str, str]) -> tuple[str, list[dict[str, Any]]]:
    filename, path = args
    return filename, review_text(filename, Path(path).read_text(encoding="utf-8", errors="replace"))


def _values(findings: list[dict[str, Any]]) -> dict[ClauseType, list[str]]:
    out: dict[ClauseType, list[str]] = {}
    for f in findings:
        cat = ClauseType(f["category"])
        for name in VALUE_NAMES.get(cat, ()):
            out.setdefault(cat, []).extend(f["values"].get(name, []))
    return out


def score(docs: list[LabelledDoc], findings: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Presence scores, macro-F1 and value accuracy of ``findings`` (by ``Filename``) over ``docs``.

    Returns ``{documents, macro_f1, per_category {name: {precision, recall, f1, support, tp, fp, fn}},
    value_accuracy {name: share or None}}``.
    """
    predicted = {d.filename: {ClauseType(f["category"]) for f in findings.get(d.filename, [])} for d in docs}
    scores = presence_scores(docs, predicted)
    values_ok = {c: [0, 0] for c in VALUE_CATEGORIES}
    for d in docs:
        vals = _values(findings.get(d.filename, []))
        for cat in VALUE_CATEGORIES:
            if d.answers.get(cat):
                values_ok[cat][1] += 1
                values_ok[cat][0] += value_correct(cat, d.answers[cat], vals.get(cat, []))
    return {
        "documents": len(docs),
        "macro_f1": macro_f1(scores),
        "per_category": {c.value: scores[c] for c in CATEGORIES},
        "value_accuracy": {c.value: (ok / n if n else None) for c, (ok, n) in values_ok.items()},
    }


def run(
    data_dir: Path, jobs: int = 1, limit: int | None = None
) -> tuple[list[LabelledDoc], dict[str, int], dict[str, list[dict[str, Any]]], float]:
    """Review the labelled TXT contracts of ``data_dir``; returns ``(docs, split index, findings, wall_s)``."""
    docs = load_cuad(data_dir, limit)
    index = manifest_index(data_dir)
    work = [(d.filename, str(data_dir / d.txt_file)) for d in docs]
    started = time.perf_counter()
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            findings = dict(pool.map(_review_file, work, chunksize=4))
    else:
        findings = dict(map(_review_file, work))
    return docs, index, findings, time.perf_counter() - started


def format_table(result: dict[str, Any]) -> str:
    """Per-category table (lowest F1 first): precision, recall, F1, support, value accuracy."""
    lines = [f"{'category':36} {'P':>5} {'R':>5} {'F1':>6} {'supp':>5} {'TP':>4} {'FP':>4} {'FN':>4} {'value':>6}"]
    for name, s in sorted(result["per_category"].items(), key=lambda kv: (kv[1]["f1"], kv[0])):
        va = result["value_accuracy"].get(name)
        lines.append(
            f"{name:36} {s['precision']:5.2f} {s['recall']:5.2f} {s['f1']:6.3f} {s['support']:5d} "
            f"{s['tp']:4d} {s['fp']:4d} {s['fn']:4d} {'' if va is None else f'{va:6.2f}':>6}"
        )
    lines.append(f"macro-F1 {result['macro_f1']:.4f} over {result['documents']} contracts")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the result as one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir(), help="CUAD-layout folder")
    ap.add_argument("--split", choices=SPLITS, default="all", help="contracts of the per-category scores")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--limit", type=int, default=None, help="first N label rows only")
    ap.add_argument("--out", type=Path, help="write the full result as JSON here")
    ap.add_argument("--dump", type=Path, help="write every document's findings here (JSON lines)")
    ap.add_argument("--table", action="store_true", help="print the per-category table on stderr")
    args = ap.parse_args(argv)
    if not (args.data / "txt").is_dir():
        print(json.dumps({"benchmark": "rules_presence", "skipped": f"{args.data / 'txt'} not found"}))
        return 0
    docs, index, findings, wall = run(args.data, args.jobs, args.limit)
    by_split = {
        "all": docs,
        "dev": [d for d in docs if split_of(index[d.filename]) == "dev"],
        "held": [d for d in docs if split_of(index[d.filename]) == "held"],
    }
    results = {name: score(subset, findings) for name, subset in by_split.items()}
    chosen = results[args.split]
    from tasks.review.backends.rules import RULES_VERSION

    out = {
        "benchmark": "rules_presence",
        "rules_version": RULES_VERSION,
        "split": args.split,
        "documents": chosen["documents"],
        "chunk_chars": CHUNK_CHARS,
        "overlap_chars": OVERLAP_CHARS,
        "macro_f1": {name: round(r["macro_f1"], 4) for name, r in results.items()},
        "wall_s": round(wall, 1),
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {**out, "per_category": chosen["per_category"], "value_accuracy": chosen["value_accuracy"]}, indent=2
            ),
            encoding="utf-8",
        )
    if args.dump:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        with open(args.dump, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(
                    json.dumps(
                        {
                            "filename": d.filename,
                            "txt_file": d.txt_file,
                            "split": split_of(index[d.filename]),
                            "findings": findings[d.filename],
                        }
                    )
                    + "\n"
                )
    if args.table:
        print(format_table(chosen), file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
