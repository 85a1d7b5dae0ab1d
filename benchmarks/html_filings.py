"""HTML filings as filed on EDGAR: how long the extraction child takes to read one with its inline XBRL facts.

``python -m benchmarks.html_filings [--repeat 3]`` runs :func:`tasks.ingest.extract.run_extraction` (the
limited child process, as a review does) on every filing of ``edgar-html/`` in the shared data and reports,
per file, the median wall seconds of ``--repeat`` runs, the units (pages and Item parts) and the inline
XBRL facts read. Target: an HTML 10-K of 1-3 MB with about 1,000 facts in at most 2 s on this machine; a
filing without inline XBRL costs nothing extra. The load average is printed at the start and end (the
machine is shared). Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from benchmarks._harness import SHARED_DATA, emit


def run(repeat: int = 3) -> dict[str, Any]:
    """Time the extraction of every shared EDGAR HTML filing; returns the benchmark's JSON line."""
    from schemas.documents import DocumentKind
    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction

    load_start = os.getloadavg()
    rows = []
    for path in sorted((SHARED_DATA / "edgar-html").glob("*.htm*")):
        times, result = [], {}
        for _ in range(repeat):
            start = time.monotonic()
            result = run_extraction(str(path), Limits(), DocumentKind.html)
            times.append(time.monotonic() - start)
        rows.append(
            {
                "file": path.name,
                "mb": round(path.stat().st_size / 1e6, 2),
                "ok": bool(result.get("ok")),
                "units": len(result.get("pages") or []),
                "facts": len(result.get("facts") or []),
                "wall_s": round(statistics.median(times), 3),
            }
        )
    return {
        "benchmark": "html_filings",
        "files": len(rows),
        "max_wall_s": max((r["wall_s"] for r in rows), default=None),
        "target_s": 2.0,
        "rows": rows,
        "load": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]},
    }


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    result = run(parser.parse_args().repeat)
    for row in result["rows"]:
        print(
            f"{row['file']:32} {row['mb']:5.2f} MB  units {row['units']:4}  facts {row['facts']:5}  {row['wall_s']:.3f} s"
        )
    emit(result)


if __name__ == "__main__":
    main()
