"""Fault-injection benchmark: nothing lost, nothing duplicated under a storm of faults.

Against the local Messages-API test double (``docreview stub-llm``, answers from the rules
extractor — a test double, not a model): N generated contracts, a share of calls answered 529
``overloaded_error``, latency spikes, a full outage window, and a SIGKILL of the review run
half-way followed by restarts until every document is reviewed (deferred documents are taken up
first by the next run). Prints one JSON line::

    {"benchmark": "faults", "documents", "reviewed", "deferred", "failed", "lost", "duplicates",
     "breaker_openings", "breaker_closed_after_outage", "retries", "runs", "wall_s"}

Run 1 meets the outage (its breaker opens, then half-opens and closes after the window);
run 2 is killed with SIGKILL half-way; later runs restart until nothing is deferred.

``lost`` = documents with no terminal state in the last run; ``duplicates`` = rows sharing a
natural key (findings by document/clause/quote, run documents by run/source, reviews by
document/prompt/model), which the unique constraints should make impossible.

Run alone: ``python -m benchmarks.faults [--documents 200] [--outage-s 60] [--p529 0.3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, text
from sqlmodel import Session, select


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, timeout_s: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def _reviewed(db_url: str) -> int:
    from schemas.tables import DocumentReviewRow
    from tasks.store.persist import dispose_engines, get_engine

    try:
        with Session(get_engine(db_url)) as s:
            return s.exec(select(func.count()).select_from(DocumentReviewRow)).one()
    except Exception:
        return 0
    finally:
        dispose_engines()


def run(documents: int, outage_s: float, p529: float, workdir: Path) -> dict:
    """Run the scenario in ``workdir``; returns the result line as a dict."""
    import httpx

    from docreview_testing.samples import generate_samples
    from schemas.tables import DocumentReviewRow, FindingRow, RunDocumentRow, RunMetricRow, RunRow
    from tasks.store.persist import dispose_engines, get_engine

    inbox = workdir / "inbox"
    generate_samples(inbox, count=documents)
    db_url = f"sqlite:///{workdir / 'faults.db'}"
    port = _free_port()
    stub_url = f"http://127.0.0.1:{port}"
    stub = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "stub-llm",
            "--port",
            str(port),
            "--ttft-ms",
            "50",
            "--token-ms",
            "0.2",
            "--fault",
            f"overloaded@{p529}",
            "--fault",
            "spike:1500@0.02",
            "--seed",
            "11",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    policy = workdir / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "attempts": 5,
                "backoff_base_s": 0.2,
                "backoff_cap_s": 2.0,
                "jitter_factor": 0.5,
                "breaker_failure_threshold": 8,
                "breaker_reset_timeout_s": 5.0,
                "on_open": "cached",
                "llm_concurrency": 16,
            }
        )
    )
    env = {
        **os.environ,
        "DOCREVIEW_PREFECT_SERVER": "temporary",  # each review process its own Prefect server, none left running
        "ANTHROPIC_BASE_URL": stub_url,
        "ANTHROPIC_API_KEY": "test-key-not-secret",
        "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
        "DOCREVIEW_LLM_TIMEOUT_S": "30",
    }

    def review(out: str) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "review",
                str(inbox),
                "--out",
                str(workdir / out),
                "--db",
                db_url,
                "--backend",
                "anthropic",
                "--policy",
                str(policy),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    started = time.monotonic()
    runs = 0
    try:
        _wait_http(f"{stub_url}/health")
        # Run 1: a full outage starts once a quarter of the documents are reviewed.
        proc = review("run1")
        runs += 1
        outage_started = False
        while proc.poll() is None:
            time.sleep(0.5)
            if not outage_started and _reviewed(db_url) >= documents // 4:
                httpx.post(f"{stub_url}/stub/outage", json={"seconds": outage_s}, timeout=5)
                outage_started = True
        if proc.wait() != 0:
            raise RuntimeError("review run 1 failed")
        # Run 2 takes up the deferred documents first; it is killed (SIGKILL) half-way.
        before = _reviewed(db_url)
        proc = review("run2")
        runs += 1
        while proc.poll() is None:
            time.sleep(0.5)
            if _reviewed(db_url) >= before + max(1, (documents - before) // 2):
                os.killpg(proc.pid, signal.SIGKILL)
                break
        proc.wait()
        # Restarts until nothing is deferred.
        for attempt in range(3, 9):
            runs += 1
            code = review(f"run{attempt}").wait()
            if code != 0:
                raise RuntimeError(f"review run {attempt} exited {code}")
            report = json.loads((workdir / f"run{attempt}" / "report.json").read_text())
            if report["run"]["metrics"]["documents_deferred"] == 0:
                break
    finally:
        os.killpg(stub.pid, signal.SIGTERM)
        stub.wait(timeout=10)
    wall = time.monotonic() - started

    engine = get_engine(db_url)
    with Session(engine) as s:
        last_run = s.exec(select(RunRow.id).order_by(RunRow.started_at.desc())).first()
        final = s.exec(select(RunDocumentRow).where(RunDocumentRow.run_id == last_run)).all()
        metrics = s.exec(select(RunMetricRow)).all()
        dup_findings = s.exec(
            text("SELECT COUNT(*) FROM (SELECT finding_key FROM findings GROUP BY finding_key HAVING COUNT(*) > 1)")
        ).one()[0]
        dup_run_docs = s.exec(
            text(
                "SELECT COUNT(*) FROM (SELECT run_id, source FROM run_documents GROUP BY run_id, source HAVING COUNT(*) > 1)"
            )
        ).one()[0]
        dup_reviews = s.exec(
            text(
                "SELECT COUNT(*) FROM (SELECT sha256, prompt_version, model FROM document_reviews "
                "GROUP BY sha256, prompt_version, model HAVING COUNT(*) > 1)"
            )
        ).one()[0]
        reviewed_docs = s.exec(select(func.count()).select_from(DocumentReviewRow)).one()
        findings = s.exec(select(func.count()).select_from(FindingRow)).one()
    dispose_engines()
    status = [d.status for d in final]
    summed = lambda name: int(sum(m.value for m in metrics if m.name == name))  # noqa: E731
    return {
        "benchmark": "faults",
        "documents": documents,
        "reviewed": status.count("reviewed"),
        "deferred": status.count("deferred"),
        "failed": status.count("failed"),
        "lost": documents - len(final),
        "duplicates": dup_findings + dup_run_docs + dup_reviews,
        "documents_with_review": reviewed_docs,
        "findings": findings,
        "breaker_openings": summed("breaker_openings"),
        "breaker_closed_after_outage": summed("breaker_closings") >= 1,
        "retries": summed("retries"),
        "runs": runs,
        "killed_run": True,
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; prints one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--outage-s", type=float, default=60.0)
    parser.add_argument("--p529", type=float, default=0.3)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="docreview-faults-") as tmp:
        result = run(args.documents, args.outage_s, args.p529, args.workdir or Path(tmp))
    print(json.dumps(result))
    return 0 if result["lost"] == 0 and result["duplicates"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
