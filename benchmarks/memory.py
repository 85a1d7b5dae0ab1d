"""Peak RSS of a long run: it must stay flat in the number of documents.

``python -m benchmarks.memory [--docs 1000] [--every 250] [--backend rules]`` reviews ``--docs``
distinct PDFs in one flow run (in a child process, :mod:`benchmarks._harness`) and records that
process's resident set size (current and peak, MiB, from ``/proc/self/status``) each time
``--every`` documents have ended. The PDFs are copies of a 40-document mixed workload
(:func:`docreview_testing.samples.generate_workload`, 5 % long documents) each with a distinct trailing PDF
comment, so every file has its own sha256 and is a new document to the pipeline (rendering 1,000
PDFs would take longer than reviewing them). ``--backend rules`` needs no server; ``anthropic``
runs against the local Messages-API test double at zero latency.

``growth`` = peak RSS at the last checkpoint / peak RSS at the first (flat: close to 1.0).
``children_peak_rss_mb`` is the largest extraction child (each document is extracted in its own
limited process). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import StubProcess, emit, run_review, workload


def make_copies(base: Path, docs: int, out: Path) -> Path:
    """Write ``docs`` distinct PDFs into ``out``: the PDFs of ``base`` in turn, each with a
    trailing ``%docreview-copy N`` comment line after ``%%EOF`` (readers ignore it)."""
    out.mkdir(parents=True, exist_ok=True)
    pdfs = sorted(base.glob("*.pdf"))
    for i in range(docs):
        src = pdfs[i % len(pdfs)]
        (out / f"copy_{i + 1:05d}_{src.name}").write_bytes(src.read_bytes() + f"%docreview-copy {i}\n".encode())
    return out


def measure(docs: int, every: int, backend: str = "rules", cache: bool = True, base_docs: int = 40) -> dict[str, Any]:
    """Run the benchmark; returns the result line (see the module docstring)."""
    base = workload(base_docs, 0.05, cache=cache)
    with tempfile.TemporaryDirectory(prefix="docreview-memory-") as tmp:
        source = make_copies(base, docs, Path(tmp) / "inbox")
        if not cache:
            shutil.rmtree(base, ignore_errors=True)
        with contextlib.ExitStack() as stack:
            env = stack.enter_context(StubProcess()).env() if backend == "anthropic" else {}
            run = run_review(source, Path(tmp) / "run", backend, env=env, rss_every=every, timeout_s=6 * 3600)
    rss = {int(k): v for k, v in run["rss"].items()}
    first, last = (rss[min(rss)], rss[max(rss)]) if rss else ({}, {})
    growth = round(last["peak_rss_mb"] / first["peak_rss_mb"], 3) if rss else None
    return {
        "benchmark": "memory",
        "documents": docs,
        "backend": backend,
        "reviewed": int(run["metrics"]["documents_reviewed"]),
        "pages": int(run["metrics"]["pages_total"]),
        "rss_mb": {str(k): v for k, v in sorted(rss.items())},
        "rss_end": run["rss_end"],
        "growth": growth,
        "children_peak_rss_mb": run["children_peak_rss_mb"],
        "wall_s": run["metrics"]["wall_s"],
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--backend", choices=("rules", "anthropic"), default="rules")
    args = parser.parse_args(argv)
    emit(measure(args.docs, args.every, args.backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
