"""What "verified" is worth on the test split's CUAD contracts: evidence overlap and presence of verified findings.

``python -m benchmarks.verified_overlap [--docs N]`` prints one JSON line with, for the fact-check
without and with the support check (``before``/``after``): findings, verified findings, the share
of verified findings whose quote overlaps a lawyer-labelled span of their category
(:func:`tasks.observe.evaluate.evidence_overlaps`), and document-level presence macro-F1 when a
category counts as found only through a verified finding (:func:`tasks.observe.evaluate.macro_f1`).

Data: the frozen test split of the shared CUAD contracts (:func:`tasks.observe.evaluate.split_of`,
75 of 340; no shipped model saw them), the annotators'
TXT files cut into pseudo-pages and chunked at 4,000/600 characters as in
:mod:`benchmarks.factcheck`, reviewed by the offline rules backend, every finding fact-checked in
its chunk with its neighbours, then the support check's document-level part
(:func:`tasks.check.support.relative_support`) over each contract's findings. Consistency (a
document-level check of stated values) is not run here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path


def run(n_docs: int | None = None) -> dict:
    """Measure before/after over the first ``n_docs`` test contracts (all when ``None``)."""
    from benchmarks.factcheck import CUAD, load_document
    from schemas.findings import Verdict
    from tasks.check.factcheck import fact_check
    from tasks.check.index import DocumentIndex, headings_in
    from tasks.check.support import load_model, relative_support
    from tasks.observe.evaluate import evidence_overlaps, in_split, load_cuad, macro_f1, presence_scores
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.chunk import chunk_text

    started = time.perf_counter()
    docs = [d for d in load_cuad(CUAD) if in_split(d.filename, "test")][:n_docs]
    backend = RulesBackend()
    tallies = {
        k: {"findings": 0, "verified": 0, "overlap": 0, "predicted": defaultdict(set)} for k in ("before", "after")
    }
    for doc in docs:
        text = (CUAD / doc.txt_file).read_text(encoding="utf-8", errors="replace")
        document = load_document(doc.filename, text)
        chunks = chunk_text(document.sha256, document.text, document.page_starts())
        index = DocumentIndex.build(document)
        checked: dict[str, list] = {"before": [], "after": []}
        for chunk in chunks:
            findings = backend.review_chunk(chunk, doc.filename).findings
            if not findings:
                continue
            neighbours = [c for c in chunks if abs(c.index - chunk.index) == 1]
            for key, model in (("before", None), ("after", "default")):
                checked[key] += fact_check(findings, chunk, neighbours, index, support_model=model)
        # the document-level part
        checked["after"] = relative_support(checked["after"], load_model(), headings_in(index))
        for key, t in tallies.items():
            for cf in checked[key]:
                t["findings"] += 1
                if cf.verdict is not Verdict.verified:
                    continue
                t["verified"] += 1
                t["overlap"] += evidence_overlaps(cf.finding.evidence, doc.spans.get(cf.finding.clause_type, []))
                t["predicted"][doc.filename].add(cf.finding.clause_type)
    out: dict = {
        "benchmark": "verified_overlap",
        "contracts": len(docs),
        "split": "test",
    }
    for key, t in tallies.items():
        out[key] = {
            "findings": t["findings"],
            "verified": t["verified"],
            "verified_evidence_overlap": round(t["overlap"] / t["verified"], 4) if t["verified"] else None,
            "presence_macro_f1_verified": round(macro_f1(presence_scores(docs, t["predicted"])), 4),
        }
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the result as one JSON line."""
    from benchmarks.factcheck import CUAD

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=None, help="first N test contracts (default: all 75)")
    args = ap.parse_args(argv)
    if not (Path(CUAD) / "txt").is_dir():
        print(json.dumps({"benchmark": "verified_overlap", "skipped": f"{CUAD / 'txt'} not found"}))
        return 0
    print(json.dumps(run(args.docs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
