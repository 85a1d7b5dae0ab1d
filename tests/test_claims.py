"""Document claims (tasks/store/claims.py) on SQLite and PostgreSQL, and in the review flow."""

from __future__ import annotations

import hashlib
import random
import threading
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlmodel import Session, select

from schemas.tables import DocumentClaimRow, DocumentReviewRow, RunDocumentRow, utcnow
from tasks.store import claims
from tasks.store.claims import ClaimState, LeaseKeeper, holder_is_dead
from tasks.store.persist import dispose_engines, get_engine, unit_of_work


def committed(store_function):
    """``store_function(session, ...)`` called as ``f(url, ...)`` in a unit of work of its own, as the
    flow calls it (committed at once)."""

    def call(url: str, *args, **kwargs):
        with unit_of_work(url) as session:
            return store_function(session, *args, **kwargs)

    return call


claim = committed(claims.claim_document.fn)  # the task's function: these tests need no Prefect API
release_claim = committed(claims.release_claim)
release_claims = committed(claims.release_claims)
renew_claims = committed(claims.renew_claims)
live_claims = committed(claims.live_claims)

PV, MODEL = "p-test", "m-test"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request, tmp_path) -> str:
    """A new database of each dialect, migrated."""
    db = (
        f"sqlite:///{tmp_path / 'claims.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_database")("docreview_claims")
    )
    get_engine(db)
    yield db
    dispose_engines()


def _rows(url: str) -> list[DocumentClaimRow]:
    with Session(get_engine(url)) as s:
        return list(s.exec(select(DocumentClaimRow)).all())


def test_one_run_holds_a_document_until_it_releases_it(url):
    a = claim(url, "d1", "run-a", "host:1", 60, PV, MODEL)
    assert a.state == ClaimState.claimed and a.taken_over_from is None
    b = claim(url, "d1", "run-b", "host:2", 60, PV, MODEL)
    assert b.state == ClaimState.held
    assert (b.holder_run_id, b.holder_worker) == ("run-a", "host:1")
    assert "being reviewed by run run-a (host:1)" in b.reason
    again = claim(url, "d1", "run-a", "host:1", 120, PV, MODEL)  # the holder again: renewed, not held
    assert again.state == ClaimState.claimed and again.lease_expires_at > a.lease_expires_at
    assert release_claim(url, "d1", "run-b") is False  # not b's to release
    assert [r.run_id for r in _rows(url)] == ["run-a"]
    assert release_claim(url, "d1", "run-a") is True
    assert _rows(url) == []
    assert claim(url, "d1", "run-b", "host:2", 60, PV, MODEL).state == ClaimState.claimed


def _expire(url: str, sha256: str) -> None:
    """Let a claim's lease lapse: its expiry is set one second in the past (no waiting on a timer)."""
    with Session(get_engine(url)) as s:
        row = s.get(DocumentClaimRow, sha256)
        row.lease_expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
        s.commit()


def test_an_expired_claim_is_taken_over(url):
    assert claim(url, "d1", "run-dead", "host:9", 60, PV, MODEL).state == ClaimState.claimed
    assert claim(url, "d1", "run-b", "host:2", 60, PV, MODEL).state == ClaimState.held
    _expire(url, "d1")
    b = claim(url, "d1", "run-b", "host:2", 60, PV, MODEL)
    assert b.state == ClaimState.claimed and b.taken_over_from == "run-dead"
    assert [(r.run_id, r.worker) for r in _rows(url)] == [("run-b", "host:2")]
    assert release_claim(url, "d1", "run-dead") is False  # the dead run's late release changes nothing
    assert len(_rows(url)) == 1


