"""Timeouts remembered across runs: a document whose extraction timed out waits before the next try.

Without this, a document that cannot be extracted within ``Limits.extraction_timeout_s`` costs
the full limit of CPU on every run, and fails every run for the same reason. After a timeout the
document's row in ``extraction_backoff`` (:class:`schemas.tables.ExtractionBackoffRow`) says when
it may be tried again: ``Limits.extraction_backoff_s`` after the first timeout, doubled after
each further one, at most ``Limits.extraction_backoff_max_s`` (exponential back-off). Until
then :func:`tasks.ingest.extract.extract_document` fails it at once (kind ``timeout``) with a
reason that says so — unless the extraction timeout has been raised since (the operator's fix for a
limit set too low: tried at once); a later attempt that finishes (any outcome other than a timeout)
deletes the row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

from sqlmodel import Session

from schemas.documents import FailureKind
from schemas.settings import Limits
from schemas.tables import ExtractionBackoffRow, utcnow


def _aware(when: datetime) -> datetime:
    """``when`` as a timezone-aware UTC time (SQLite returns naive times)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _when(when: datetime) -> str:
    return _aware(when).strftime("%Y-%m-%d %H:%M UTC")


def backoff_delay_s(timeouts: int, limits: Limits) -> float:
    """Seconds to wait after the ``timeouts``-th consecutive timeout (1-based):
    ``extraction_backoff_s * 2 ** (timeouts - 1)``, at most ``extraction_backoff_max_s``."""
    if timeouts <= 0 or limits.extraction_backoff_s <= 0:
        return 0.0
    return min(limits.extraction_backoff_max_s, limits.extraction_backoff_s * 2 ** min(timeouts - 1, 40))


def _waiting(row: ExtractionBackoffRow | None, now: datetime, limits: Limits | None) -> TypeGuard[ExtractionBackoffRow]:
    """True while ``row``'s back-off holds: its end is after ``now`` and the extraction timeout of
    ``limits`` is not higher than the one the document timed out under (raising the limit is the
    operator's fix: the next run tries at once)."""
    if row is None or _aware(row.retry_after) <= now:
        return False
    return not (limits is not None and row.timeout_s is not None and limits.extraction_timeout_s > row.timeout_s)


def backoff_until(
    database_url: str, sha256: str, now: datetime | None = None, limits: Limits | None = None
) -> datetime | None:
    """When the back-off of document ``sha256`` ends (UTC), or None when it may be extracted now
    (no back-off, it ended, or ``limits`` allow more time than the timeout that started it)."""
    from tasks.store.persist import get_engine

    now = now or utcnow()
    with Session(get_engine(database_url)) as session:
        row = session.get(ExtractionBackoffRow, sha256)
    return _aware(row.retry_after) if _waiting(row, now, limits) else None


def backoff_reason(
    database_url: str, sha256: str, now: datetime | None = None, limits: Limits | None = None
) -> str | None:
    """Why the document ``sha256`` is not extracted now (its back-off holds, see :func:`backoff_until`),
    else None."""
    from tasks.store.persist import get_engine

    now = now or utcnow()
    with Session(get_engine(database_url)) as session:
        row = session.get(ExtractionBackoffRow, sha256)
    if not _waiting(row, now, limits):
        return None
    return (
        f"text extraction timed out in {row.timeouts} earlier run(s) (last on {_when(row.last_failed_at)}: "
        f"{row.last_reason}); not extracted again before {_when(row.retry_after)} (back-off doubles with each "
        f"timeout, DOCREVIEW_EXTRACTION_BACKOFF_S; a higher DOCREVIEW_EXTRACTION_TIMEOUT_S ends it)"
    )


def record_extraction(
    database_url: str, sha256: str, result: dict[str, Any], limits: Limits, now: datetime | None = None
) -> str | None:
    """Remember the outcome of one extraction of ``sha256`` (a :func:`tasks.ingest.extract.run_extraction`
    result): a timeout starts or lengthens the back-off, anything else ends it.

    Returns a sentence for the failure's reason after a timeout (when the next try is), else None.
    """
    from tasks.store.persist import get_engine, upsert

    now = now or utcnow()
    timed_out = not result.get("ok") and result.get("kind") == FailureKind.timeout.value
    with Session(get_engine(database_url)) as session:
        row = session.get(ExtractionBackoffRow, sha256)
        if not timed_out:
            if row is not None:
                session.delete(row)
                session.commit()
            return None
        timeouts = (row.timeouts if row is not None else 0) + 1
        delay = backoff_delay_s(timeouts, limits)
        retry_after = now + timedelta(seconds=delay)
        upsert(
            session,
            ExtractionBackoffRow,
            [
                dict(
                    sha256=sha256,
                    timeouts=timeouts,
                    last_reason=str(result.get("reason") or "timeout"),
                    last_failed_at=now,
                    retry_after=retry_after,
                    timeout_s=limits.extraction_timeout_s,
                )
            ],
            keys=["sha256"],
            update=["timeouts", "last_reason", "last_failed_at", "retry_after", "timeout_s"],
        )
        session.commit()
    if delay <= 0:
        return None
    return f"timeout {timeouts} in a row: not extracted again before {_when(retry_after)}"
