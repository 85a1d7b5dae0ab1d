"""Scale-out on one machine: a Prefect server on PostgreSQL, a process work pool, two workers, a
deployment of review-documents from this checkout, and two flow runs over the same source at
once, writing into one PostgreSQL results database. Claims split the documents between them."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, create_engine, func, select

from docreview_testing.samples import generate_samples
from docreview_testing.stub_llm import StubLLM, StubLLMServer
from schemas.tables import DocumentClaimRow, DocumentReviewRow, LLMCallRow, RunDocumentRow, RunRow
from tasks.review.backends.anthropic_backend import WARMUP_CHUNK_INDEX
from tests.conftest import free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
POOL = "docreview-scale-test"

_DEPLOY_AND_RUN = """
import asyncio, json, sys
from prefect import flow
from prefect.deployments import run_deployment
from prefect.flow_runs import wait_for_flow_run
root, pool, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
deployment_id = flow.from_source(source=root, entrypoint="flows/review.py:review_documents").deploy(
    name="scale-out", work_pool_name=pool, print_next_steps=False)
runs = [run_deployment("review-documents/scale-out", parameters=p, timeout=0) for p in params]

async def wait_all():
    return await asyncio.gather(*[wait_for_flow_run(r.id, timeout=540, poll_interval=2) for r in runs])

done = asyncio.run(wait_all())
print(json.dumps([{"id": str(r.id), "state": r.state.type.value, "message": r.state.message} for r in done]))
"""


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A background process in its own process group, output to ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent, start_new_session=True
        )


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group (the worker's flow-run children too), then SIGKILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_for_claim_holders(url: str, runs: int, driver: subprocess.Popen, deadline_s: float) -> set[str]:
    """Poll the results database until ``runs`` distinct runs hold document claims; returns their ids.
    The deadline only ends a hang (a run that never starts): the flow runs' own timing decides nothing."""
    engine = create_engine(url)
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            try:
                with Session(engine) as s:
                    holders = set(s.exec(select(DocumentClaimRow.run_id)).all())
            except DBAPIError:  # the table does not exist before the first run's migrations
                holders = set()
            if len(holders) >= runs or driver.poll() is not None or time.monotonic() > deadline:
                return holders
            time.sleep(0.5)
    finally:
        engine.dispose()


