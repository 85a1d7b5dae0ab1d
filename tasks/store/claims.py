"""Claims: a document (sha256) is reviewed by one run at a time, even across workers and hosts.

Before a run extracts a document it claims its sha256 in ``document_claims``
(:class:`schemas.tables.DocumentClaimRow`, one row per document) inside one short transaction:

1. ``INSERT … ON CONFLICT (sha256) DO NOTHING RETURNING``: a new row is ours;
2. otherwise the existing row is read with ``SELECT … FOR UPDATE SKIP LOCKED`` (PostgreSQL; on
   SQLite the ``INSERT`` already holds the database's single write lock, so the transaction is
   serialised the same way). A row locked by another claimer right now, or whose lease has not
   expired, is **held**; our own row, or one whose lease expired (its worker was killed or lost
   its database), is taken over;
3. a claimed document that another run has meanwhile finished reviewing (its skip-ledger entry,
   or with ``--rereview`` a full review by another run since ours started) is released again
   and reported **reviewed**, so its review is reused instead of repeated.

A held document ends the run ``deferred`` ("being reviewed by run X"), and the next run reuses
that review (or reviews it, if run X could not finish it). The flow renews its leases while it
works (:class:`LeaseKeeper`) and deletes each claim when the document reaches a terminal state;
a run that dies leaves claims that expire after the lease (``DOCREVIEW_CLAIM_LEASE_S``), or at
once when the dead run was a process on the same host (:func:`holder_is_dead`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel
from sqlalchemy import Select, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col
from sqlmodel import select as sm_select

from schemas.documents import DocumentStatus
from schemas.tables import DocumentClaimRow, DocumentReviewRow, RunDocumentRow, utcnow
from tasks.runnames import for_document
from tasks.store.persist import unit_of_work

#: Default claim lease, seconds: a killed worker's documents can be taken over after this.
DEFAULT_LEASE_S = 600.0

_CLAIMS = DocumentClaimRow.__table__  # type: ignore[attr-defined]


class ClaimState(str, Enum):
    """What :func:`claim_document` found."""

    claimed = "claimed"  # this run holds the claim and reviews the document
    held = "held"  # another live run holds it: end the document deferred
    reviewed = "reviewed"  # another run finished it meanwhile: reuse its review


class Claim(BaseModel):
    """The result of a claim. ``holder_run_id``/``holder_worker``/``lease_expires_at`` (UTC)
    describe the other run for ``held`` (None when it was mid-claim, so not yet known);
    ``taken_over_from`` names the run whose expired claim this run took over; ``reviewed_by`` the
    run whose review is reused for ``reviewed``."""

    sha256: str
    state: ClaimState
    holder_run_id: str | None = None
    holder_worker: str | None = None
    lease_expires_at: datetime | None = None
    taken_over_from: str | None = None
    reviewed_by: str | None = None

    @property
    def reason(self) -> str:
        """A sentence for the run's report (``held`` and ``reviewed``)."""
        if self.state == ClaimState.held:
            who = f"run {self.holder_run_id} ({self.holder_worker})" if self.holder_run_id else "another run"
            return f"being reviewed by {who}; the next run reuses that review"
        if self.state == ClaimState.reviewed:
            return (
                f"reviewed meanwhile by run {self.reviewed_by} (same sha256, prompt version and model); findings reused"
            )
        return "claimed"


