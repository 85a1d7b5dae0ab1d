"""Text extraction at filing scale: pages per second per extractor, and review vs plain extraction.

``python -m benchmarks.extraction [--filings 8] [--cuad 24] [--timeout-s 300]`` prints two JSON lines:

- ``extraction``: pages per second of plain PDFium (pypdfium2, text of every page, one process),
  plain pypdf (``PdfReader(strict=False)`` and ``page.extract_text()``, one child per file so a
  pathological file can be cut off at ``--timeout-s``) and docreview's extraction stage
  (:func:`tasks.ingest.extract.run_extraction`: the limited child process, PDFium with the pypdf
  fallbacks, cleaning, ligatures, running lines and page flags), on ``--filings`` PDFs spread over
  the name-sorted shared filings and ``--cuad`` spread over CUAD (the same files in every column;
  a file pypdf cannot finish within the timeout is left out of every column and listed). Also the
  seconds of each extractor on the two named documents of issue 18: the 160-page 3M 2018 10-K
  and the 154-page CERES collaboration agreement (CUAD).
- ``review_vs_extraction``: one offline review (``rules`` backend, the whole flow in a child
  process: :func:`benchmarks._harness.run_review`) of four 10-Ks from the shared filings, against
  plain PDFium extraction of the same files in the same run; ``ratio`` = flow seconds / PDFium
  seconds (target: at most 4), ``cpu_ratio`` the same in CPU seconds (the flow's process and its
  extraction children; steadier than wall time on a shared machine), with the flow's busy
  seconds per stage. The flow reports to a Prefect server started for the benchmark and idle
  before the run (:class:`benchmarks._harness.PrefectServer`), as in a deployment, whose CPU
  seconds during the run are ``prefect_server_cpu_s`` (on this machine's cores too). The same
  review then runs as ``docreview review`` does without ``PREFECT_API_URL``, starting a temporary
  server of its own: ``review_flow_temporary_server_s`` and ``ratio_temporary_server`` include
  that server's start.

Every line carries the machine's load average (``os.getloadavg()``, 1/5/15 min) at the start and
end, since the machine is shared. Nothing here is a timed test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, ROOT, emit
from benchmarks.ingestion import _pypdf_timed, pdfium_file, pick_files

FILINGS_PDF = ROOT.parent / "shared" / "data" / "filings" / "pdf"
#: The documents issue 18 names (160 and 154 pages).
NAMED = {
    "3M_2018_10K": FILINGS_PDF / "3M_2018_10K.pdf",
    "CERES": CUAD_PDF / "CERES,INC_01_25_2012-EX-10.20-Collaboration Agreement.PDF",
}
#: Four 10-Ks of different companies and sizes (136-160 pages) for the review comparison.
REVIEW_10KS = ("3M_2018_10K.pdf", "BOEING_2018_10K.pdf", "JOHNSON_JOHNSON_2022_10K.pdf", "NIKE_2021_10K.pdf")
#: A small filing reviewed once before the measured review, so the Prefect server is warm.
WARM_UP = FILINGS_PDF / "FOOTLOCKER_2022_8K_dated-2022-05-20.pdf"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _stage_s(path: Path, timeout_s: float) -> tuple[float, dict[str, Any]]:
    """Seconds of docreview's extraction stage on ``path`` and its result (without the page texts)."""
    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction

    started = time.perf_counter()
    result = run_extraction(str(path), Limits(extraction_timeout_s=timeout_s))
    wall = time.perf_counter() - started
    return wall, {k: v for k, v in result.items() if k != "pages"} | {"pages": len(result.get("pages", []))}


def _pdfium_s(path: Path) -> tuple[int, float]:
    """``(pages, seconds)`` of plain PDFium on ``path`` (wall clock)."""
    pages, seconds, _ = _pdfium_timed(path)
    return pages, seconds


def _pdfium_timed(path: Path) -> tuple[int, float, float]:
    """``(pages, wall seconds, CPU seconds)`` of plain PDFium on ``path``."""
    started, cpu = time.perf_counter(), time.process_time()
    pages, _ = pdfium_file(str(path))
    return pages, time.perf_counter() - started, time.process_time() - cpu


def measure_corpus(files: list[Path], timeout_s: float) -> dict[str, Any]:
    """Pages per second of PDFium, pypdf and the extraction stage over ``files`` (see the module docstring)."""
    kept, skipped = [], []
    pages = 0
    pypdf_s = 0.0
    for path in files:
        got = _pypdf_timed(str(path), timeout_s)
        if got is None:
            skipped.append(path.name)
            continue
        kept.append(path)
        pages += got[0]
        pypdf_s += got[2]
    pdfium_s = sum(_pdfium_s(p)[1] for p in kept)
    stage_s = 0.0
    engines = {"pdfium": 0, "pypdf": 0}
    for path in kept:
        wall, result = _stage_s(path, max(timeout_s, 300))
        stage_s += wall
        for k, v in (result.get("engines") or {}).items():
            engines[k] = engines.get(k, 0) + v
    per_s = {
        "pdfium": pages / pdfium_s if pdfium_s else None,
        "pypdf": pages / pypdf_s if pypdf_s else None,
        "docreview_stage": pages / stage_s if stage_s else None,
    }
    return {
        "documents": len(kept),
        "pages": pages,
        "pages_per_s": {k: round(v, 1) if v else v for k, v in per_s.items()},
        "seconds": {"pdfium": round(pdfium_s, 2), "pypdf": round(pypdf_s, 2), "docreview_stage": round(stage_s, 2)},
        "stage_pages_by_extractor": engines,
        "skipped": skipped,
        "files": [p.name for p in kept],
    }


