"""The review flow on Dask (prefect-dask, a local cluster of worker processes) gives the same
results as on Prefect's thread pool."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session, select

from docreview_testing.reaper import start_owned
from docreview_testing.samples import generate_samples
from flows.runners import LOCAL_DASK_WORKERS, make_task_runner, prefect_api_for_workers
from schemas.tables import FindingRow, LLMCallRow, RunDocumentRow
from tasks.store.persist import PG_MAX_OVERFLOW, PG_POOL_SIZE, dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _review(runner: str, inbox: Path, out: Path, db: str, backend: str = "rules") -> dict:
    from flows.review import review_documents

    flow = review_documents.with_options(task_runner=make_task_runner(runner))
    with prefect_api_for_workers():
        return flow(source=str(inbox), out_dir=str(out), database_url=db, backend=backend)


def _findings(db: str) -> dict[str, list[tuple[str, str, str]]]:
    """Per document: sorted (finding_key, verdict, values JSON)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    with Session(get_engine(db)) as s:
        for f in s.exec(select(FindingRow)).all():
            out.setdefault(f.sha256, []).append((f.finding_key, f.verdict, json.dumps(f.values, sort_keys=True)))
    return {sha: sorted(rows) for sha, rows in out.items()}


def _statuses(result: dict) -> dict[str, str]:
    return {d["file_name"]: d["status"] for d in result["documents"]}


def _wait_for_port(port: int, proc: subprocess.Popen, deadline_s: float) -> None:
    """Block until 127.0.0.1:``port`` accepts a connection; fail if ``proc`` exits or the deadline
    (which only ends a hang) passes."""
    import socket

    deadline = time.monotonic() + deadline_s
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert proc.poll() is None, f"the process listening on {port} exited ({proc.returncode})"
        assert time.monotonic() < deadline, f"nothing listens on {port} after {deadline_s:g} s"
        time.sleep(0.2)


@pytest.mark.slow  # a local Dask cluster starts worker processes: about a minute on two cores
def test_dask_runner_matches_the_thread_runner(tmp_path):
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=3)
    threads_db, dask_db = f"sqlite:///{tmp_path / 'threads.db'}", f"sqlite:///{tmp_path / 'dask.db'}"
    by_threads = _review("thread", inbox, tmp_path / "out-threads", threads_db)
    by_dask = _review("dask", inbox, tmp_path / "out-dask", dask_db)
    assert _statuses(by_dask) == _statuses(by_threads) == {p.name: "reviewed" for p in inbox.glob("*.pdf")}
    expected = _findings(threads_db)
    assert len(expected) == 3 and all(expected.values())
    assert _findings(dask_db) == expected  # same findings, verdicts and values per document
    for key in ("findings_total", "verification_rate", "pages_total", "chunks_total"):
        assert by_dask["metrics"][key] == by_threads["metrics"][key], key
    dispose_engines()


def test_make_task_runner_rejects_bad_combinations():
    with pytest.raises(ValueError, match="unknown task runner"):
        make_task_runner("processes")
    with pytest.raises(ValueError, match="needs --task-runner dask"):
        make_task_runner("thread", "tcp://127.0.0.1:8786")
    assert type(make_task_runner("dask", "tcp://127.0.0.1:8786")).__name__ == "ReviewDaskTaskRunner"


