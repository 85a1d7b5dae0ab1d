"""Reviewer decisions: what a reviewer may decide, and the hash chain that makes their history
tamper-evident.

A decision is ``approve`` (the finding reads as it claims, or the clause is missing as recorded),
``reject`` (it does not) or ``reclassify`` (the passage is a clause of another category, named in
``category``: "this is a Non-Compete, not a License Grant"). Decisions are kept in
``reviewer_decisions`` (:class:`schemas.tables.ReviewerDecision`), one row per decision, never
changed or deleted: the latest decision on an item wins and the earlier ones are its history.

Each row carries ``row_hash`` = :func:`decision_hash` over its content and ``prev_hash``, the
``row_hash`` of the row written before it (:data:`GENESIS` for the first row): a hash chain in the
order the rows were written (their ids). A row changed after it was written no longer matches its
hash; a row removed or inserted breaks the link of the row after it. ``docreview audit verify``
walks the chain and names the first broken link. A chain rewritten from some row to its end, hashes
included, is consistent again: the head hash (:func:`chain_head`) each run's report records, or an
operator keeps elsewhere, is what shows such a rewrite.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from enum import Enum
from typing import Any


class Decision(str, Enum):
    """What a reviewer decided on a finding or an absence (``reclassify``: findings only)."""

    approve = "approve"
    reject = "reject"
    reclassify = "reclassify"


#: ``prev_hash`` of the first decision of a chain (64 zeros).
GENESIS = "0" * 64

#: Tag hashed with every row, so a later change of the hashed fields can be told apart.
CHAIN_VERSION = "docreview-decision-v1"

#: Longest reviewer name, characters (account names and ``--reviewer``).
MAX_REVIEWER_CHARS = 80


def canonical_time(at: datetime) -> str:
    """A decision's time as hashed: UTC, microseconds, ``2026-12-03T14:05:09.123456Z``. A naive
    time (SQLite returns stored times without their zone) is taken as UTC: docreview stores UTC."""
    at = at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def decision_hash(
    *,
    target_kind: str,
    target_key: str,
    seq: int,
    decision: str,
    category: str | None,
    reviewer: str | None,
    note: str | None,
    decided_at: datetime,
    prev_hash: str,
) -> str:
    """SHA-256 (64 hex digits) of one decision row's content and the previous row's hash: the
    fields as a JSON object with sorted keys, compact separators and UTF-8 (``decided_at`` in
    :func:`canonical_time`), tagged with :data:`CHAIN_VERSION`."""
    content: dict[str, Any] = {
        "v": CHAIN_VERSION,
        "target_kind": target_kind,
        "target_key": target_key,
        "seq": int(seq),
        "decision": decision,
        "category": category,
        "reviewer": reviewer,
        "note": note,
        "decided_at": canonical_time(decided_at),
        "prev_hash": prev_hash,
    }
    raw = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def row_hash_of(row: Any) -> str:
    """:func:`decision_hash` of a stored row (any object with the row's attributes)."""
    return decision_hash(
        target_kind=row.target_kind,
        target_key=row.target_key,
        seq=row.seq,
        decision=row.decision,
        category=row.category,
        reviewer=row.reviewer,
        note=row.note,
        decided_at=row.decided_at,
        prev_hash=row.prev_hash,
    )


def chain_head(rows: list[Any]) -> str:
    """The ``row_hash`` of the last of ``rows`` (ordered by id), or :data:`GENESIS` for none."""
    return rows[-1].row_hash if rows else GENESIS


_BY = re.compile(r"^by ([^\n:]{1,80}?)(?:: (.*))?$", re.S)


def parse_legacy_note(note: str | None) -> tuple[str | None, str | None]:
    """``(reviewer, note)`` of a note written before decisions had a reviewer: the browser wrote
    ``by <name>`` or ``by <name>: <note>``; any other note has no reviewer (``(None, note)``)."""
    if not note:
        return None, note
    m = _BY.match(note.strip())
    if m is None:
        return None, note
    name = " ".join(m.group(1).split())
    rest = (m.group(2) or "").strip() or None
    return (name or None), (rest if name else note)


def affirms(decision: dict[str, Any] | None) -> bool:
    """Whether a report item's latest decision (``{decision, ...}`` or None) confirms a reading: an
    approval, or a reclassification (the reviewer read the passage as the category it now has).
    The past-tense forms (``approved``, ``reclassified``) read the same."""
    return str((decision or {}).get("decision", "")).startswith(("approve", "reclassif"))


def rejects(decision: dict[str, Any] | None) -> bool:
    """Whether a report item's latest decision (``{decision, ...}`` or None) is a rejection
    (``reject`` or ``rejected``)."""
    return str((decision or {}).get("decision", "")).startswith("reject")
