"""Reviewer decisions in the store: appended to a hash chain, read back, verified.

Functions take an open SQLModel :class:`~sqlmodel.Session` (the caller opens one per step and
commits through :func:`append_decision`, which commits itself because every append is its own
link of the chain). The chain's rules are in :mod:`schemas.decisions`.

:func:`append_decision` reads the chain's head and the item's history, writes the new row with
``prev_hash`` = the head's ``row_hash`` and commits. ``prev_hash`` is unique and ``(target_key,
seq)`` is unique, so two writers appending at once (two report servers, ``docreview decide`` beside
a browser) cannot both link to one head: the second one's insert fails, and it reads the new head
and appends after it (both decisions are kept, in the order they were committed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from schemas.decisions import GENESIS, Decision, row_hash_of
from schemas.tables import ReviewerDecision, utcnow

#: Attempts at appending when other writers keep taking the chain's head first.
APPEND_ATTEMPTS = 30


class ChainBusy(RuntimeError):
    """The decision could not be appended: other writers took the chain's head
    :data:`APPEND_ATTEMPTS` times in a row (nothing was written)."""


def chain_head(session: Session) -> ReviewerDecision | None:
    """The last decision written (largest id), or None when there is none."""
    return session.exec(select(ReviewerDecision).order_by(col(ReviewerDecision.id).desc()).limit(1)).first()


def chain_position(session: Session) -> tuple[int, str]:
    """``(count, head hash)`` of the chain now: how many decisions, and the last one's ``row_hash``
    (:data:`schemas.decisions.GENESIS` for none). A report records it, so a later verify can tell
    whether the chain it saw is still there (``docreview audit verify --reports OUT``)."""
    from sqlalchemy import func

    count = int(session.exec(select(func.count()).select_from(ReviewerDecision)).one() or 0)
    head = chain_head(session)
    return count, head.row_hash if head is not None else GENESIS


def history(session: Session, target_key: str) -> list[ReviewerDecision]:
    """Every decision on one item (finding or absence key), oldest first (by ``seq``)."""
    return list(
        session.exec(
            select(ReviewerDecision)
            .where(ReviewerDecision.target_key == target_key)
            .order_by(col(ReviewerDecision.seq))
        ).all()
    )


def histories(session: Session, keys: list[str]) -> dict[str, list[ReviewerDecision]]:
    """``{target key: [decisions, oldest first]}`` for the items of ``keys`` that have decisions
    (queried 500 keys at a time)."""
    out: dict[str, list[ReviewerDecision]] = {}
    for i in range(0, len(keys), 500):
        for row in session.exec(
            select(ReviewerDecision)
            .where(col(ReviewerDecision.target_key).in_(keys[i : i + 500]))
            .order_by(col(ReviewerDecision.seq))
        ).all():
            out.setdefault(row.target_key, []).append(row)
    return out


def append_decision(
    session: Session,
    *,
    target_kind: str,
    target_key: str,
    decision: Decision,
    reviewer: str,
    note: str | None = None,
    category: str | None = None,
) -> tuple[ReviewerDecision, bool]:
    """Append a decision on one item to the chain and commit; returns ``(row, created)``.

    ``created`` is False, and nothing is written, when the item's latest decision already is the
    same decision, category, reviewer and note (repeating a decision is idempotent). ``category``
    is required for ``reclassify`` and refused otherwise (``ValueError``). The row is detached from
    ``session`` (readable after it closes). Raises :class:`ChainBusy` when other writers took the
    head :data:`APPEND_ATTEMPTS` times in a row."""
    if (decision is Decision.reclassify) != (category is not None):
        raise ValueError("a reclassify decision names the new category; approve and reject name none")
    note = note.strip() if note and note.strip() else None
    for attempt in range(APPEND_ATTEMPTS):
        session.rollback()  # a fresh transaction: see the head and history as committed now
        past = history(session, target_key)
        last = past[-1] if past else None
        if last is not None and (last.decision, last.category, last.reviewer, last.note) == (
            decision.value,
            category,
            reviewer,
            note,
        ):
            session.expunge(last)
            return last, False
        head = chain_head(session)
        seq = (last.seq if last else 0) + 1
        row = ReviewerDecision(
            target_kind=target_kind,
            target_key=target_key,
            seq=seq,
            decision=decision.value,
            category=category,
            reviewer=reviewer,
            note=note,
            decided_at=utcnow(),
            prev_hash=head.row_hash if head is not None else GENESIS,
            row_hash="",
        )
        row.row_hash = row_hash_of(row)
        session.add(row)
        try:
            session.commit()
        except (IntegrityError, OperationalError) as exc:  # another writer took the head, or SQLite's lock
            session.rollback()
            if isinstance(exc, OperationalError) and not _busy(exc):
                raise
            time.sleep(random.uniform(0.005, 0.02) * (1 + attempt))
            continue
        session.refresh(row)
        session.expunge(row)
        return row, True
    raise ChainBusy(f"the decision chain was busy {APPEND_ATTEMPTS} times in a row: nothing recorded; decide again")


def _busy(exc: OperationalError) -> bool:
    """SQLite's "database is locked" (a writer that read an older snapshot), not another failure."""
    text = str(exc.orig or exc).lower()
    return "locked" in text or "busy" in text