def worker_name() -> str:
    """``host:pid`` of this process, stored with its claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_is_dead(worker: str | None) -> bool:
    """Whether ``worker`` (``host:pid``, :func:`worker_name`) is a process on *this* host that no
    longer runs (gone, or a zombie waiting to be reaped). A claim of a dead local process is taken
    over at once instead of after its lease; a holder on another host is never judged dead here
    (its lease decides). A reused pid can only make a dead holder look alive, never the reverse.
    """
    host, _, pid_text = (worker or "").rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:  # Linux: a killed child that is not reaped yet still answers signal 0
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except OSError:
        return False


@task(
    name="claim-document", task_run_name=for_document("claim"), cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1
)
def claim_document(
    session: Session,
    sha256: str,
    run_id: str,
    worker: str,
    lease_s: float,
    prompt_version: str,
    model: str,
    reviewed_since: datetime | None = None,
) -> Claim:
    """Claim ``sha256`` for ``run_id`` for ``lease_s`` seconds (see the module docstring) in
    ``session``, whose caller commits it at once (the claim is one short transaction).

    ``reviewed_since`` (UTC; the run's start with ``--rereview``) changes what counts as already
    reviewed: None = any entry in the skip ledger for this prompt version and model; a time = a
    full (not reused) review by another run since then. Idempotent for the same run (the lease is
    renewed). Raises ``sqlalchemy.exc.DBAPIError`` when the database fails, with ``session``'s
    transaction rolled back, so the task's retry starts afresh in the same session.
    """
    try:
        return _claim(session, sha256, run_id, worker, lease_s, prompt_version, model, reviewed_since)
    except Exception:
        session.rollback()
        raise


def _claim(
    session: Session,
    sha256: str,
    run_id: str,
    worker: str,
    lease_s: float,
    prompt_version: str,
    model: str,
    reviewed_since: datetime | None,
) -> Claim:
    now = utcnow()
    expires = now + timedelta(seconds=lease_s)
    row = dict(sha256=sha256, run_id=run_id, worker=worker, claimed_at=now, lease_expires_at=expires)
    dialect = session.get_bind().dialect.name
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(_CLAIMS)
    taken_over_from: str | None = None
    fresh = session.execute(
        insert.values(row).on_conflict_do_nothing(index_elements=["sha256"]).returning(_CLAIMS.c.sha256)
    ).first()
    if fresh is None:
        current = session.execute(
            select(_CLAIMS.c.run_id, _CLAIMS.c.worker, _CLAIMS.c.lease_expires_at)
            .where(_CLAIMS.c.sha256 == sha256)
            .with_for_update(skip_locked=True)
        ).first()
        if current is None:  # locked by another run's claim or release in flight
            return Claim(sha256=sha256, state=ClaimState.held)
        if current.run_id != run_id and current.lease_expires_at > now and not holder_is_dead(current.worker):
            return Claim(
                sha256=sha256,
                state=ClaimState.held,
                holder_run_id=current.run_id,
                holder_worker=current.worker,
                lease_expires_at=current.lease_expires_at,
            )
        if current.run_id != run_id:
            taken_over_from = current.run_id
        session.execute(
            update(_CLAIMS)
            .where(_CLAIMS.c.sha256 == sha256)
            .values(run_id=run_id, worker=worker, claimed_at=now, lease_expires_at=expires)
        )
    done_by = session.execute(_reviewed_query(sha256, run_id, prompt_version, model, reviewed_since)).first()
    if done_by is not None:
        session.execute(delete(_CLAIMS).where(_CLAIMS.c.sha256 == sha256, _CLAIMS.c.run_id == run_id))
        return Claim(sha256=sha256, state=ClaimState.reviewed, reviewed_by=done_by[0])
    return Claim(sha256=sha256, state=ClaimState.claimed, lease_expires_at=expires, taken_over_from=taken_over_from)


def _reviewed_query(sha256: str, run_id: str, prompt_version: str, model: str, since: datetime | None) -> Select[Any]:
    """``SELECT run_id`` of a finished review of the document by another run (see claim_document)."""
    if since is None:
        ledger = DocumentReviewRow.__table__  # type: ignore[attr-defined]
        return (
            select(ledger.c.run_id)
            .where(ledger.c.sha256 == sha256, ledger.c.prompt_version == prompt_version, ledger.c.model == model)
            .limit(1)
        )
    docs = RunDocumentRow.__table__  # type: ignore[attr-defined]
    return (
        select(docs.c.run_id)
        .where(
            docs.c.sha256 == sha256,
            docs.c.run_id != run_id,
            docs.c.status == DocumentStatus.reviewed.value,
            docs.c.reused.is_(False),
            docs.c.updated_at >= since,
        )
        .limit(1)
    )


def release_claim(session: Session, sha256: str, run_id: str) -> bool:
    """Delete this run's claim on ``sha256`` (its document reached a terminal state).

    Returns False when the run held no such claim (e.g. it expired and was taken over).
    """
    gone = _rowcount(session.execute(delete(_CLAIMS).where(_CLAIMS.c.sha256 == sha256, _CLAIMS.c.run_id == run_id)))
    return bool(gone)


def release_claims(session: Session, run_id: str) -> int:
    """Delete every claim of ``run_id`` (end of a run); returns how many there were."""
    return _rowcount(session.execute(delete(_CLAIMS).where(_CLAIMS.c.run_id == run_id)))


def renew_claims(session: Session, run_id: str, lease_s: float) -> int:
    """Extend every claim of ``run_id`` to ``now + lease_s`` seconds; returns how many."""
    return _rowcount(
        session.execute(
            update(_CLAIMS)
            .where(_CLAIMS.c.run_id == run_id)
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        )
    )


def _rowcount(result: Any) -> int:
    """Rows a DELETE or UPDATE touched (its ``CursorResult.rowcount``; 0 when the driver does not say)."""
    return int(getattr(result, "rowcount", 0) or 0)


def live_claims(session: Session) -> list[DocumentClaimRow]:
    """Claims whose lease has not expired, oldest first (for operators and tests)."""
    return list(
        session.exec(
            sm_select(DocumentClaimRow)
            .where(DocumentClaimRow.lease_expires_at > utcnow())
            .order_by(col(DocumentClaimRow.claimed_at))
        ).all()
    )


class LeaseKeeper:
    """Renews a run's claims every ``lease_s / 3`` seconds while the flow waits for work.

    It runs on a thread of its own, so it holds the database's URL and opens a unit of work of its
    own for each renewal (:func:`tasks.store.persist.unit_of_work`: a ``Session`` belongs to one thread).

    ``timeout()`` is how long the flow may block before :meth:`renew_if_due` must run (seconds).
    ``clock`` returns monotonic seconds (default :func:`time.monotonic`; tests pass their own to
    decide when a renewal is due).
    """

    def __init__(
        self, database_url: str, run_id: str, lease_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.database_url, self.run_id, self.lease_s = database_url, run_id, lease_s
        self.every_s = max(lease_s / 3, 0.05)
        self._clock = clock
        self._last = clock()

    def timeout(self) -> float:
        """Seconds until the next renewal is due (at least 0.01)."""
        return max(0.01, self._last + self.every_s - self._clock())

    def renew_if_due(self) -> int:
        """Renew when due; returns the number of claims renewed (0 when not due)."""
        now = self._clock()
        if now - self._last < self.every_s:
            return 0
        self._last = now
        with unit_of_work(self.database_url) as session:
            return renew_claims(session, self.run_id, self.lease_s)


__all__ = [
    "DEFAULT_LEASE_S",
    "Claim",
    "ClaimState",
    "LeaseKeeper",
    "claim_document",
    "holder_is_dead",
    "live_claims",
    "release_claim",
    "release_claims",
    "renew_claims",
    "worker_name",
]
