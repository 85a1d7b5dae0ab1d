"""The resilience policy in the flow, against the local Messages-API test double over HTTP:
cached fallback while the breaker is open, deferral and pick-up by the next run, SIGKILL restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from docreview_testing.samples import generate_samples
from docreview_testing.stub_llm import StubLLM, StubLLMServer
from schemas.policy import ResiliencePolicy
from schemas.tables import ChunkRow, DocumentReviewRow, FindingRow, RunDocumentRow
from tasks.review.resilience import reset_breakers
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inbox")
    generate_samples(folder, count=2)
    return folder


def review(inbox: Path, out: Path, db_url: str, policy: ResiliencePolicy, nothing_reviewed: bool = False, **kw) -> dict:
    """Run the flow and return its report; the flow run ends Failed exactly when ``nothing_reviewed``."""
    from flows.review import review_documents

    try:
        state = review_documents(
            source=str(inbox),
            out_dir=str(out),
            database_url=db_url,
            backend="anthropic",
            routing="all",
            policy=policy,
            return_state=True,
            **kw,
        )
    finally:
        dispose_engines()
    assert state.is_failed() == nothing_reviewed, (state.name, state.message)
    if nothing_reviewed:
        assert state.message.startswith("nothing reviewed: ")
    return json.loads((out / "report.json").read_text())


FAST = dict(
    attempts=2,
    backoff_base_s=0.05,
    backoff_cap_s=0.1,
    jitter_factor=0,
    breaker_failure_threshold=2,
    breaker_reset_timeout_s=300,
)


@pytest.mark.slow  # two flow runs through the Messages API test server: about 30 s
def test_outage_defers_then_next_run_reviews_deferred_first(stub_env, inbox, tmp_path, db_url):
    stub_env.stub.outage(seconds=600)
    policy = ResiliencePolicy(**FAST, breaker_name="t-defer", on_open="cached")
    down = review(inbox, tmp_path / "down", db_url, policy, nothing_reviewed=True)
    m = down["run"]["metrics"]
    assert m["documents_deferred"] == 2 and m["documents_reviewed"] == 0
    assert m["breaker_openings"] >= 1 and m["retries"] >= 1
    assert all("retried by the next run" in d["reason"] for d in down["documents"])

    stub_env.stub.outage(seconds=0)
    reset_breakers()
    up = review(inbox, tmp_path / "up", db_url, ResiliencePolicy(**FAST, breaker_name="t-defer-2"))
    assert up["run"]["metrics"]["documents_reviewed"] == 2
    assert all(d["findings"] for d in up["documents"])


@pytest.mark.slow  # two flow runs through the Messages API test server: about 30 s
def test_breaker_open_uses_cached_result_for_same_content(stub_env, inbox, tmp_path, db_url):
    first = review(inbox, tmp_path / "first", db_url, ResiliencePolicy(**FAST, breaker_name="t-cache-1"))
    assert first["run"]["metrics"]["documents_reviewed"] == 2
    stub_env.stub.outage(seconds=600)
    reset_breakers()
    again = review(inbox, tmp_path / "again", db_url, ResiliencePolicy(**FAST, breaker_name="t-cache-2"), rereview=True)
    m = again["run"]["metrics"]
    assert m["documents_reviewed"] == 2 and m["documents_deferred"] == 0
    assert m["breaker_openings"] >= 1
    assert [len(d["findings"]) for d in again["documents"]] == [len(d["findings"]) for d in first["documents"]]


def test_new_checks_recheck_stored_reviews_without_a_model_call(stub_env, inbox, tmp_path, db_url, monkeypatch):
    """A document stored under other checks (a new judge, a changed fact-check) is not reused as it was:
    its stored review is checked again under the new checks, with no model call (the API is down and the
    policy defers on any failure, so a call would defer the document), then reused as usual."""
    from tasks.check import support

    first_checks = support.FACT_CHECK_VERSION
    first = review(inbox, tmp_path / "first", db_url, ResiliencePolicy(**FAST, breaker_name="t-recheck-1"))
    assert first["run"]["metrics"]["documents_reviewed"] == 2
    monkeypatch.setattr(support, "FACT_CHECK_VERSION", "factcheck-next")
    stub_env.stub.outage(seconds=600)
    reset_breakers()
    policy = ResiliencePolicy(**FAST, breaker_name="t-recheck-2", on_open="defer")
    again = review(inbox, tmp_path / "again", db_url, policy)
    m = again["run"]["metrics"]
    assert m["documents_reviewed"] == 2 and m["documents_deferred"] == 0
    assert m.get("documents_skipped", 0) == 0  # checked again, not reused as stored
    assert m["documents_reviewed_again"] == 2  # the run says how many an upgrade made it review again
    assert first["run"]["metrics"]["documents_reviewed_again"] == 0
    # no review call and no retry: the one call made is the run's prompt-cache warm-up, which the outage failed
    assert m.get("llm_calls", 0) <= 1 and m.get("retries", 0) == 0
    assert [len(d["findings"]) for d in again["documents"]] == [len(d["findings"]) for d in first["documents"]]
    with Session(get_engine(db_url)) as session:
        ledger = {r.prompt_version.split("; checks ")[1] for r in session.exec(select(DocumentReviewRow)).all()}
    dispose_engines()
    assert {v.split("+")[0] for v in ledger} == {first_checks, "factcheck-next"}
    third = review(inbox, tmp_path / "third", db_url, ResiliencePolicy(**FAST, breaker_name="t-recheck-3"))
    assert third["run"]["metrics"]["documents_skipped"] == 2  # same checks now: reused
    assert third["run"]["metrics"]["documents_reviewed_again"] == 0


def test_defer_policy_never_uses_the_cache(stub_env, inbox, tmp_path, db_url):
    review(inbox, tmp_path / "first", db_url, ResiliencePolicy(**FAST, breaker_name="t-nocache-1"))
    stub_env.stub.outage(seconds=600)
    reset_breakers()
    again = review(
        inbox,
        tmp_path / "again",
        db_url,
        ResiliencePolicy(**FAST, breaker_name="t-nocache-2", on_open="defer"),
        nothing_reviewed=True,
        rereview=True,
    )
    assert again["run"]["metrics"]["documents_deferred"] == 2


def _rows(db_url: str) -> dict:
    with Session(get_engine(db_url)) as s:
        out = {
            "findings": sorted(s.exec(select(FindingRow.finding_key)).all()),
            "chunks": s.exec(select(func.count()).select_from(ChunkRow)).one(),
            "reviews": sorted(s.exec(select(DocumentReviewRow.sha256)).all()),
        }
    dispose_engines()
    return out


@pytest.mark.slow
def test_sigkill_halfway_then_restart_equals_one_clean_run(tmp_path):
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=8)
    with StubLLMServer(stub=StubLLM()) as server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "test-key-not-secret",
            "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
        }
        env.pop("PREFECT_API_URL", None)

        def cli(db: Path, out: Path) -> subprocess.Popen:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cli",
                    "review",
                    str(inbox),
                    "--out",
                    str(out),
                    "--db",
                    f"sqlite:///{db}",
                    "--backend",
                    "anthropic",
                    "--routing",
                    "all",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

        clean_db = tmp_path / "clean.db"
        assert cli(clean_db, tmp_path / "clean").wait(timeout=600) == 0
        needed = server.stub.answers  # model answers a full review of the batch takes

        # All but one of those answers: some documents are stored, the last one can never be, so the
        # kill lands halfway whatever the machine's speed.
        server.stub.hold_first_token(allow=needed - 1)
        killed_db = tmp_path / "killed.db"
        proc = cli(killed_db, tmp_path / "killed")
        try:
            deadline = time.monotonic() + 300  # ends a hang only
            while time.monotonic() < deadline and proc.poll() is None:  # kill once some are stored
                time.sleep(0.1)
                if killed_db.exists():
                    try:
                        done = _rows(f"sqlite:///{killed_db}")["reviews"]
                    except OperationalError:  # the run is still creating its tables
                        continue
                    if 1 <= len(done) < 8:
                        break
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            server.stub.release_first_token()
        partial = _rows(f"sqlite:///{killed_db}")
        assert 1 <= len(partial["reviews"]) < 8, "the run must be killed halfway"
        assert cli(killed_db, tmp_path / "restart").wait(timeout=600) == 0

    assert _rows(f"sqlite:///{killed_db}") == _rows(f"sqlite:///{clean_db}")
    with Session(get_engine(f"sqlite:///{killed_db}")) as s:
        statuses = s.exec(
            select(RunDocumentRow.status).where(
                RunDocumentRow.run_id.in_(
                    select(RunDocumentRow.run_id).order_by(RunDocumentRow.updated_at.desc()).limit(1)
                )
            )
        ).all()
    dispose_engines()
    assert statuses and all(st == "reviewed" for st in statuses)