def test_a_claim_of_a_dead_process_on_this_host_is_taken_over_at_once(url):
    import os
    import socket
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead_worker = f"{socket.gethostname()}:{child.pid}"
    try:
        assert claim(url, "d1", "run-killed", dead_worker, 600, PV, MODEL).state == ClaimState.claimed
        assert holder_is_dead(dead_worker) is False
        assert claim(url, "d1", "run-b", "elsewhere:2", 600, PV, MODEL).state == ClaimState.held
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # until it has exited, without reaping it
        assert holder_is_dead(dead_worker) is True  # killed, not yet reaped: a zombie
        child.wait()
        assert holder_is_dead(dead_worker) is True  # reaped: gone
        b = claim(url, "d1", "run-b", "elsewhere:2", 600, PV, MODEL)
        assert b.state == ClaimState.claimed and b.taken_over_from == "run-killed"
    finally:
        child.kill()
        child.wait()
    assert holder_is_dead(f"{socket.gethostname()}:{os.getpid()}") is False  # never this process
    assert holder_is_dead("another-host:1") is False  # other hosts: only the lease decides


def test_a_document_reviewed_meanwhile_is_reported_reviewed(url):
    with Session(get_engine(url)) as s:
        s.add(DocumentReviewRow(sha256="d1", prompt_version=PV, model=MODEL, backend="rules", run_id="run-a"))
        s.commit()
    got = claim(url, "d1", "run-b", "host:2", 60, PV, MODEL)
    assert got.state == ClaimState.reviewed and got.reviewed_by == "run-a"
    assert _rows(url) == []  # nothing left claimed
    assert claim(url, "d1", "run-b", "host:2", 60, PV, "other-model").state == ClaimState.claimed


def test_rereview_reuses_only_reviews_made_since_the_run_started(url):
    since = utcnow()
    with Session(get_engine(url)) as s:  # an old ledger entry does not count for a rereview run
        s.add(DocumentReviewRow(sha256="d1", prompt_version=PV, model=MODEL, backend="rules", run_id="run-old"))
        s.commit()
    assert claim(url, "d1", "run-b", "host:2", 60, PV, MODEL, reviewed_since=since).state == ClaimState.claimed
    release_claim(url, "d1", "run-b")
    with Session(get_engine(url)) as s:  # another run's full review after `since` does
        s.exec(
            text(
                "INSERT INTO runs (id, source, backend, model, prompt_version, started_at, status) "
                "VALUES ('run-a', 's', 'rules', 'm', 'p', :t, 'running')"
            ).bindparams(t=utcnow())
        )
        s.add(
            RunDocumentRow(
                run_id="run-a",
                source="x.pdf",
                file_name="x.pdf",
                sha256="d1",
                status="reviewed",
                reused=False,
                updated_at=utcnow() + timedelta(seconds=1),
            )
        )
        s.commit()
    got = claim(url, "d1", "run-b", "host:2", 60, PV, MODEL, reviewed_since=since)
    assert got.state == ClaimState.reviewed and got.reviewed_by == "run-a"


def test_leases_are_renewed_and_released_per_run(url):
    for sha in ("d1", "d2"):
        claim(url, sha, "run-a", "host:1", 60, PV, MODEL)
    claim(url, "d3", "run-b", "host:2", 60, PV, MODEL)
    clock = [100.0]  # the keeper's monotonic clock, moved by the test
    keeper = LeaseKeeper(url, "run-a", 3.0, clock=lambda: clock[0])  # renews every 1 s, to now + 3 s
    assert keeper.renew_if_due() == 0 and keeper.timeout() == pytest.approx(1.0)  # not due yet
    clock[0] += 0.6
    assert keeper.renew_if_due() == 0 and keeper.timeout() == pytest.approx(0.4)
    clock[0] += 0.4
    before = utcnow()
    assert keeper.renew_if_due() == 2  # both of run-a's claims, not run-b's
    after = utcnow()
    assert keeper.renew_if_due() == 0  # renewed: the next one is a full period away
    leases = {r.sha256: r.lease_expires_at for r in _rows(url)}
    window = (before + timedelta(seconds=3), after + timedelta(seconds=3))
    assert all(window[0] <= leases[s] <= window[1] for s in ("d1", "d2")), (leases, window)
    _expire(url, "d3")
    assert sorted(c.sha256 for c in live_claims(url)) == ["d1", "d2"]  # run-b's lease has lapsed
    assert renew_claims(url, "run-b", 60) == 1
    assert release_claims(url, "run-a") == 2
    assert [r.sha256 for r in _rows(url)] == ["d3"]


