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


def cuad_eval(data_dir: Path) -> dict:
    """Full CUAD evaluation (rules backend, all contracts): presence macro-F1, router recall and rate."""
    from flows.eval import evaluate_cuad

    r = evaluate_cuad(data_dir, backend="rules", out_file=None)
    return {"benchmark": "cuad_eval", "documents": r["documents"], "presence_macro_f1": round(r["presence_macro_f1"], 4),
            "evidence_overlap_rate": round(r["evidence_overlap_rate"], 4), "router_recall": round(r["router_recall"], 4),
            "routing_rate": round(r["routing_rate"], 4), "wall_s": r["wall_s"]}


def main() -> int:
    from benchmarks import factcheck

    factcheck.main([])  # planted errors in findings from the CUAD contracts: catch and false-alarm rates
    from benchmarks import faults

    faults.main([])  # 200 documents through 529s, latency spikes, an outage and a SIGKILL: lost/duplicates
    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad" / "pdf"
    if not shared.is_dir():
        print(json.dumps({"benchmark": "ingest", "skipped": f"{shared} not found"}))
        return 0
    print(json.dumps(ingest_throughput(shared)))
    print(json.dumps(cuad_eval(shared.parent)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