@pytest.mark.slow
@pytest.mark.integration
def test_dask_with_a_model_backend_on_postgres(tmp_path, pg_database, stub_env):
    """Anthropic backend (the local test double) on Dask: backends are rebuilt in the workers
    (no client or key pickled), failed attempts are retried and recorded from the workers, and
    the database connections stay within each process's pool."""
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=3)
    threads_db, dask_db = pg_database("docreview_dask"), pg_database("docreview_dask")
    by_threads = _review("thread", inbox, tmp_path / "out-threads", threads_db, backend="anthropic")

    stub_env.stub.enqueue("overloaded", times=2)  # the next two calls fail with 529
    # Model answers wait until the sampler has seen the run's connections: the peak is observed
    # while the run holds them, not by a sample that happens to fall inside a short run.
    stub_env.stub.hold_first_token()
    dbname = dask_db.rsplit("/", 1)[1]
    peak = [0]
    done = threading.Event()

    def sample_connections() -> None:
        from sqlalchemy import create_engine

        # autocommit: inside one transaction pg_stat_activity would show one snapshot
        admin = create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            while not done.wait(0.2):
                n = conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d"), {"d": dbname})
                peak[0] = max(peak[0], n.scalar_one())
                if peak[0]:
                    stub_env.stub.release_first_token()
        admin.dispose()

    sampler = threading.Thread(target=sample_connections)
    sampler.start()
    try:
        by_dask = _review("dask", inbox, tmp_path / "out-dask", dask_db, backend="anthropic")
    finally:
        done.set()
        sampler.join()
        stub_env.stub.release_first_token()
    assert _statuses(by_dask) == _statuses(by_threads) == {p.name: "reviewed" for p in inbox.glob("*.pdf")}
    assert _findings(dask_db) == _findings(threads_db)
    with Session(get_engine(dask_db)) as s:
        failed = s.exec(select(LLMCallRow.error_class).where(LLMCallRow.error_class.is_not(None))).all()
        runs = s.exec(select(RunDocumentRow.run_id).distinct()).all()
    assert len(failed) == 2 and len(runs) == 1  # the two 529s, recorded by the workers that got them
    assert 0 < peak[0] <= (1 + LOCAL_DASK_WORKERS) * (PG_POOL_SIZE + PG_MAX_OVERFLOW)
    dispose_engines()


@pytest.mark.slow
@pytest.mark.integration
def test_dask_on_a_separately_started_scheduler_matches_the_thread_runner(tmp_path):
    """``--dask-address``: a scheduler and a worker started on their own (``dask scheduler`` /
    ``dask worker`` with ``--preload flows.runners``) review the same findings as the threads."""
    import subprocess
    import sys

    from tests.conftest import free_port

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    port = free_port(5300, 5399)
    dask = str(Path(sys.executable).parent / "dask")
    logs = [open(tmp_path / name, "w") for name in ("scheduler.log", "worker.log")]  # noqa: SIM115
    procs = [
        start_owned(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
                "--preload",
                "flows.runners",
            ],
            stdout=logs[0],
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        _wait_for_port(port, procs[0], deadline_s=120)  # the scheduler listens before a worker joins
        procs.append(
            start_owned(
                [
                    dask,
                    "worker",
                    f"tcp://127.0.0.1:{port}",
                    "--nthreads",
                    "2",
                    "--no-dashboard",
                    "--preload",
                    "flows.runners",
                ],
                stdout=logs[1],
                stderr=subprocess.STDOUT,
            )
        )
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=120) as client:
            client.wait_for_workers(1, timeout=120)  # the flow's tasks have somewhere to run
        threads_db, dask_db = f"sqlite:///{tmp_path / 'threads.db'}", f"sqlite:///{tmp_path / 'dask.db'}"
        by_threads = _review("thread", inbox, tmp_path / "out-threads", threads_db)
        from flows.review import review_documents

        flow = review_documents.with_options(
            task_runner=make_task_runner("dask", dask_address=f"tcp://127.0.0.1:{port}")
        )
        with prefect_api_for_workers():
            by_dask = flow(source=str(inbox), out_dir=str(tmp_path / "out-dask"), database_url=dask_db, backend="rules")
        assert _statuses(by_dask) == _statuses(by_threads) == {p.name: "reviewed" for p in inbox.glob("*.pdf")}
        assert _findings(dask_db) == _findings(threads_db) and _findings(dask_db)
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for f in logs:
            f.close()
        dispose_engines()
