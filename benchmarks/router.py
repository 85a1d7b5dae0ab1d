"""Router speed: CPU seconds per megabyte of document text of :func:`tasks.review.route.route_text`.

``python -m benchmarks.router [--cuad N] [--filings 3M_2018_10K,...] [--quick]`` routes, with the
stored scorer, the text of the shared CUAD contracts (``../shared/data/cuad/txt``, every k-th of
the name-sorted files when ``--cuad`` is given; all 340 by default) and the text of a few long SEC
filings (``../shared/data/filings/pdf``, extracted with pypdfium2 before timing, pages joined by a
blank line), and prints one JSON line: for each corpus, ``documents``, ``mb`` (1 MB = 1,000,000
characters), ``cpu_s`` (``time.process_time`` over the ``route_text`` calls only), ``s_per_mb``
(CPU seconds per MB; the target is at most 0.5) and the share of the text routed deep
(``deep_share``, characters of deep segments / characters). The scorer is loaded and its arrays are
built by one untimed call first (``model_setup_cpu_s``: once per process). ``--quick`` takes 4
contracts and the Boeing 2018 10-K. The machine's load average (1/5/15 min) at start and end is
included, since the machine is shared. Nothing here is a timed test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, emit

CUAD_TXT = CUAD_PDF.parent / "txt"
FILINGS_PDF = CUAD_PDF.parent.parent / "filings" / "pdf"
#: Four long 10-Ks (0.38-0.59 M characters of text each; the same four as ``review_vs_extraction``).
FILINGS = ("3M_2018_10K", "BOEING_2018_10K", "JOHNSON_JOHNSON_2022_10K", "NIKE_2021_10K")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def pdf_text(path: Path) -> str:
    """The text of every page of ``path`` (pypdfium2), pages joined by a blank line."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return "\n\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    finally:
        pdf.close()


def measure(texts: list[str]) -> dict[str, Any]:
    """``route_text`` over ``texts`` with the stored scorer: documents, MB, CPU seconds, s/MB, deep share."""
    from tasks.review.route import route_text

    chars = sum(len(t) for t in texts)
    deep = 0
    cpu = 0.0
    for text in texts:
        started = time.process_time()
        segments = route_text(text)
        cpu += time.process_time() - started
        deep += sum(s.end - s.start for s in segments if s.deep)
    mb = chars / 1e6
    return {
        "documents": len(texts),
        "mb": round(mb, 3),
        "cpu_s": round(cpu, 3),
        "s_per_mb": round(cpu / mb, 3) if mb else None,
        "deep_share": round(deep / chars, 4) if chars else None,
    }


def router(cuad: int | None, filings: list[str]) -> dict[str, Any]:
    """The ``router`` line (see the module docstring)."""
    from tasks.review.route import load_model, route_text

    out: dict[str, Any] = {"benchmark": "router", "cpu_count": os.cpu_count(), "load_start": _load()}
    started = time.process_time()
    load_model()
    route_text("Setup. The parties agree.")  # loads the scorer and builds its arrays
    out["model_setup_cpu_s"] = round(time.process_time() - started, 3)
    if CUAD_TXT.is_dir():
        files = sorted(CUAD_TXT.glob("*.txt"))
        if cuad and cuad < len(files):
            files = [files[int(k * len(files) / cuad)] for k in range(cuad)]
        out["cuad"] = measure([f.read_text(encoding="utf-8", errors="replace") for f in files])
    else:
        out["cuad"] = {"skipped": f"{CUAD_TXT} not found"}
    paths = [FILINGS_PDF / f"{name}.pdf" for name in filings]
    missing = [p.name for p in paths if not p.is_file()]
    if missing or not paths:
        out["filings"] = {"skipped": f"not found: {', '.join(missing)}" if missing else "none named"}
    else:
        out["filings"] = measure([pdf_text(p) for p in paths]) | {"files": [p.stem for p in paths]}
    out["load_end"] = _load()
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints the ``router`` JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuad", type=int, default=None, help="contracts in the sample (spread by name; default all)")
    parser.add_argument("--filings", default=",".join(FILINGS), help="comma-separated filing names (without .pdf)")
    parser.add_argument("--quick", action="store_true", help="4 contracts and one filing, for a smoke check")
    args = parser.parse_args(argv)
    filings = [f for f in args.filings.split(",") if f]
    if args.quick:
        emit(router(4, ["BOEING_2018_10K"]))
    else:
        emit(router(args.cuad, filings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
