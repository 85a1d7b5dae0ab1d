"""Reviewer decisions: who decided, append-only, hash-chained (schemas/decisions.py,
tasks/store/decisions.py, revision 0009), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool
from sqlmodel import Session, select

from schemas.decisions import GENESIS, Decision, decision_hash, parse_legacy_note, row_hash_of
from schemas.migrations import alembic_config
from schemas.tables import ReviewerDecision
from tasks.store.decisions import append_decision, verify_chain
from tasks.store.persist import dispose_engines, get_engine


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'decisions.db'}"
    return request.getfixturevalue("pg_database")("docreview_chain")


@pytest.fixture(autouse=True)
def _dispose():
    yield
    dispose_engines()


def _append(url: str, key: str, decision: Decision, reviewer: str, note: str | None = None, category=None):
    with Session(get_engine(url)) as session:
        return append_decision(
            session,
            target_kind="finding",
            target_key=key,
            decision=decision,
            reviewer=reviewer,
            note=note,
            category=category,
        )


def _raw(url: str, *statements: str) -> None:
    """Hand-edit the database, as someone with its credentials could: the append-only triggers go first."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            if url.startswith("sqlite"):
                conn.execute(text("DROP TRIGGER IF EXISTS reviewer_decisions_no_update"))
                conn.execute(text("DROP TRIGGER IF EXISTS reviewer_decisions_no_delete"))
            else:
                conn.execute(text("DROP TRIGGER IF EXISTS reviewer_decisions_append_only ON reviewer_decisions"))
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def test_the_legacy_note_names_the_reviewer_only_when_written_by_the_report_server():
    assert parse_legacy_note("by Alice Example: clause read in full") == ("Alice Example", "clause read in full")
    assert parse_legacy_note("by Bob") == ("Bob", None)
    assert parse_legacy_note("the cap is $6, not $5") == (None, "the cap is $6, not $5")
    assert parse_legacy_note(None) == (None, None)


def test_decisions_are_chained_and_an_untouched_chain_verifies(url):
    first, created = _append(url, "a" * 64, Decision.approve, "Alice", "read in full")
    assert created and first.prev_hash == GENESIS and first.seq == 1 and first.reviewer == "Alice"
    again, created = _append(url, "a" * 64, Decision.approve, "Alice", "read in full")
    assert not created and again.id == first.id  # the same decision by the same reviewer: nothing new
    second, created = _append(url, "a" * 64, Decision.approve, "Bob", "read in full")  # another reviewer agrees
    assert created and second.seq == 2 and second.prev_hash == first.row_hash
    third, _ = _append(url, "b" * 64, Decision.reclassify, "Carol", category="non_compete")
    assert third.category == "non_compete" and third.prev_hash == second.row_hash
    with Session(get_engine(url)) as session:
        check = verify_chain(session)
        rows = session.exec(select(ReviewerDecision).order_by(ReviewerDecision.id)).all()
    assert check.intact and check.count == 3 and check.head == third.row_hash
    assert [row_hash_of(r) for r in rows] == [r.row_hash for r in rows]  # the hash round-trips the stored times
    with pytest.raises(ValueError, match="names the new category"):
        _append(url, "c" * 64, Decision.reclassify, "Carol")


def test_the_table_refuses_updates_and_deletes(url):
    row, _ = _append(url, "a" * 64, Decision.reject, "Alice")
    engine = create_engine(url, poolclass=NullPool)
    try:
        for statement in (
            f"UPDATE reviewer_decisions SET decision = 'approve' WHERE id = {row.id}",
            f"DELETE FROM reviewer_decisions WHERE id = {row.id}",
        ):
            with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
                conn.execute(text(statement))
    finally:
        engine.dispose()
    with Session(get_engine(url)) as session:
        assert verify_chain(session).intact


