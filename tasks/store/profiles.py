"""Document profiles: store how each document was classified, a filing's summary, and its changes.

One ``document_profiles`` row per document (:class:`schemas.tables.DocumentProfileRow`); writes
are idempotent on the sha256. :func:`previous_filing` finds the filing a new one is compared
with: the same company (:func:`tasks.ingest.classify.filing_company_key`: the SEC Commission file
number, else the reduced name) and form, the latest period before the new filing's period.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlmodel import Session, col, select

from schemas.filings import DocumentKind, FilingChange, FilingSummary
from schemas.tables import DocumentProfileRow, utcnow
from tasks.runnames import for_document


@task(name="save-document-profile", task_run_name=for_document("save-profile"), cache_policy=NO_CACHE)
def save_document_profile(
    session: Session,
    sha256: str,
    kind: DocumentKind,
    company_key: str,
    summary: FilingSummary | None,
    not_judged: str | None = None,
) -> None:
    """Insert or replace the profile row of ``sha256`` (its changes are kept until
    :func:`save_filing_changes` writes new ones); ``not_judged``: why a contract-profile document is judged
    neither for missing clauses nor by the playbook (:func:`tasks.check.absences.contract_expected`)."""
    row = session.get(DocumentProfileRow, sha256) or DocumentProfileRow(
        sha256=sha256, profile="", document_type="", reason=""
    )
    row.profile, row.document_type, row.reason = kind.profile.value, kind.document_type, kind.reason
    row.company, row.company_key, row.period = kind.company, company_key, kind.period
    row.amendment = kind.amendment
    row.summary = summary.model_dump(mode="json") if summary is not None else {}
    row.not_judged = not_judged
    row.updated_at = utcnow()
    session.add(row)


def load_profiles(session: Session, sha256s: list[str]) -> dict[str, DocumentProfileRow]:
    """``{sha256: row}`` of the given documents that have a profile row."""
    if not sha256s:
        return {}
    rows = session.exec(select(DocumentProfileRow).where(col(DocumentProfileRow.sha256).in_(sha256s))).all()
    return {r.sha256: r for r in rows}


def previous_filing(session: Session, sha256: str) -> DocumentProfileRow | None:
    """The filing ``sha256`` is compared with: for an amendment (Form 10-K/A, 10-Q/A), the filing it
    amends — the same company, form and period, not itself an amendment; else the latest earlier
    filing of the same company and form (by ``period``, ISO dates compare as text; an amendment is
    not the previous filing when its original is stored). None when ``sha256`` is no filing, has no
    company or period, or has no such filing stored."""
    row = session.get(DocumentProfileRow, sha256)
    if row is None or row.profile != "filing" or not row.company_key or not row.period:
        return None
    same = select(DocumentProfileRow).where(
        DocumentProfileRow.company_key == row.company_key,
        DocumentProfileRow.document_type == row.document_type,
        DocumentProfileRow.sha256 != sha256,
    )
    if row.amendment:
        return session.exec(
            same.where(DocumentProfileRow.period == row.period, col(DocumentProfileRow.amendment).is_(False))
        ).first()
    return session.exec(
        same.where(col(DocumentProfileRow.period) < row.period).order_by(
            col(DocumentProfileRow.period).desc(), col(DocumentProfileRow.amendment)
        )
    ).first()


def save_filing_changes(
    session: Session, sha256: str, previous_sha256: str | None, changes: list[FilingChange]
) -> None:
    """Store the changes of ``sha256`` since ``previous_sha256`` (replacing earlier ones)."""
    row = session.get(DocumentProfileRow, sha256)
    if row is None:
        return
    row.previous_sha256 = previous_sha256
    row.changes = [c.model_dump(mode="json") for c in changes]
    row.updated_at = utcnow()
    session.add(row)


def profile_fields(row: DocumentProfileRow | None) -> dict[str, Any]:
    """The report fields of a profile row: ``profile``, ``document_type``, ``profile_reason``,
    ``company``, ``period``, ``amendment`` (a Form 10-K/A or 10-Q/A) and ``not_judged`` (why a contract-profile
    document gets no missing-clause alarm and no playbook result, None for an agreement); a document without a row is
    a contract (reviewed before profiles)."""
    if row is None:
        return {
            "profile": "contract",
            "document_type": "contract",
            "profile_reason": "reviewed before document profiles were recorded",
            "company": None,
            "period": None,
            "amendment": False,
            "not_judged": None,
        }
    return {
        "amendment": bool(row.amendment),
        "not_judged": row.not_judged,
        "profile": row.profile,
        "document_type": row.document_type,
        "profile_reason": row.reason,
        "company": row.company,
        "period": row.period,
    }
