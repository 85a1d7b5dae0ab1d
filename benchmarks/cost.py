"""What the LLM is sent per document: decision-point routing with prompt caching vs every chunk uncached.

``python -m benchmarks.cost [--docs 40]`` reviews the mixed workload twice against the local
Messages-API test double (zero latency; its usage figures are estimates of about 4 characters
a token and it simulates the prompt cache of the stable prefix):

- ``routed_cached``: ``--routing decision-points`` (only the chunks the router sends ``deep``),
  prompt caching as the backend does it (the system prompt and tool schema, one breakpoint);
- ``all_uncached``: ``--routing all`` (every chunk), priced as if nothing were cached: every
  input token (cache reads and writes included) at the base input price.

Per document: ``chars`` (characters of the distinct chunks called, whole chunks: where the router
sends only ranges of a chunk, the input tokens show the difference),
``input_tokens`` (all input tokens, cached or not), ``cache_read_tokens``, ``output_tokens`` and
``cost_usd`` (USD, the backend's price table for the model: ``tasks.review.backends.anthropic_backend``).
Ratios are ``routed_cached / all_uncached``. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import StubProcess, emit, llm_stats, run_review, workload

MODEL = "claude-sonnet-4-6"


def _chars_sent(db_url: str, run_id: str) -> int:
    """Characters of chunk text in the distinct chunks the run called the LLM for."""
    from sqlalchemy import text
    from sqlmodel import Session

    from tasks.store.persist import dispose_engines, get_engine

    with Session(get_engine(db_url)) as session:
        value = session.exec(
            text(
                "SELECT COALESCE(SUM(LENGTH(c.text)), 0) FROM chunks c JOIN "
                "(SELECT DISTINCT sha256, chunk_index FROM llm_calls WHERE run_id = :run) k "
                "ON c.sha256 = k.sha256 AND c.chunk_index = k.chunk_index"
            ),
            params={"run": run_id},
        ).one()[0]
    dispose_engines()
    return int(value)


def _one(source: Path, routing: str, uncached: bool) -> dict[str, Any]:
    from tasks.review.backends.anthropic_backend import price_for

    with tempfile.TemporaryDirectory(prefix="docreview-cost-") as tmp, StubProcess() as stub:
        run = run_review(source, Path(tmp), "anthropic", routing=routing, env=stub.env())
        calls = llm_stats(run["db_url"], run["run_id"])
        chars = _chars_sent(run["db_url"], run["run_id"])
    docs = max(1, int(run["metrics"]["documents_reviewed"]))
    all_input = calls["input_tokens"] + calls["cache_read_tokens"] + calls["cache_write_tokens"]
    cost = calls["cost_usd"]
    if uncached:
        pin, pout, _, _ = price_for(MODEL)
        cost = (all_input * pin + calls["output_tokens"] * pout) / 1_000_000
    return {
        "routing": routing,
        "calls": calls["calls"],
        "documents": docs,
        "chars_per_doc": round(chars / docs, 1),
        "input_tokens_per_doc": round(all_input / docs, 1),
        "cache_read_tokens_per_doc": round(calls["cache_read_tokens"] / docs, 1) if not uncached else 0.0,
        "output_tokens_per_doc": round(calls["output_tokens"] / docs, 1),
        "cost_usd_per_doc": round(cost / docs, 5),
    }


def measure(docs: int, long_share: float = 0.2, cache: bool = True) -> dict[str, Any]:
    """Both runs on the same workload; returns the result line (see the module docstring)."""
    source = workload(docs, long_share, cache=cache)
    try:
        routed = _one(source, "decision-points", uncached=False)
        everything = _one(source, "all", uncached=True)
    finally:
        if not cache:
            shutil.rmtree(source, ignore_errors=True)

    def ratio(key: str) -> float:
        return round(routed[key] / everything[key], 3) if everything[key] else 0.0

    return {
        "benchmark": "cost",
        "documents": docs,
        "model": MODEL,
        "routed_cached": routed,
        "all_uncached": everything,
        "chars_ratio": ratio("chars_per_doc"),
        "input_tokens_ratio": ratio("input_tokens_per_doc"),
        "cost_ratio": ratio("cost_usd_per_doc"),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--long-share", type=float, default=0.2)
    args = parser.parse_args(argv)
    emit(measure(args.docs, args.long_share))
    return 0


if __name__ == "__main__":
    sys.exit(main())
