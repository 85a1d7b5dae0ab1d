"""``python -m benchmarks``: run every benchmark and print one JSON line each."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def ingest_throughput(folder: Path, limit: int = 40) -> dict:
    """pypdf pages/s over up to ``limit`` PDFs of ``folder`` through the limited child process."""
    from schemas.settings import Limits
    from tasks.ingest import list_local_source, run_extraction

    objects = [o for o in list_local_source(str(folder)) if o.name.lower().endswith(".pdf")][:limit]
    pages, started = 0, time.perf_counter()
    for obj in objects:
        result = run_extraction(obj.local_path, Limits())
        pages += len(result.get("pages", []))
    wall = time.perf_counter() - started
    return {"benchmark": "ingest", "documents": len(objects), "pages": pages, "wall_s": round(wall, 2),
            "pages_per_s": round(pages / wall, 2) if wall else 0.0}


def main() -> int:
    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad" / "pdf"
    if not shared.is_dir():
        print(json.dumps({"benchmark": "ingest", "skipped": f"{shared} not found"}))
        return 0
    print(json.dumps(ingest_throughput(shared)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