def extraction(filings: int, cuad: int, timeout_s: float) -> dict[str, Any]:
    """The ``extraction`` line (see the module docstring)."""
    load_start = _load()
    out: dict[str, Any] = {"benchmark": "extraction", "cpu_count": os.cpu_count(), "timeout_s": timeout_s}
    for name, folder, n in (("filings", FILINGS_PDF, filings), ("cuad", CUAD_PDF, cuad)):
        out[name] = (
            measure_corpus(pick_files(folder, n), timeout_s)
            if folder.is_dir() and n
            else {"skipped": f"{folder} not found" if not folder.is_dir() else "sample size 0"}
        )
    named: dict[str, Any] = {}
    for name, path in NAMED.items():
        if not path.exists():
            named[name] = {"skipped": f"{path} not found"}
            continue
        pages, pdfium_s = _pdfium_s(path)
        got = _pypdf_timed(str(path), timeout_s)
        stage_s, result = _stage_s(path, 300)
        named[name] = {
            "pages": pages,
            "pdfium_s": round(pdfium_s, 2),
            "pypdf_s": round(got[2], 2) if got else f"over {timeout_s:g} s",
            "docreview_stage_s": round(stage_s, 2),
            "stage_ok": result.get("ok"),
            "stage_pages_by_extractor": result.get("engines"),
        }
    out["named"] = named
    out["load_avg"] = {"start": load_start, "end": _load()}
    return out


def review_vs_extraction(timeout_s: float = 3600) -> dict[str, Any]:
    """The ``review_vs_extraction`` line (see the module docstring)."""
    from benchmarks._harness import RESULTS, PrefectServer, run_review

    (RESULTS / "prefect-home").mkdir(parents=True, exist_ok=True)  # the child's Prefect home must exist

    files = [FILINGS_PDF / name for name in REVIEW_10KS]
    missing = [p.name for p in files + [WARM_UP] if not p.exists()]
    if missing:
        return {"benchmark": "review_vs_extraction", "skipped": f"not found: {missing}"}
    load_start = _load()
    pages, pdfium_s, pdfium_cpu = 0, 0.0, 0.0
    for path in files:
        n, s, c = _pdfium_timed(path)
        pages += n
        pdfium_s += s
        pdfium_cpu += c
    work = Path(tempfile.mkdtemp(prefix="bench-review-10k-"))
    try:
        inbox = work / "inbox"
        inbox.mkdir()
        for path in files:
            (inbox / path.name).symlink_to(path)
        warm = work / "warm-up"
        warm.mkdir()
        (warm / WARM_UP.name).symlink_to(WARM_UP)
        with PrefectServer(work / "prefect-server") as server:
            # A deployment's server has served runs before: one small review first, not measured.
            run_review(warm, work / "run-warm-up", backend="rules", timeout_s=timeout_s, prefect_api_url=server.api_url)
            server_cpu = server.cpu_s()
            run = run_review(inbox, work / "run", backend="rules", timeout_s=timeout_s, prefect_api_url=server.api_url)
            server_cpu = server.cpu_s() - server_cpu
        temporary = run_review(inbox, work / "run-temporary-server", backend="rules", timeout_s=timeout_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    flow_s = run["flow_wall_s"]
    m = run["metrics"]
    return {
        "benchmark": "review_vs_extraction",
        "documents": [p.name for p in files],
        "pages": pages,
        "pdfium_s": round(pdfium_s, 2),
        "review_flow_s": flow_s,
        "ratio": round(flow_s / pdfium_s, 2),
        "target_ratio": 4,
        "pdfium_cpu_s": round(pdfium_cpu, 2),
        "review_flow_cpu_s": run.get("flow_cpu_s"),
        "cpu_ratio": round(run["flow_cpu_s"] / pdfium_cpu, 2) if run.get("flow_cpu_s") and pdfium_cpu else None,
        "prefect_server_cpu_s": round(server_cpu, 2),
        "review_flow_temporary_server_s": temporary["flow_wall_s"],
        "ratio_temporary_server": round(temporary["flow_wall_s"] / pdfium_s, 2),
        "busy_s": run["busy_s"],
        "task_runs": sum(run.get("task_runs", {}).values()),
        "reviewed": m.get("documents_reviewed"),
        "failed": m.get("documents_failed"),
        "findings": m.get("findings_total"),
        "chunks": m.get("chunks_total"),
        "load_avg": {"start": load_start, "end": _load()},
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints the two JSON lines (``--only`` one of them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filings", type=int, default=8, help="filings in the sample (spread by name)")
    parser.add_argument("--cuad", type=int, default=24, help="CUAD contracts in the sample (spread by name)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per-file limit for plain pypdf, seconds")
    parser.add_argument("--only", choices=("extraction", "review_vs_extraction"), default=None)
    args = parser.parse_args(argv)
    if args.only in (None, "extraction"):
        emit(extraction(args.filings, args.cuad, args.timeout_s))
    if args.only in (None, "review_vs_extraction"):
        emit(review_vs_extraction())
    return 0


if __name__ == "__main__":
    sys.exit(main())