def test_two_workers_split_a_batch_without_reviewing_a_document_twice(tmp_path, pg_database):
    prefect_db = pg_database("prefect_scale", driver="asyncpg")  # the Prefect server's own database
    results_db = pg_database("docreview_scale")  # docreview's results, shared by both flow runs
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=6)
    shas = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in inbox.glob("*.pdf"))
    port = free_port(4300, 4399)
    api = f"http://127.0.0.1:{port}/api"
    home = tmp_path / "prefect-home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    server_env = {
        **base,
        "PREFECT_HOME": str(home),
        "PREFECT_API_DATABASE_CONNECTION_URL": prefect_db,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    }
    procs: list[subprocess.Popen] = []
    with StubLLMServer(stub=StubLLM()) as llm:
        # Every model answer waits until both flow runs hold claims: the runs overlap however far apart
        # the workers start them. One LLM call (per run) and two extractions at a time: a run has at most
        # 4 of the 6 documents in flight (flows.pipeline._size_slots), so the other run always finds some.
        llm.stub.hold_limit_s = 900.0
        llm.stub.hold_first_token()
        client_env = {
            **base,
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": api,
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "ANTHROPIC_BASE_URL": llm.url,
            "ANTHROPIC_API_KEY": "test-key-not-secret",
            "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
            "DOCREVIEW_MAX_WORKERS": "2",
            # a held answer must not time out before both runs hold claims on a loaded machine
            "DOCREVIEW_LLM_TIMEOUT_S": "900",
        }
        try:
            procs.append(
                _start(
                    [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    server_env,
                    tmp_path / "server.log",
                )
            )
            deadline = time.monotonic() + 240
            while True:
                try:
                    with urllib.request.urlopen(f"{api}/health", timeout=2) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                assert procs[0].poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()[
                    -3000:
                ]
                time.sleep(1)
            subprocess.run(
                [str(BIN / "prefect"), "work-pool", "create", POOL, "--type", "process"],
                env=client_env,
                check=True,
                capture_output=True,
                timeout=120,
            )
            for name in ("worker-a", "worker-b"):  # --limit 1: each worker takes one flow run
                procs.append(
                    _start(
                        [
                            str(BIN / "prefect"),
                            "worker",
                            "start",
                            "--pool",
                            POOL,
                            "--type",
                            "process",
                            "--name",
                            name,
                            "--limit",
                            "1",
                        ],
                        client_env,
                        tmp_path / f"{name}.log",
                    )
                )
            params = [
                {
                    "source": str(inbox),
                    "out_dir": str(tmp_path / f"out-{i}"),
                    "database_url": results_db,
                    "backend": "anthropic",
                    # each run its own slot: under the server's global limit (scope auto) a run's held
                    # answer keeps the one slot and the other run waits on it for its cache warm-up,
                    # before its first claim, so one run held every claim (seen in CI and locally)
                    "policy": {"llm_concurrency": 1, "concurrency_scope": "process"},
                }
                for i in range(2)
            ]
            procs.append(
                _start(
                    [sys.executable, "-c", _DEPLOY_AND_RUN, str(ROOT), POOL, json.dumps(params)],
                    client_env,
                    tmp_path / "driver.log",
                )
            )
            driver = procs[-1]
            holders = _wait_for_claim_holders(results_db, 2, driver, deadline_s=600)
            llm.stub.release_first_token()
            driver_rc = driver.wait(timeout=720)
        finally:
            for proc in reversed(procs):
                _stop(proc)
    driver_log = (tmp_path / "driver.log").read_text()
    assert driver_rc == 0, driver_log[-3000:]
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("worker-a", "worker-b")}
    assert len(holders) == 2, (holders, {name: text[-2500:] for name, text in logs.items()})
    flow_runs = json.loads(driver_log.strip().splitlines()[-1])
    assert [r["state"] for r in flow_runs] == ["COMPLETED", "COMPLETED"], flow_runs
    for name, text in logs.items():  # each worker ran exactly one of the two flow runs
        assert sum(f"flow-run/{r['id']}" in text for r in flow_runs) == 1, (name, text[-2000:])

    engine = create_engine(results_db)
    try:
        with Session(engine) as s:
            runs = s.exec(select(RunRow.id, RunRow.flow_run_id)).all()
            full = s.exec(
                select(RunDocumentRow.sha256, RunDocumentRow.run_id).where(
                    RunDocumentRow.status == "reviewed", RunDocumentRow.reused.is_(False)
                )
            ).all()
            per_run = s.exec(select(RunDocumentRow.run_id, RunDocumentRow.status, RunDocumentRow.reason)).all()
            ledger = s.exec(select(DocumentReviewRow.sha256)).all()
            calls = s.exec(
                select(LLMCallRow.sha256, LLMCallRow.chunk_index, func.count(LLMCallRow.run_id.distinct()))
                .where(LLMCallRow.chunk_index != WARMUP_CHUNK_INDEX)  # per run
                .group_by(LLMCallRow.sha256, LLMCallRow.chunk_index)
            ).all()
    finally:
        engine.dispose()
    assert sorted(f for _, f in runs) == sorted(r["id"] for r in flow_runs)  # both runs, one database
    assert sorted(sha for sha, _ in full) == shas  # every document reviewed exactly once, none missed
    assert sorted(ledger) == shas
    assert calls and all(n == 1 for _, _, n in calls)  # no chunk sent to the model by both runs
    assert {run for _, run in full} == {run for run, _ in runs}  # both runs reviewed some of the batch
    assert len(per_run) == 2 * len(shas)  # every object ended in each run with a state
    # held: named when the other run's claim row could be read, "another run" when its claim or release held the
    # row's lock at that instant (SKIP LOCKED, tasks/store/claims.py); both end the document deferred to be reused
    held = ("being reviewed by run ", "being reviewed by another run; the next run reuses that review")
    for run, status, reason in per_run:
        assert status == "reviewed" or (status == "deferred" and reason.startswith(held)), (
            run,
            status,
            reason,
        )