@dataclass(frozen=True)
class BrokenLink:
    """The first decision whose link does not hold: its ``id``, item (``target_kind``,
    ``target_key``), ``seq`` on the item, and ``problem`` in words."""

    id: int
    target_kind: str
    target_key: str
    seq: int
    problem: str


@dataclass(frozen=True)
class ChainCheck:
    """A walk over the decision chain: ``count`` decisions read, ``head`` the last one's hash
    (:data:`schemas.decisions.GENESIS` for none), ``broken`` the first broken link (None: intact)."""

    count: int
    head: str
    broken: BrokenLink | None

    @property
    def intact(self) -> bool:
        """True when every link holds."""
        return self.broken is None


def _rows(session: Session, batch: int = 2000) -> Iterator[ReviewerDecision]:
    last = 0
    while True:
        rows = session.exec(
            select(ReviewerDecision)
            .where(col(ReviewerDecision.id) > last)
            .order_by(col(ReviewerDecision.id))
            .limit(batch)
        ).all()
        if not rows:
            return
        yield from rows
        last = int(rows[-1].id or 0)


def verify_chain(session: Session) -> ChainCheck:
    """Walk every decision in id order and check each link: the row's ``row_hash`` is the hash of
    its content (else it was changed after it was written) and its ``prev_hash`` is the previous
    row's ``row_hash`` (else a row was removed or inserted before it; the first row's is
    :data:`schemas.decisions.GENESIS`, else rows before it were removed). Stops at the first broken
    link. Removing the newest rows leaves a shorter chain that is intact: compare ``head`` with
    one recorded earlier (each run's ``report.json`` holds the head it saw)."""
    count, prev, prev_id = 0, GENESIS, None
    for row in _rows(session):
        count += 1
        rid = int(row.id or 0)
        problem = None
        if row.prev_hash != prev and prev_id is None:
            problem = (
                f"decision #{rid}, the first in the table, does not start the chain (its previous hash is "
                f"{str(row.prev_hash)[:12]}…, not the start {GENESIS[:12]}…): earlier decisions were removed"
            )
        elif row.prev_hash != prev:
            problem = (
                f"decision #{rid} does not follow decision #{prev_id}: its previous hash {str(row.prev_hash)[:12]}… "
                f"is not #{prev_id}'s hash {prev[:12]}… (a decision was removed or inserted between them)"
            )
        elif row_hash_of(row) != row.row_hash:
            problem = (
                f"decision #{rid} does not match its hash: it was changed after it was written "
                f"(decision {row.seq} on {row.target_kind} {row.target_key[:12]}…)"
            )
        if problem is not None:
            return ChainCheck(count, prev, BrokenLink(rid, row.target_kind, row.target_key, row.seq, problem))
        prev, prev_id = row.row_hash, rid
    return ChainCheck(count, prev, None)


def decision_fields(row: ReviewerDecision) -> dict[str, Any]:
    """A decision as JSON-safe fields: ``{decision, category, reviewer, note, seq, decided_at (ISO
    8601, UTC), hash}`` (``hash``: its ``row_hash``)."""
    from schemas.decisions import canonical_time

    return dict(
        decision=row.decision,
        category=row.category,
        reviewer=row.reviewer,
        note=row.note,
        seq=row.seq,
        decided_at=canonical_time(row.decided_at) if row.decided_at else None,
        hash=row.row_hash,
    )
