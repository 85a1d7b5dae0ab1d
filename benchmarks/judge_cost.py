"""What the support judge costs: milliseconds per finding on one core, memory added, a contract's check time.

``python -m benchmarks.judge_cost [--docs 10]`` (needs the judge: ``make judge``) prints one JSON line:

- ``ms_per_finding``: wall milliseconds per finding of :meth:`tasks.check.judge.Judge.score_many` over the
  offline rules backend's findings of ``--docs`` contracts of the test split (their claimed categories,
  under their heading paths), on one thread (ONNX Runtime's intra-op threads: 1), median of three passes;
  also one finding at a time (``ms_per_finding_single``), as the per-finding support check calls it;
- ``rss_added_mb``: the process's resident memory after loading the judge and scoring, less before;
- ``check_s_lexical`` / ``check_s_judge``: seconds to review the same contracts offline (the rules backend
  over their chunks) and fact-check every finding in its chunk with the document-level support part, with
  the lexical model alone and with the judge; ``ratio`` = judge / lexical.

Run it on a quiet machine (``uptime``): the figures are wall times, and the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 1e6


def run(n_docs: int = 10) -> dict:
    """Measure over the first ``n_docs`` test-split contracts (see the module docstring)."""
    from benchmarks.factcheck import CUAD, load_document
    from tasks.check.factcheck import DocumentIndex, fact_check
    from tasks.check.judge import load_judge
    from tasks.check.merge import headings_in
    from tasks.check.support import MODEL_FILE, load_model, relative_support
    from tasks.observe.evaluate import in_split, load_cuad
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.chunk import chunk_text

    lexical = load_model(str(MODEL_FILE))  # a path given: the lexical model, without the judge
    assert lexical is not None
    docs = [d for d in load_cuad(CUAD) if in_split(d.filename, "test")][:n_docs]
    prepared = []
    for doc in docs:
        text = (CUAD / doc.txt_file).read_text(encoding="utf-8", errors="replace")
        document = load_document(doc.filename, text)
        prepared.append((doc, document, chunk_text(document.sha256, document.text, document.page_starts())))

    before = _rss_mb()
    judge = load_judge()
    if judge is None:
        return {"benchmark": "judge_cost", "skipped": "the support judge is not built (make judge)"}
    judged = lexical.with_judge(judge)
    backend = RulesBackend()

    def check_all(model) -> tuple[float, list]:
        started = time.perf_counter()
        items = []
        for doc, document, chunks in prepared:
            index = DocumentIndex.build(document)
            heading_of = headings_in(index)
            checked = []
            for chunk in chunks:
                findings = backend.review_chunk(chunk, doc.filename).findings
                if not findings:
                    continue
                neighbours = [c for c in chunks if abs(c.index - chunk.index) == 1]
                checked += fact_check(findings, chunk, neighbours, index, support_model=model)
            checked = relative_support(checked, model, heading_of)
            items += [(cf.finding.evidence, heading_of(cf), cf.finding.clause_type.value) for cf in checked]
        return time.perf_counter() - started, items

    lexical_s, items = check_all(lexical)
    judge_s, _ = check_all(judged)
    passes = []
    for _ in range(3):
        started = time.perf_counter()
        judge.score_many(items)
        passes.append((time.perf_counter() - started) * 1000 / max(1, len(items)))
    sample = items[:200]
    started = time.perf_counter()
    for item in sample:
        judge.score(*item)
    single = (time.perf_counter() - started) * 1000 / max(1, len(sample))
    return {
        "benchmark": "judge_cost",
        "judge": judge.version,
        "contracts": len(prepared),
        "findings": len(items),
        "ms_per_finding": round(statistics.median(passes), 2),
        "ms_per_finding_single": round(single, 2),
        "rss_added_mb": round(_rss_mb() - before, 1),
        "check_s_lexical": round(lexical_s, 2),
        "check_s_judge": round(judge_s, 2),
        "ratio": round(judge_s / lexical_s, 2) if lexical_s else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the result as one JSON line."""
    from benchmarks.factcheck import CUAD

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10, help="first N contracts of the test split")
    args = ap.parse_args(argv)
    if not (CUAD / "txt").is_dir():
        print(json.dumps({"benchmark": "judge_cost", "skipped": f"{CUAD / 'txt'} not found"}))
        return 0
    print(json.dumps(run(args.docs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
