"""The same pipeline code on PostgreSQL (the real server on 127.0.0.1:5432)."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import func, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, select

from docreview_testing.samples import generate_samples
from schemas.tables import ChunkRow, FindingRow, RunDocumentRow, RunRow
from tasks.store.persist import get_engine

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def pg_url(pg_database):
    """A fresh PostgreSQL database (the server on 127.0.0.1:5432), dropped afterwards."""
    return pg_database("docreview_test")


def test_review_on_postgres_is_idempotent(tmp_path, pg_url):
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    review_documents(source=str(inbox), out_dir=str(tmp_path / "a"), database_url=pg_url, backend="rules")
    with Session(get_engine(pg_url)) as s:
        findings = s.exec(select(func.count()).select_from(FindingRow)).one()
        chunks = s.exec(select(func.count()).select_from(ChunkRow)).one()
        law_values = s.exec(select(FindingRow.values).where(FindingRow.clause_type == "governing_law")).all()
    assert findings > 0 and chunks > 0
    assert law_values and all(isinstance(v, dict) for v in law_values)  # JSON column round-trips
    assert any(v.get("jurisdiction") for v in law_values)
    review_documents(source=str(inbox), out_dir=str(tmp_path / "b"), database_url=pg_url, backend="rules")
    with Session(get_engine(pg_url)) as s:
        assert s.exec(select(func.count()).select_from(FindingRow)).one() == findings
        assert s.exec(select(func.count()).select_from(ChunkRow)).one() == chunks
        assert s.exec(select(func.count()).select_from(RunDocumentRow)).one() == 4  # 2 objects x 2 runs
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["run"]["metrics"]["documents_skipped"] == 2


_RUN_WHEN_TOLD = """
import json, os, sys, time
from flows.review import review_documents
print("ready", flush=True)
while not os.path.exists(sys.argv[4]):
    time.sleep(0.005)
result = review_documents(source=sys.argv[1], out_dir=sys.argv[2], database_url=sys.argv[3], backend="anthropic")
print(json.dumps({"run_id": result["run_id"], "documents": result["documents"]}))
"""


@pytest.mark.slow
def test_two_runs_over_the_same_source_at_once_review_each_document_once(tmp_path, pg_url, monkeypatch):
    """Two processes review the same 6 documents into one database at the same instant: every
    document is reviewed by exactly one of them (claims), none is missed, and the other run ends
    it deferred or reused naming the run that reviewed it."""
    import hashlib
    import os
    import subprocess
    import sys

    from prefect.settings import PREFECT_API_URL

    from docreview_testing.stub_llm import StubLLM, StubLLMServer
    from schemas.tables import DocumentDriftRow, DocumentReviewRow, LLMCallRow
    from tasks.review.backends.anthropic_backend import WARMUP_CHUNK_INDEX

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=6)
    shas = {hashlib.sha256(p.read_bytes()).hexdigest(): p.name for p in inbox.glob("*.pdf")}
    go = tmp_path / "go"
    with StubLLMServer(stub=StubLLM()) as srv:
        srv.stub.hold_first_token()  # no model answer until both runs are open: they overlap
        env = {
            **os.environ,
            "PREFECT_API_URL": PREFECT_API_URL.value(),
            "ANTHROPIC_BASE_URL": srv.url,
            "ANTHROPIC_API_KEY": "test-key-not-secret",
            "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
        }
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _RUN_WHEN_TOLD, str(inbox), str(tmp_path / f"out{i}"), pg_url, str(go)],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        try:
            assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
            go.touch()
            engine = get_engine(pg_url)
            deadline = time.monotonic() + 300  # ends a hang only: the release is caused, not timed
            while procs[0].poll() is None and procs[1].poll() is None and time.monotonic() < deadline:
                try:
                    with Session(engine) as s:
                        if s.exec(select(func.count()).select_from(RunRow)).one() >= 2:
                            break
                except DBAPIError:  # no runs table before the first run's migrations
                    pass
                time.sleep(0.2)
            srv.stub.release_first_token()
            outputs = [p.communicate(timeout=600) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    runs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    ids = [r["run_id"] for r in runs]

    with Session(get_engine(pg_url)) as s:
        full = s.exec(
            select(RunDocumentRow.sha256, RunDocumentRow.run_id).where(
                RunDocumentRow.status == "reviewed", RunDocumentRow.reused.is_(False)
            )
        ).all()
        drift = s.exec(select(DocumentDriftRow.sha256, DocumentDriftRow.run_id)).all()
        ledger = s.exec(select(DocumentReviewRow.sha256)).all()
        calls = s.exec(
            select(LLMCallRow.sha256, LLMCallRow.chunk_index, LLMCallRow.run_id).where(
                LLMCallRow.chunk_index != WARMUP_CHUNK_INDEX
            )
        ).all()  # each run warms its own prompt cache
        claims_left = s.exec(select(func.count()).select_from(text("document_claims"))).one()
    assert sorted(sha for sha, _ in full) == sorted(shas)  # each reviewed once, none missed
    assert sorted(drift) == sorted(full)  # one complete review per document
    assert sorted(ledger) == sorted(shas)
    by_chunk: dict[tuple[str, int], set[str]] = {}
    for sha, idx, run in calls:
        by_chunk.setdefault((sha, idx), set()).add(run)
    assert calls and all(len(r) == 1 for r in by_chunk.values())  # no chunk sent to the model twice
    # Which run wins each document depends on timing (under load one may claim all six first);
    # the split of a batch across two workers is shown by tests/test_workers.py.
    assert {run for _, run in full} <= set(ids)
    assert claims_left == 0
    for me, other in ((runs[0], ids[1]), (runs[1], ids[0])):  # the other's documents: deferred or reused
        for d in me["documents"]:
            assert d["status"] in ("reviewed", "deferred"), d
            if d["status"] == "deferred":
                assert d["reason"].startswith(f"being reviewed by run {other} ("), d
            elif d["reason"] is not None:  # the other run finished it before or while this one looked
                assert d["reason"].startswith(
                    (f"reviewed meanwhile by run {other} ", "unchanged since an earlier review")
                ), d

    from flows.review import review_documents

    with StubLLMServer(stub=StubLLM()) as srv:  # the next run reuses every review
        monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-6")  # the model of the two runs
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        after = review_documents(
            source=str(inbox), out_dir=str(tmp_path / "next"), database_url=pg_url, backend="anthropic"
        )
    assert after["metrics"]["documents_skipped"] == 6 and after["metrics"].get("llm_calls", 0) == 0