@pytest.mark.parametrize("tamper", ["edit", "delete", "insert", "delete-first"])
def test_verify_names_the_first_broken_link(url, tamper):
    rows = [_append(url, f"{i:064x}", Decision.approve, "Alice", f"note {i}")[0] for i in range(4)]
    ids = [r.id for r in rows]
    if tamper == "edit":  # who decided, changed after the fact
        _raw(url, f"UPDATE reviewer_decisions SET reviewer = 'Mallory' WHERE id = {ids[1]}")
        expected, words = ids[1], "changed after it was written"
    elif tamper == "delete":
        _raw(url, f"DELETE FROM reviewer_decisions WHERE id = {ids[2]}")
        expected, words = ids[3], f"does not follow decision #{ids[1]}"
    elif tamper == "insert":  # a forged row with a hash of its own content, linked to the real head
        at = datetime(2026, 1, 1, tzinfo=UTC)
        forged = decision_hash(
            target_kind="finding",
            target_key="f" * 64,
            seq=1,
            decision="approve",
            category=None,
            reviewer="Mallory",
            note=None,
            decided_at=at,
            prev_hash=rows[0].row_hash,
        )
        _raw(  # the row after it still points at the row before: the link breaks there
            url,
            f"UPDATE reviewer_decisions SET prev_hash = '{'e' * 64}' WHERE id = {ids[1]}",
            "INSERT INTO reviewer_decisions (id, target_kind, target_key, seq, decision, decided_at, reviewer, "
            f"prev_hash, row_hash) VALUES ({ids[3] + 1}, 'finding', '{'f' * 64}', 1, 'approve', "
            f"'2026-01-01 00:00:00', 'Mallory', '{rows[0].row_hash}', '{forged}')",
        )
        expected, words = ids[1], f"does not follow decision #{ids[0]}"
    else:
        _raw(url, f"DELETE FROM reviewer_decisions WHERE id = {ids[0]}")
        expected, words = ids[1], "does not start the chain"
    with Session(get_engine(url)) as session:
        check = verify_chain(session)
    assert not check.intact and check.broken is not None
    assert check.broken.id == expected and words in check.broken.problem


def test_concurrent_writers_keep_every_decision_in_one_chain(url):
    """Eight threads append at once (each its own session, as two servers or a CLI beside a server
    would): every decision is kept, each item's seq counts up, and the chain does not fork."""
    get_engine(url)  # migrate once, before the race
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            barrier.wait()
            for j in range(5):
                _append(url, "a" * 64 if j % 2 else f"{i:064x}", Decision.approve, f"reviewer {i}", f"round {j}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Session(get_engine(url)) as session:
        check = verify_chain(session)
        shared = session.exec(select(ReviewerDecision.seq).where(ReviewerDecision.target_key == "a" * 64)).all()
    assert check.intact and check.count == 40
    assert sorted(shared) == list(range(1, 17))


def test_the_migration_keeps_old_decisions_and_reads_the_reviewer_from_the_note(url):
    """A database at revision 0008 with decisions from the browser ('by NAME: note') and the CLI
    (a free note, or none): upgraded, every decision is still there, the reviewer comes out of the
    note, and the chain over them verifies."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0008")
        with engine.begin() as conn:
            for i, note in enumerate(["by Alice Example: clause read in full", "by Bob", "the cap is $6", None]):
                conn.execute(
                    text(
                        "INSERT INTO reviewer_decisions (target_kind, target_key, seq, decision, note, decided_at) "
                        "VALUES ('finding', :key, 1, 'approve', :note, :at)"
                    ),
                    dict(key=f"{i:064x}", note=note, at=datetime(2026, 11, 30, 9, i, 5, 123456, tzinfo=UTC)),
                )
    finally:
        engine.dispose()
    with Session(get_engine(url)) as session:  # opening it migrates to head
        rows = session.exec(select(ReviewerDecision).order_by(ReviewerDecision.id)).all()
        check = verify_chain(session)
    assert [(r.reviewer, r.note) for r in rows] == [
        ("Alice Example", "clause read in full"),
        ("Bob", None),
        (None, "the cap is $6"),
        (None, None),
    ]
    first = rows[0].decided_at
    assert (first.astimezone(UTC) if first.tzinfo else first.replace(tzinfo=UTC)) == datetime(
        2026, 11, 30, 9, 0, 5, 123456, tzinfo=UTC
    )
    assert check.intact and check.count == 4
    later, _ = _append(url, "9" * 64, Decision.reject, "Carol")  # new decisions chain on after them
    assert later.prev_hash == rows[-1].row_hash
