"""``python -m benchmarks [--only NAME ...] [--quick]``: run the benchmarks, one JSON line each.

Pipeline benchmarks (each also appends its line to ``benchmarks/results/results.jsonl``):
``throughput`` (200 documents vs the LLM-concurrency bound), ``overhead`` (non-LLM time per page
and document by stage), ``ingestion`` (pypdf / pypdfium2 / pdftotext pages/s on CUAD PDFs),
``extraction`` (pages/s of PDFium, pypdf and docreview's extraction stage on the shared filings
and CUAD, and the 3M 10-K and CERES timings), ``review_vs_extraction`` (an offline review of four
10-Ks against plain PDFium extraction of them, target ratio <= 4), ``startup`` (``docreview review``
wall time for one contract and four 10-Ks on a machine where nothing was started before: the first
run, which starts the local Prefect server, then the runs after it; and with a temporary Prefect
server per run, and with a local server but no resident runner; targets 3 s and 3 × PDFium),
``cost`` (routing and prompt caching vs every chunk uncached), ``router`` (CPU seconds per MB of text of the
router on CUAD and four 10-Ks), ``memory`` (RSS over 1,000
documents), ``s3_source`` (listing, streamed download and watcher sweeps against a local S3
endpoint). Quality benchmarks: ``factcheck`` (planted errors), ``verified_overlap`` (verified findings against the
lawyers' labels, held-out contracts), ``faults`` (nothing lost under
faults), ``cuad_eval`` (rules backend against CUAD labels), ``filings_eval`` (the filing profile on the
shared SEC filings: evidence-page recall, key-figure accuracy, findings and pages per second),
``scanned_review`` (scanned CUAD contracts reviewed against their born-digital originals: clause
categories' Jaccard, grounded share), ``ocr`` (Tesseract pages per second per core and character error
rate on scanned CUAD contracts and ``linn.pdf``), ``html_filings`` (seconds to read each shared EDGAR HTML
filing with its inline XBRL facts), ``verifier_cited`` (the cited verifier's tokens, cost and latency
against the single structured call it replaced, test double), ``pii_ner`` (recall of the optional name
redaction on CUAD party names).

``--quick`` runs every benchmark at a small size (minutes, for a smoke check; figures from a
quick run are not the documented ones).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks._harness import CUAD_PDF, emit

ALL = (
    "throughput",
    "overhead",
    "ingestion",
    "extraction",
    "review_vs_extraction",
    "startup",
    "cost",
    "router",
    "memory",
    "s3_source",
    "factcheck",
    "verified_overlap",
    "faults",
    "cuad_eval",
    "filings_eval",
    "scanned_review",
    "ocr",
    "html_filings",
    "verifier_cited",
    "pii_ner",
)


def cuad_eval(data_dir: Path, limit: int | None = None) -> dict:
    """CUAD evaluation (rules backend): presence macro-F1, router recall and rate."""
    from flows.eval import evaluate_cuad

    kwargs = {"limit": limit} if limit else {}
    r = evaluate_cuad(data_dir, backend="rules", out_file=None, **kwargs)
    return {
        "benchmark": "cuad_eval",
        "documents": r["documents"],
        "presence_macro_f1": round(r["presence_macro_f1"], 4),
        "evidence_overlap_rate": round(r["evidence_overlap_rate"], 4),
        "router_recall": round(r["router_recall"], 4),
        "routing_rate": round(r["routing_rate"], 4),
        "wall_s": r["wall_s"],
    }


def filings_eval(data_dir: Path, limit: int | None = None) -> dict:
    """Filing evaluation (rules backend, default settings): evidence-page recall, key-figure
    accuracy, findings per page and pages per second (extraction included) on the shared filings."""
    from flows.eval_filings import evaluate_filings

    r = evaluate_filings(data_dir, backend="rules", limit=limit)
    keys = (
        "filings",
        "reviewed",
        "recognised_as_filing",
        "form_accuracy",
        "evidence_page_recall",
        "evidence_pages",
        "key_figure_accuracy",
        "key_figure_questions",
        "findings_per_page",
        "pages",
        "pages_per_s",
        "review_wall_s",
    )
    return {"benchmark": "filings_eval", **{k: round(r[k], 4) if isinstance(r[k], float) else r[k] for k in keys}}


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks in order; exit status 1 when one of them fails."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=ALL, default=list(ALL))
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke check")
    args = parser.parse_args(argv)
    q = args.quick
    failed = 0
    for name in args.only:
        try:
            if name == "throughput":
                from benchmarks import throughput

                throughput.main(["--docs", "20" if q else "200"])
            elif name == "overhead":
                from benchmarks import overhead

                overhead.main(["--docs", "20" if q else "50"])
            elif name == "ingestion":
                from benchmarks import ingestion

                ingestion.main(["--docs", "4" if q else "24"])
            elif name == "extraction":
                from benchmarks import extraction

                extraction.main(["--only", "extraction"] + (["--filings", "2", "--cuad", "4"] if q else []))
            elif name == "review_vs_extraction":
                from benchmarks import extraction

                extraction.main(["--only", "review_vs_extraction"])
            elif name == "startup":
                from benchmarks import startup

                startup.main(["--repeat", "1" if q else "3"])
            elif name == "cost":
                from benchmarks import cost

                cost.main(["--docs", "20" if q else "40"])
            elif name == "router":
                from benchmarks import router

                router.main(["--quick"] if q else [])
            elif name == "memory":
                from benchmarks import memory

                memory.main(["--docs", "100", "--every", "25"] if q else ["--docs", "1000", "--every", "250"])
            elif name == "s3_source":
                from benchmarks import s3_source

                s3_source.main(["--keys", "300", "--big-mb", "8"] if q else [])
            elif name == "factcheck":
                from benchmarks import factcheck

                factcheck.main(["--docs", "10"] if q else [])  # planted errors: catch and false-alarm rates
            elif name == "verified_overlap":
                from benchmarks import verified_overlap

                verified_overlap.main(["--docs", "10"] if q else [])  # what "verified" is worth on held-out CUAD
            elif name == "faults":
                from benchmarks import faults

                faults.main(["--documents", "20", "--outage-s", "10"] if q else [])  # nothing lost, no duplicates
            elif name == "cuad_eval":
                if not CUAD_PDF.is_dir():
                    emit({"benchmark": "cuad_eval", "skipped": f"{CUAD_PDF} not found"})
                else:
                    emit(cuad_eval(CUAD_PDF.parent, limit=20 if q else None))
            elif name == "filings_eval":
                filings = CUAD_PDF.parent.parent / "filings"
                if not (filings / "documents.jsonl").is_file():
                    emit({"benchmark": "filings_eval", "skipped": f"{filings} not found"})
                else:
                    emit(filings_eval(filings, limit=8 if q else None))
            elif name == "scanned_review":
                from benchmarks import scanned_review

                if not CUAD_PDF.is_dir():
                    emit({"benchmark": "scanned_review", "skipped": f"{CUAD_PDF} not found"})
                else:  # scanned CUAD contracts against the born-digital originals (Jaccard, grounded share)
                    emit(scanned_review.run(count=2 if q else 6))
            elif name == "ocr":
                from benchmarks import ocr

                ocr.main(["--docs", "2", "--max-pages", "2"] if q else [])  # pages/s per core, CER
            elif name == "html_filings":
                from benchmarks import html_filings

                emit(html_filings.run(repeat=1 if q else 3))  # EDGAR HTML with inline XBRL, seconds per filing
            elif name == "verifier_cited":
                from benchmarks import verifier_cited

                # the cited verifier (two calls) against the single structured call, test double
                emit(verifier_cited.run(contracts=2 if q else 10))
            elif name == "pii_ner":
                from benchmarks import pii_ner

                emit(pii_ner.run(limit=20 if q else None))  # name-redaction recall on CUAD party names
        except Exception as exc:
            failed += 1
            print(json.dumps({"benchmark": name, "error": f"{type(exc).__name__}: {str(exc)[:500]}"}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
