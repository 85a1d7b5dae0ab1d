"""Text-extraction speed on the shared CUAD PDFs: pypdf (serial, process pool) beside pypdfium2 and pdftotext.

``python -m benchmarks.ingestion [--docs 24] [--workers N] [--timeout-s 120]`` takes ``--docs``
PDFs spread evenly over the name-sorted ``../shared/data/cuad/pdf`` (every k-th file, so the
subset is the same on every machine) and extracts every page's text with, in the same run:

- ``pypdf``: ``PdfReader(strict=False)`` and ``page.extract_text()``, one process;
- ``pypdf_pool``: the same, one file per task in a ``ProcessPoolExecutor`` of ``--workers``
  processes (default: the CPU count);
- ``pipeline``: docreview's own path (:func:`tasks.ingest.extract.run_extraction`: a limited child
  process per file, text cleaning and page-quality flags), one file at a time;
- ``pypdfium2`` (PDFium, a main dependency; column ``null`` when missing);
- ``pdftotext`` (poppler-utils, ``apt-get install poppler-utils``; column ``null`` when missing),
  one process per file.

A file that takes pypdf longer than ``--timeout-s`` is left out of every column (listed under
``skipped``) so that all columns cover the same pages. Prints one JSON line with ``pages_per_s``
and extracted ``chars`` per engine (characters, to see that they read comparable text).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, emit


def pick_files(folder: Path, docs: int) -> list[Path]:
    """``docs`` PDFs spread evenly over the name-sorted PDFs of ``folder`` (all when fewer)."""
    pdfs = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".pdf")
    if docs >= len(pdfs):
        return pdfs
    step = len(pdfs) / docs
    return [pdfs[int(k * step)] for k in range(docs)]


def pypdf_file(path: str) -> tuple[int, int, float]:
    """``(pages, characters, seconds)`` of ``path`` extracted with pypdf (a page that raises counts
    as empty); seconds from opening the file to the last page, without the import."""
    import logging
    import warnings

    from pypdf import PdfReader

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    reader = PdfReader(path, strict=False)
    chars = 0
    for page in reader.pages:
        try:
            chars += len(page.extract_text() or "")
        except Exception:
            pass
    return len(reader.pages), chars, time.perf_counter() - started


def _pypdf_timed(path: str, timeout_s: float) -> tuple[int, int, float] | None:
    """pypdf on ``path`` in a child process; ``(pages, chars, seconds)`` or None past ``timeout_s``."""
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=ctx)
    try:
        return pool.submit(pypdf_file, path).result(timeout=timeout_s)
    except TimeoutError:
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        return None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def pdfium_file(path: str) -> tuple[int, int]:
    """``(pages, characters)`` of ``path`` extracted with pypdfium2."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        chars = 0
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            chars += len(textpage.get_text_range())
            textpage.close()
            page.close()
        return len(pdf), chars
    finally:
        pdf.close()


def pdftotext_file(path: str) -> int:
    """Characters of ``path`` extracted by ``pdftotext`` (to stdout, UTF-8)."""
    out = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", path, "-"], capture_output=True, timeout=600)
    return len(out.stdout.decode("utf-8", "replace"))


def measure(docs: int, workers: int, timeout_s: float, folder: Path = CUAD_PDF) -> dict[str, Any]:
    """Run every engine over the same files; returns the result line (see the module docstring)."""
    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction

    files = pick_files(folder, docs)
    kept: list[Path] = []
    skipped: list[str] = []
    pages = 0
    columns: dict[str, dict[str, float] | None] = {}
    # pypdf, one process: each file in a child only so that a pathological one can be cut off;
    # the time counted is the child's own (open to last page), not its start-up.
    pypdf_s = pypdf_chars = 0.0
    for path in files:
        got = _pypdf_timed(str(path), timeout_s)
        if got is None:
            skipped.append(path.name)
            continue
        kept.append(path)
        pages += got[0]
        pypdf_chars += got[1]
        pypdf_s += got[2]
    columns["pypdf"] = {"pages_per_s": pages / pypdf_s if pypdf_s else 0.0, "chars": pypdf_chars, "wall_s": pypdf_s}

    started = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool_chars = sum(c for _, c, _ in pool.map(pypdf_file, [str(p) for p in kept]))
    wall = time.perf_counter() - started
    columns["pypdf_pool"] = {"pages_per_s": pages / wall if wall else 0.0, "chars": pool_chars, "wall_s": wall}

    started = time.perf_counter()
    pipe_chars = 0
    for path in kept:
        result = run_extraction(str(path), Limits(extraction_timeout_s=max(timeout_s * 3, 300)))
        pipe_chars += sum(len(p["text"]) for p in result.get("pages", []))
    wall = time.perf_counter() - started
    columns["pipeline"] = {"pages_per_s": pages / wall if wall else 0.0, "chars": pipe_chars, "wall_s": wall}

    notes = []
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        columns["pypdfium2"] = None
        notes.append("pypdfium2 not installed (pip install -e .)")
    else:
        started = time.perf_counter()
        chars = sum(pdfium_file(str(p))[1] for p in kept)
        wall = time.perf_counter() - started
        columns["pypdfium2"] = {"pages_per_s": pages / wall if wall else 0.0, "chars": chars, "wall_s": wall}

    if shutil.which("pdftotext"):
        started = time.perf_counter()
        chars = sum(pdftotext_file(str(p)) for p in kept)
        wall = time.perf_counter() - started
        columns["pdftotext"] = {"pages_per_s": pages / wall if wall else 0.0, "chars": chars, "wall_s": wall}
    else:
        columns["pdftotext"] = None
        notes.append("pdftotext not found (apt-get install poppler-utils)")

    table = {name: ({k: round(v, 2) for k, v in col.items()} if col else None) for name, col in columns.items()}
    return {
        "benchmark": "ingestion",
        "documents": len(kept),
        "pages": pages,
        "pool_workers": workers,
        "cpu_count": os.cpu_count(),
        "engines": table,
        "pages_per_s": {name: (col["pages_per_s"] if col else None) for name, col in table.items()},
        "skipped": skipped,
        "timeout_s": timeout_s,
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line (a ``skipped`` line when CUAD is absent)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--folder", type=Path, default=CUAD_PDF)
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        emit({"benchmark": "ingestion", "skipped": f"{args.folder} not found"})
        return 0
    emit(measure(args.docs, args.workers, args.timeout_s, args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
