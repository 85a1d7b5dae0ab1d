"""Throughput against the bound set by LLM concurrency and call latency.

``python -m benchmarks.throughput [--docs 200] [--concurrency 16] [--ttft-ms 1000] [--token-ms 5]``
reviews a mixed workload (:func:`docreview_testing.samples.generate_workload`: 80 % short documents of 1-3
pages, 20 % long ones of 30-36 pages) with the ``anthropic`` backend against the local
Messages-API test double (``docreview stub-llm`` in a subprocess, over HTTP, streaming) whose
latency is ``ttft_ms`` before the first token plus ``token_ms`` per output token. The defaults
(1 s, 5 ms ≈ 200 tokens/s) keep a 200-document run to a few minutes.

With ``C`` calls allowed at once (``ResiliencePolicy.llm_concurrency``), no pipeline can review
more than ``bound = C × 60 / mean_call_s / calls_per_doc`` documents per minute, where
``mean_call_s`` (mean call latency, seconds) and ``calls_per_doc`` (calls / reviewed documents)
are measured from this run's ``llm_calls`` rows. ``ratio = docs_per_min / bound`` (target ≥ 0.95)
says how close the pipeline comes to keeping all ``C`` calls busy; ``docs_per_min`` uses the
flow's own wall time (``metrics.wall_s``: run start to last document, without the Prefect
server's start-up; ``process_wall_s`` includes it).

Every call to the API counts against ``C``: the review's, the model verifier's (fact-check, on
by default for model backends; ``--no-verifier`` leaves it out) and the prompt-cache warm-up. The
test double runs in this process (:class:`benchmarks._harness.StubThread`) and counts the model
requests it is answering: ``api_max_in_flight`` (the most at once, checked ≤ ``C``: the exit status
is 1 otherwise) and ``api_requests`` (how many reached it, against ``llm_calls`` recorded). A
ratio above 1 means the bound was broken, not beaten: before the verifier's calls held slots,
they ran beside the review calls (50 at once under a cap of 16 in a 40-document run) and the
ratio read 1.87 there, 2.23 over 200 documents.

``overhead_share = 1 - ratio = (wall - bound_time) / wall`` where ``bound_time = calls ×
mean_call_s / C`` is the wall time the same calls need with every slot always busy: the share of
the run's wall time not explained by LLM latency (target ≤ 0.05). ``main_thread_busy_share`` is
the share of the flow's main thread (it starts the document pipelines and waits for them) not
spent waiting: near 1 it is the critical path. ``busy_s`` is task-body time per stage summed over
threads (see :mod:`benchmarks._harness`). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import StubThread, emit, llm_stats, run_review, workload


def measure(
    docs: int,
    concurrency: int,
    ttft_ms: float,
    token_ms: float,
    long_share: float = 0.2,
    workdir: Path | None = None,
    cache: bool = True,
    name: str = "throughput",
    profile: bool = False,
    verifier: bool = True,
) -> dict[str, Any]:
    """Run the benchmark and return its result line (see the module docstring for each key).

    ``profile=True`` writes a pyinstrument profile of the flow's main thread to
    ``workdir/profile.txt`` (give a ``workdir`` to keep it).
    """
    source = workload(docs, long_share, cache=cache)
    try:
        with tempfile.TemporaryDirectory(prefix="docreview-bench-") as tmp:
            work = workdir or Path(tmp)
            with StubThread(ttft_ms, token_ms) as served:
                env = {**served.env(), "DOCREVIEW_VERIFIER_ENABLED": "true" if verifier else "false"}
                run = run_review(
                    source, work, "anthropic", routing="auto", concurrency=concurrency, env=env, profile=profile
                )
                api = served.stub
                with api._lock:
                    api_max_in_flight = api.max_in_flight
                    api_requests = api.requests.get("/v1/messages", 0)
            calls = llm_stats(run["db_url"], run["run_id"])
    finally:
        if not cache:
            shutil.rmtree(source, ignore_errors=True)
    m = run["metrics"]
    reviewed = int(m["documents_reviewed"])
    wall = float(m["wall_s"])
    calls_per_doc = calls["calls"] / reviewed if reviewed else 0.0
    bound = concurrency * 60 / calls["mean_call_s"] / calls_per_doc if calls["calls"] and reviewed else 0.0
    docs_per_min = reviewed * 60 / wall if wall else 0.0
    bound_time = calls["busy_s"] / concurrency
    return {
        "benchmark": name,
        "documents": docs,
        "reviewed": reviewed,
        "failed": int(m["documents_failed"]),
        "deferred": int(m["documents_deferred"]),
        "pages": int(m["pages_total"]),
        "concurrency": concurrency,
        "verifier": verifier,
        "ttft_ms": ttft_ms,
        "token_ms": token_ms,
        "llm_calls": calls["calls"],
        "api_requests": api_requests,
        "api_max_in_flight": api_max_in_flight,
        "calls_per_doc": round(calls_per_doc, 3),
        "mean_call_s": round(calls["mean_call_s"], 3),
        "docs_per_min": round(docs_per_min, 2),
        "bound_docs_per_min": round(bound, 2),
        "ratio": round(docs_per_min / bound, 3) if bound else 0.0,
        "overhead_share": round((wall - bound_time) / wall, 3) if wall else 0.0,
        "wall_s": round(wall, 2),
        "process_wall_s": run["process_wall_s"],
        "main_thread_busy_share": round(1 - run["main_thread"].get("idle", 0.0), 3),
        "llm_busy_s": round(calls["busy_s"], 3),
        "main_thread": run["main_thread"],
        "busy_s": run["busy_s"],
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line; exit status 0 unless the run broke."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--ttft-ms", type=float, default=1000.0)
    parser.add_argument("--token-ms", type=float, default=5.0)
    parser.add_argument("--long-share", type=float, default=0.2)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the run's database, report and profile here")
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile of the flow's main thread")
    parser.add_argument("--no-verifier", action="store_true", help="without the model verifier's fact-check calls")
    args = parser.parse_args(argv)
    line = emit(
        measure(
            args.docs,
            args.concurrency,
            args.ttft_ms,
            args.token_ms,
            args.long_share,
            args.workdir,
            profile=args.profile,
            verifier=not args.no_verifier,
        )
    )
    if line["api_max_in_flight"] > line["concurrency"]:  # the cap is how an operator stays under rate limits
        raise AssertionError(
            f"{line['api_max_in_flight']} model requests in flight at the API, above llm_concurrency={line['concurrency']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