def test_concurrent_runs_claim_each_document_exactly_once(url):
    """Eight runs (threads, own connections) claim the same 40 documents at once, in random order.
    Every run makes its first claim before any makes a second (a second barrier), so the work is
    spread over several runs by construction, whatever the scheduler does."""
    shas = [f"doc{i:02d}" for i in range(40)]
    won: dict[str, list[str]] = {s: [] for s in shas}
    errors: list[BaseException] = []
    start, first_done = threading.Barrier(8, timeout=120), threading.Barrier(8, timeout=120)
    lock = threading.Lock()
    orders = {f"run-{i}": random.Random(f"run-{i}").sample(shas, len(shas)) for i in range(8)}
    assert len({order[0] for order in orders.values()}) > 1  # their first documents differ

    def run(name: str) -> None:
        start.wait()
        try:
            for n, sha in enumerate(orders[name]):
                if claim(url, sha, name, name, 60, PV, MODEL).state == ClaimState.claimed:
                    with lock:
                        won[sha].append(name)
                if n == 0:
                    first_done.wait()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"run-{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert all(len(w) == 1 for w in won.values()), {s: w for s, w in won.items() if len(w) != 1}
    assert {r.sha256: r.run_id for r in _rows(url)} == {s: w[0] for s, w in won.items()}
    assert len({w[0] for w in won.values()}) > 1  # the work was spread over several runs


@pytest.mark.integration
def test_postgres_claim_skips_a_row_locked_by_another_claimer(pg_database):
    """SKIP LOCKED: a claim row locked by another transaction is reported held at once, even if
    its lease has expired, instead of waiting for that transaction."""
    url = pg_database("docreview_claims")
    claim(url, "d1", "run-a", "host:1", 60, PV, MODEL)
    _expire(url, "d1")  # without the lock, run-b would take it over
    engine = get_engine(url)
    with engine.connect() as locker, locker.begin():
        locker.execute(text("SELECT * FROM document_claims WHERE sha256 = 'd1' FOR UPDATE"))
        result: list = []
        worker = threading.Thread(target=lambda: result.append(claim(url, "d1", "run-b", "host:2", 60, PV, MODEL)))
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the claim waited for the row lock instead of skipping it"
    assert result[0].state == ClaimState.held and result[0].holder_run_id is None
    assert "another run" in result[0].reason
    assert claim(url, "d1", "run-b", "host:2", 60, PV, MODEL).taken_over_from == "run-a"  # lock gone
    dispose_engines()


@pytest.mark.usefixtures("prefect_harness")
def test_flow_defers_a_document_another_run_holds_and_takes_over_an_expired_one(tmp_path, db_url):
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=3)
    pdfs = sorted(inbox.glob("*.pdf"))
    names = [p.name for p in pdfs]
    shas = [hashlib.sha256(p.read_bytes()).hexdigest() for p in pdfs]
    assert len(set(shas)) == 3
    claim(db_url, shas[0], "run-live", "host:7", 600, "any", "any")  # a live run reviews document 1
    claim(db_url, shas[1], "run-dead", "host:8", 60, "any", "any")  # a killed run held document 2
    _expire(db_url, shas[1])
    result = review_documents(source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    status = {d["file_name"]: (d["status"], d["reason"]) for d in result["documents"]}
    assert status[names[0]] == ("deferred", "being reviewed by run run-live (host:7); the next run reuses that review")
    assert status[names[1]] == ("reviewed", None)
    assert status[names[2]] == ("reviewed", None)
    assert [(r.sha256, r.run_id) for r in _rows(db_url)] == [(shas[0], "run-live")]  # ours released

    release_claim(db_url, shas[0], "run-live")  # the other run stopped without reviewing it
    again = review_documents(source=str(inbox), out_dir=str(tmp_path / "out2"), database_url=db_url, backend="rules")
    status = {d["file_name"]: d["status"] for d in again["documents"]}
    assert status == dict.fromkeys(names, "reviewed")
    assert again["metrics"]["documents_skipped"] == 2  # only the deferred document was reviewed
    assert _rows(db_url) == []
    dispose_engines()
