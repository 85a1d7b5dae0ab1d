"""Non-LLM overhead per page and per document, split by stage (zero LLM latency).

``python -m benchmarks.overhead [--docs 50] [--concurrency 16]`` runs the throughput setup
(:mod:`benchmarks.throughput`: mixed workload, ``anthropic`` backend, local Messages-API test
double over HTTP) with no injected latency, so nearly all wall time is docreview's own work.
Every Prefect task body is timed (:mod:`benchmarks._harness`) and summed per stage over all
threads; the JSON line gives, per stage, milliseconds per page and per document:

- ``ingest``: listing, sha256 fingerprint, text extraction (a limited child process per file);
- ``chunk``; ``route`` (decision-point router and the injection screen);
- ``review_client``: the review task minus the HTTP calls (prompt building, SDK, parsing);
- ``fact_check``; ``persist`` (every database write); ``report`` (report, plots, artifacts);
- ``orchestration``: the flow's main thread outside task bodies and not waiting for an event
  (control flow plus Prefect's task engine), sampled every 5 ms.

``llm`` (time inside HTTP calls to the double, which runs the rules extractor per call) is shown
but is not overhead. Stage times are thread-time and overlap in wall time; the figure that
bounds throughput is the share of LLM-bound wall time (``overhead_share`` of the throughput
benchmark, target ≤ 0.05): ``(wall - calls x mean_call_s / C) / wall``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchmarks._harness import emit
from benchmarks.throughput import measure as measure_throughput

STAGE_ORDER = ("ingest", "chunk", "route", "review_client", "fact_check", "persist", "report", "orchestration", "other")


def measure(docs: int, concurrency: int, long_share: float = 0.2, cache: bool = True) -> dict[str, Any]:
    """Run the zero-latency pipeline and return the result line (see the module docstring)."""
    return split(measure_throughput(docs, concurrency, 0.0, 0.0, long_share, cache=cache, name="overhead"))


def split(run: dict[str, Any]) -> dict[str, Any]:
    """The overhead line from a :func:`benchmarks.throughput.measure` result (any latency)."""
    busy = dict(run["busy_s"])
    busy["review_client"] = max(0.0, busy.pop("review", 0.0) - run["llm_busy_s"])
    busy["orchestration"] = run["main_thread"].get("orchestration", 0.0) * run["wall_s"]
    pages, reviewed = max(1, run["pages"]), max(1, run["reviewed"])
    stages = {
        name: {
            "ms_per_page": round(busy.get(name, 0.0) * 1000 / pages, 2),
            "ms_per_doc": round(busy.get(name, 0.0) * 1000 / reviewed, 1),
        }
        for name in STAGE_ORDER
        if name in busy
    }
    total = sum(busy.get(name, 0.0) for name in STAGE_ORDER)
    return {
        "benchmark": "overhead",
        "documents": run["documents"],
        "reviewed": run["reviewed"],
        "pages": run["pages"],
        "llm_calls": run["llm_calls"],
        "wall_s": run["wall_s"],
        "non_llm_ms_per_page": round(total * 1000 / pages, 2),
        "non_llm_ms_per_doc": round(total * 1000 / reviewed, 1),
        "llm_ms_per_call": round(run["llm_busy_s"] * 1000 / max(1, run["llm_calls"]), 1),
        "stages": stages,
        "main_thread": run["main_thread"],
        "docs_per_min": run["docs_per_min"],
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--long-share", type=float, default=0.2)
    args = parser.parse_args(argv)
    emit(measure(args.docs, args.concurrency, args.long_share))
    return 0


if __name__ == "__main__":
    sys.exit(main())
