"""Persist: SQLModel reads and writes, idempotent on natural keys, for SQLite and PostgreSQL.

Every read and write takes a SQLModel ``Session`` and never commits it: the caller opens one unit of
work per step (:func:`unit_of_work`, SQLModel's ``with Session(engine) as session`` pattern) and its
writes commit together when the step ends, or not at all. A document's conclusion (findings, absences,
the skip-ledger entry, drift and its outcome in the run) is one such unit, so a process killed between
its writes leaves the document not concluded rather than half concluded.

SQLite runs in WAL mode with a 30 s busy timeout (PITFALLS: "database is locked" under threaded
writers). Every write is a dialect-aware ``INSERT … ON CONFLICT`` on the table's natural key,
so a retry or a re-run never duplicates a row.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, col, create_engine, or_, select

from schemas.documents import Chunk, DocumentStatus, ExtractedDocument, IngestOutcome
from schemas.findings import CheckedFinding
from schemas.review import LLMCallRecord
from schemas.tables import (
    CheckRow,
    ChunkRow,
    DocumentReviewRow,
    DocumentRow,
    FindingObservationRow,
    FindingRow,
    LLMCallRow,
    RunDocumentRow,
    RunMetricRow,
    RunRow,
    utcnow,
)
from tasks.runnames import for_document
from tasks.textnorm import match_form

#: SQLite busy timeout, milliseconds (well above the 5 s default).
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: PostgreSQL connections kept open per process and engine, and the extra ones allowed at peaks.
PG_POOL_SIZE = 5
PG_MAX_OVERFLOW = 5

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def get_engine(database_url: str) -> Engine:
    """Engine for ``database_url`` (one per URL per process), migrated to the head revision on
    first use (:func:`_create_tables`). PostgreSQL connections are pooled per process, at most
    :data:`PG_POOL_SIZE` + :data:`PG_MAX_OVERFLOW` (a Dask or Prefect worker process included)."""
    with _engines_lock:
        engine = _engines.get(database_url)
        if engine is None:
            if database_url.startswith("sqlite"):
                engine = create_engine(
                    database_url,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
                )
                event.listen(engine, "connect", _sqlite_pragmas)
            else:
                engine = create_engine(
                    database_url, pool_pre_ping=True, pool_size=PG_POOL_SIZE, max_overflow=PG_MAX_OVERFLOW
                )
            _create_tables(engine)
            _engines[database_url] = engine
        return engine


def _create_tables(engine: Engine, attempts: int = 5) -> None:
    """Bring the database to the newest schema by running the Alembic migrations
    (:func:`schemas.migrations.upgrade_database`). Safe when another process (a second worker, a
    restarted run) opens the same new database at the same moment: the upgrade runs under a lock
    (PostgreSQL advisory lock, SQLite ``BEGIN IMMEDIATE``) and transient errors are retried up to
    ``attempts`` times, then re-raised (``sqlalchemy.exc.DBAPIError``). A database created before
    migrations existed is adopted (missing tables and columns are added).

    A database already at the head revision (every run after the first) is recognised without
    Alembic (:func:`_at_head`): importing Alembic and reading its revision scripts cost about
    0.2 s of every run's start."""
    if _at_head(engine):
        return
    from schemas.migrations import upgrade_database

    upgrade_database(engine, attempts=attempts)


#: The revision scripts (``schemas/migrations/versions``), read by :func:`_head_revision_fast`.
_VERSIONS = Path(__file__).resolve().parents[2] / "schemas" / "migrations" / "versions"
_REVISION = re.compile(r"^revision(?:\s*:\s*str)?\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN_REVISION = re.compile(r"^down_revision\b[^=]*=\s*(.+)$", re.M)


@functools.cache
def _head_revision_fast() -> str | None:
    """The head revision read from the scripts' ``revision``/``down_revision`` lines, or None
    when that does not give exactly one head (Alembic then decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in _VERSIONS.glob("*.py"):
        text = script.read_text(encoding="utf-8")
        found = _REVISION.search(text)
        if found is None:
            continue
        revisions.add(found.group(1))
        down = _DOWN_REVISION.search(text)
        if down is not None:
            parents.update(re.findall(r"['\"]([^'\"]+)['\"]", down.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _at_head(engine: Engine) -> bool:
    """True when the database's ``alembic_version`` holds exactly the head revision (one query);
    False when it does not, cannot be read or the head is unclear: the full upgrade then runs."""
    head = _head_revision_fast()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    except Exception:  # no table yet (a new database), or anything else: Alembic decides
        return False
    return [r[0] for r in rows] == [head]


def dispose_engines() -> None:
    """Close every pooled connection (end of a CLI run or a test)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


@contextmanager
def unit_of_work(database_url: str) -> Iterator[Session]:
    """A ``Session`` on the database's engine (:func:`get_engine`) for one step's reads and writes:
    committed when the block ends normally, rolled back when it raises (the exception goes on), closed
    either way. Rows read in it stay readable after the block (``expire_on_commit=False``).

    A ``Session`` belongs to one thread. On SQLite a block that has written holds the database's write
    lock until it ends, so a block never opens another unit of work that writes (it would wait for
    itself for the busy timeout)."""
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        try:
            yield session
        except BaseException:
            session.rollback()
            raise
        session.commit()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def upsert(
    session: Session,
    model: type[SQLModel],
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    update: Iterable[str] = (),
) -> None:
    """``INSERT … ON CONFLICT (keys) DO UPDATE SET update`` (or ``DO NOTHING``) for ``rows``.

    ``rows`` all have the same keys. One statement executed with every row as its parameters
    (SQLAlchemy's "executemany": the driver's executemany on SQLite, insertmanyvalues batches on
    PostgreSQL): compiled once and cached, where a VALUES list of the rows would be compiled anew
    for every call.
    Works on SQLite and PostgreSQL. Raises ``NotImplementedError`` for other dialects.
    """
    if not rows:
        return
    table = model.__table__  # type: ignore[attr-defined]
    dialect = session.get_bind().dialect.name
    stmt: sqlite.Insert | postgresql.Insert
    if dialect == "sqlite":
        stmt = sqlite.insert(table)
    elif dialect == "postgresql":
        stmt = postgresql.insert(table)
    else:  # pragma: no cover - guarded by configuration
        raise NotImplementedError(f"upsert is not implemented for {dialect}")
    update = list(update)
    if update:
        stmt = stmt.on_conflict_do_update(index_elements=list(keys), set_={c: stmt.excluded[c] for c in update})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(keys))
    session.execute(stmt, [dict(r) for r in rows])


def finding_key(sha256: str, prompt_version: str, model: str, clause_type: str, evidence: str) -> str:
    """Natural key of a finding: sha256 over stable identifiers and the normalised quote."""
    norm, _ = match_form(evidence)
    raw = "\x1f".join([sha256, prompt_version, model, clause_type, norm])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def finding_anchor(sha256: str, clause_type: str, evidence: str) -> str:
    """Model-independent key of a finding (document, clause type, normalised quote), for drift."""
    norm, _ = match_form(evidence)
    return hashlib.sha256("\x1f".join([sha256, clause_type, norm]).encode("utf-8")).hexdigest()


# --- reads -----------------------------------------------------------------------------


def reviewed_keys(session: Session, prompt_version: str, model: str, any_checks: bool = False) -> set[str]:
    """sha256 of every document already reviewed with this prompt version and model.

    The skip ledger's ``prompt_version`` is the run's *ledger version*, ``"<prompt version>; checks <checks
    version>"`` (``flows.pipeline.Run.ledger_version``). ``any_checks``: ``prompt_version`` is the bare prompt
    version and a document counts whatever checks version it was stored under (a review made before the
    checks version was part of the key counts too): the documents whose stored review can be checked again."""
    same_prompt = col(DocumentReviewRow.prompt_version) == prompt_version
    if any_checks:
        same_prompt = or_(
            same_prompt,
            col(DocumentReviewRow.prompt_version).startswith(f"{prompt_version}; checks ", autoescape=True),
        )
    rows = session.exec(select(DocumentReviewRow.sha256).where(same_prompt, DocumentReviewRow.model == model)).all()
    return set(rows)


def deferred_sources(session: Session) -> set[str]:
    """Source URIs whose most recent run ended them ``deferred``: the next run takes them up first."""
    from sqlalchemy import func as sa_func

    latest = (
        select(RunDocumentRow.source, sa_func.max(RunDocumentRow.updated_at).label("at"))
        .group_by(RunDocumentRow.source)
        .subquery()
    )
    rows = session.exec(
        select(RunDocumentRow.source)
        .join(
            latest,
            (col(RunDocumentRow.source) == latest.c.source) & (col(RunDocumentRow.updated_at) == latest.c.at),
        )
        .where(RunDocumentRow.status == DocumentStatus.deferred.value)
    ).all()
    return set(rows)


def load_findings(session: Session, sha256: str, prompt_version: str, model: str) -> list[FindingRow]:
    """Stored findings of a document for a prompt version and model, by page then chunk."""
    rows = session.exec(
        select(FindingRow)
        .where(
            FindingRow.sha256 == sha256,
            FindingRow.prompt_version == prompt_version,
            FindingRow.model == model,
        )
        .order_by(col(FindingRow.page), col(FindingRow.chunk_index), col(FindingRow.id))
    ).all()
    return list(rows)


def load_checks(session: Session, keys: list[str]) -> dict[str, list[CheckRow]]:
    """Checks of the given findings, ``{finding_key: [CheckRow]}``."""
    out: dict[str, list[CheckRow]] = {}
    if not keys:
        return out
    for i in range(0, len(keys), 500):
        rows = session.exec(select(CheckRow).where(col(CheckRow.finding_key).in_(keys[i : i + 500]))).all()
        for row in rows:
            out.setdefault(row.finding_key, []).append(row)
    return out


def load_document(session: Session, sha256: str) -> DocumentRow | None:
    """The stored document row for ``sha256``, if any."""
    return session.exec(select(DocumentRow).where(DocumentRow.sha256 == sha256)).first()


# --- writes (Prefect tasks: one side effect each) --------------------------------------


@task(name="start-run", cache_policy=NO_CACHE)
def start_run(
    session: Session,
    run_id: str,
    source: str,
    backend: str,
    model: str,
    prompt_version: str,
    flow_run_id: str | None,
) -> None:
    """Insert the run row (idempotent on ``run_id``)."""
    upsert(
        session,
        RunRow,
        [
            dict(
                id=run_id,
                source=source,
                backend=backend,
                model=model,
                prompt_version=prompt_version,
                flow_run_id=flow_run_id,
                started_at=utcnow(),
                status="running",
            )
        ],
        keys=["id"],
    )


def page_flags_of(document: ExtractedDocument) -> dict[str, Any]:
    """The ``documents.page_flags`` JSON of an extracted document.

    ``{flag: [1-based pages]}`` for every flag of :meth:`schemas.documents.PageQuality.flags`
    (``empty``, ``not_read``, ``glued_words``, ``private_use_chars``, ``nul_chars``), plus
    ``"not_read_reasons": {"<page>": library message}`` and ``"ligatures_restored": {"<page>":
    count}`` when there are any.
    """
    flags: dict[str, Any] = {}
    for page in document.pages:
        for flag in page.quality.flags():
            flags.setdefault(flag, []).append(page.number)
        if page.quality.not_read:
            flags.setdefault("not_read_reasons", {})[str(page.number)] = page.quality.not_read
        if page.quality.ligatures_restored:
            flags.setdefault("ligatures_restored", {})[str(page.number)] = page.quality.ligatures_restored
    return flags


def unit_labels(document: ExtractedDocument) -> dict[int, str]:
    """``{unit number: locator label}`` of the document's units whose label is not the plain
    ``"page N"`` (OCR'd pages, every DOCX paragraph); see :meth:`schemas.documents.Locator.label`."""
    out = {}
    for page in document.pages:
        label = document.locator_of(page.number).label()
        if label != f"page {page.number}":
            out[page.number] = label
    return out


def structure_of(document: ExtractedDocument) -> dict[str, Any]:
    """The ``documents.structure`` JSON: ``{"locators": {"<unit>": label}, "units": {"<unit>": Locator dict},
    "changes": [...],
    "comments": [...]}`` (changes and comments as :class:`schemas.documents.TrackedChange` and
    :class:`schemas.documents.Comment` dicts, each with its ``locator`` label added), plus for EDGAR
    documents ``"edgar"`` (its own part header), ``"parts"`` (a submission's other documents) and
    ``"exhibit_links"`` (the exhibit files its index links to) when present."""
    labels = unit_labels(document)

    def where(unit: int) -> str:
        return labels.get(unit) or document.locator_of(unit).label()

    out: dict[str, Any] = {
        "locators": {str(k): v for k, v in labels.items()},
        "units": {str(k): v.model_dump(exclude_none=True) for k, v in document.unit_locators().items()},
        "changes": [{**c.model_dump(mode="json"), "locator": where(c.unit)} for c in document.changes],
        "comments": [{**c.model_dump(mode="json"), "locator": where(c.unit)} for c in document.comments],
    }
    if document.edgar:
        out["edgar"] = dict(document.edgar)
    if document.parts:
        out["parts"] = [dict(p) for p in document.parts]
    if document.exhibit_links:
        out["exhibit_links"] = list(document.exhibit_links)
    return out


class _NoEmptyTraceback(logging.Filter):
    """Prefect logs a task run that returned a ``Failed`` state (:func:`save_document_outcome` for a
    failed document) with ``exc_info=True`` and no exception in flight, which the log prints as a
    ``NoneType: None`` line under the message: the empty exception info is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[0] is None:
            record.exc_info = None
        return True


logging.getLogger("prefect.task_runs").addFilter(_NoEmptyTraceback())


@task(name="save-document-outcome", task_run_name=for_document("save-outcome"), cache_policy=NO_CACHE)
def save_document_outcome(
    session: Session,
    run_id: str,
    outcome: IngestOutcome,
    status: DocumentStatus,
    reason: str | None,
    findings: int = 0,
    reused: bool = False,
) -> State | None:
    """Record a source object's terminal state in this run (and its document row).

    ``reused`` marks a document whose review from an earlier run was reused. For a ``failed``
    object, returns a ``Failed`` state whose message is the reason: the task run that concludes the
    document ends Failed in the Prefect UI (a returned state, not an exception: the caller reads it
    with ``return_state=True``, and the flow run's own state is unchanged).
    """
    doc: ExtractedDocument | None = outcome.document
    if outcome.sha256:
        flags = page_flags_of(doc) if doc else {}
        row = dict(
            sha256=outcome.sha256,
            file_name=outcome.source.name,
            size_bytes=outcome.source.size_bytes,
            pages=outcome.pages,
            page_flags=flags,
            first_seen_at=utcnow(),
            kind=doc.kind.value if doc else None,
            structure=structure_of(doc) if doc else None,
        )
        # Keep what an earlier extraction learnt when this run skipped extraction.
        update = ["pages", "page_flags", "kind", "structure"] if doc is not None else []
        upsert(session, DocumentRow, [row], keys=["sha256"], update=update)
    upsert(
        session,
        RunDocumentRow,
        [
            dict(
                run_id=run_id,
                source=outcome.source.uri,
                file_name=outcome.source.name,
                sha256=outcome.sha256,
                status=status.value,
                failure_kind=outcome.failure.value if outcome.failure else None,
                reason=reason,
                pages=outcome.pages,
                findings=findings,
                reused=reused,
                updated_at=utcnow(),
            )
        ],
        keys=["run_id", "source"],
        update=["sha256", "status", "failure_kind", "reason", "pages", "findings", "reused", "updated_at"],
    )
    if status is DocumentStatus.failed:
        return Failed(message=f"{outcome.source.name} failed: {reason}")
    return None


@task(name="save-chunks", task_run_name=for_document("save-chunks"), cache_policy=NO_CACHE)
def save_chunks(session: Session, chunks: list[Chunk], chunker: str, decisions: list[Any] | None = None) -> None:
    """Insert a document's chunks (no-op for chunks already stored).

    ``decisions`` (:class:`tasks.review.route.RouteDecision`, matched by chunk index) set each chunk's
    ``route``, ``route_reason`` and ``route_ranges`` (JSON list of the document ranges it sends to
    review); they are updated on chunks already stored.
    """
    routes = {d.chunk_index: d for d in decisions or []}
    rows = [
        dict(
            sha256=c.document_sha256,
            chunker=chunker,
            chunk_index=c.index,
            char_start=c.char_start,
            char_end=c.char_end,
            page_start=c.page_start,
            page_end=c.page_end,
            heading=c.heading,
            text=c.text,
            route=routes[c.index].route if c.index in routes else None,
            route_reason=routes[c.index].reason if c.index in routes else None,
            route_ranges=json.dumps(routes[c.index].deep_ranges) if c.index in routes else None,
        )
        for c in chunks
    ]
    update = ["route", "route_reason", "route_ranges"] if routes else []
    for i in range(0, len(rows), 200):
        upsert(session, ChunkRow, rows[i : i + 200], keys=["sha256", "chunker", "chunk_index"], update=update)


@task(name="save-findings", task_run_name=for_document("save-findings"), cache_policy=NO_CACHE)
def save_findings(
    session: Session,
    run_id: str,
    sha256: str,
    backend: str,
    model: str,
    prompt_version: str,
    checked: list[CheckedFinding],
    locators: dict[int, str] | None = None,
) -> int:
    """Insert fact-checked findings and their checks; returns the number of distinct findings.

    ``locators`` (:func:`unit_labels`) give a finding's ``locator`` from its ``page`` (the unit it was
    grounded on); units not in it are ``"page N"``.

    A finding already stored (same natural key) keeps its row, updated to this review's
    summary, risk, page, values and verdict; its checks are refreshed. Every finding is also
    recorded as observed by ``run_id`` (``finding_observations``, for drift between runs).
    """
    finding_rows: dict[str, dict[str, Any]] = {}
    check_rows: dict[tuple[str, str], dict[str, Any]] = {}
    observed: list[dict[str, Any]] = []
    for cf in checked:
        f = cf.finding
        key = finding_key(sha256, prompt_version, model, f.clause_type.value, f.evidence)
        if key in finding_rows:
            continue  # same clause quoted again from an overlapping chunk
        finding_rows[key] = dict(
            finding_key=key,
            sha256=sha256,
            prompt_version=prompt_version,
            model=model,
            backend=backend,
            chunk_index=cf.chunk_index,
            clause_type=f.clause_type.value,
            summary=f.summary,
            risk=f.risk.value,
            evidence=f.evidence,
            page=f.page,
            stated_page=cf.stated_page,
            values=f.values_dict(),
            verdict=cf.verdict.value,
            run_id=run_id,
            created_at=utcnow(),
            locator=(locators or {}).get(f.page) or f"page {f.page}",
        )
        observed.append(
            dict(
                run_id=run_id,
                sha256=sha256,
                finding_key=key,
                clause_type=f.clause_type.value,
                anchor=finding_anchor(sha256, f.clause_type.value, f.evidence),
                values=f.values_dict(),
                verdict=cf.verdict.value,
            )
        )
        for c in cf.checks:
            check_rows[(key, c.name)] = dict(finding_key=key, name=c.name, verdict=c.verdict.value, reason=c.reason)
    rows = list(finding_rows.values())
    for i in range(0, len(rows), 200):
        upsert(
            session,
            FindingRow,
            rows[i : i + 200],
            keys=["finding_key"],
            update=["summary", "risk", "page", "stated_page", "values", "verdict", "locator"],
        )
    for i in range(0, len(observed), 200):
        upsert(
            session,
            FindingObservationRow,
            observed[i : i + 200],
            keys=["run_id", "finding_key"],
            update=["values", "verdict"],
        )
    crow = list(check_rows.values())
    for i in range(0, len(crow), 200):
        upsert(session, CheckRow, crow[i : i + 200], keys=["finding_key", "name"], update=["verdict", "reason"])
    return len(finding_rows)


@task(
    name="save-llm-calls",
    task_run_name=for_document("save-llm-calls", lambda p: f"chunk {p['chunk_index'] + 1}"),
    cache_policy=NO_CACHE,
)
def save_llm_calls(session: Session, run_id: str, sha256: str, chunk_index: int, calls: list[LLMCallRecord]) -> None:
    """Record the model calls made for one chunk (idempotent on run, document, chunk, attempt)."""
    rows = [
        dict(run_id=run_id, sha256=sha256, chunk_index=chunk_index, **c.model_dump(), created_at=utcnow())
        for c in calls
    ]
    upsert(
        session,
        LLMCallRow,
        rows,
        keys=["run_id", "sha256", "chunk_index", "attempt"],
        update=[k for k in LLMCallRecord.model_fields if k != "attempt"],
    )


def save_document_flags(session: Session, sha256: str, flags: list[Any]) -> None:
    """Store a document's hostile-input flags (:class:`tasks.check.injection.DocumentFlag`), idempotently
    on (sha256, detector, kind, rule, char_start); a re-run refreshes reason, excerpt and chunks."""
    from schemas.tables import DocumentFlagRow

    rows = [
        dict(
            sha256=sha256,
            detector=f.detector,
            kind=f.kind,
            rule=f.rule,
            char_start=f.char_start,
            char_end=f.char_end,
            page=f.page,
            reason=f.reason,
            excerpt=f.excerpt,
            chunk_indices=list(f.chunk_indices),
            created_at=utcnow(),
        )
        for f in flags
    ]
    for i in range(0, len(rows), 200):
        upsert(
            session,
            DocumentFlagRow,
            rows[i : i + 200],
            keys=["sha256", "detector", "kind", "rule", "char_start"],
            update=["char_end", "page", "reason", "excerpt", "chunk_indices"],
        )


def load_document_flags(session: Session, sha256: str, detectors: Iterable[str]) -> list[Any]:
    """Stored flags of a document from the given detector versions, by offset (``DocumentFlagRow``)."""
    from schemas.tables import DocumentFlagRow

    return list(
        session.exec(
            select(DocumentFlagRow)
            .where(DocumentFlagRow.sha256 == sha256, col(DocumentFlagRow.detector).in_(list(detectors)))
            .order_by(col(DocumentFlagRow.char_start), col(DocumentFlagRow.rule))
        ).all()
    )


def absence_key(sha256: str, prompt_version: str, model: str, clause_type: str) -> str:
    """Natural key of an absence: sha256 over document, prompt version, model and clause type."""
    return hashlib.sha256("\x1f".join([sha256, prompt_version, model, clause_type]).encode("utf-8")).hexdigest()


@task(name="save-absences", task_run_name=for_document("save-absences"), cache_policy=NO_CACHE)
def save_absences(
    session: Session,
    run_id: str,
    sha256: str,
    prompt_version: str,
    model: str,
    absences: list[Any],
) -> int:
    """Record high-risk categories with no finding (:class:`tasks.check.absences.Absence`); returns how many.

    Idempotent on ``absence_key``; a re-review refreshes the examined chunks, reason and run. A
    category that now has a finding loses its absence row.
    """
    from schemas.tables import AbsenceRow

    rows = [
        dict(
            absence_key=absence_key(sha256, prompt_version, model, a.clause_type.value),
            sha256=sha256,
            prompt_version=prompt_version,
            model=model,
            clause_type=a.clause_type.value,
            chunks=list(a.chunks),
            chunk_count=len(a.chunks),
            verdict=a.verdict.value,
            reason=a.reason,
            run_id=run_id,
            created_at=utcnow(),
        )
        for a in absences
    ]
    stale = session.exec(
        select(AbsenceRow).where(
            AbsenceRow.sha256 == sha256,
            AbsenceRow.prompt_version == prompt_version,
            AbsenceRow.model == model,
            col(AbsenceRow.clause_type).not_in([r["clause_type"] for r in rows] or [""]),
        )
    ).all()
    for row in stale:
        session.delete(row)
    upsert(
        session,
        AbsenceRow,
        rows,
        keys=["absence_key"],
        update=["chunks", "chunk_count", "verdict", "reason", "run_id"],
    )
    return len(rows)


def load_absences(session: Session, sha256: str, prompt_version: str, model: str) -> list[Any]:
    """The :class:`schemas.tables.AbsenceRow` rows of a document's review, by clause type."""
    from schemas.tables import AbsenceRow

    return list(
        session.exec(
            select(AbsenceRow)
            .where(
                AbsenceRow.sha256 == sha256,
                AbsenceRow.prompt_version == prompt_version,
                AbsenceRow.model == model,
            )
            .order_by(AbsenceRow.clause_type)
        ).all()
    )


def latest_decisions(session: Session, keys: list[str]) -> dict[str, Any]:
    """Latest :class:`schemas.tables.ReviewerDecision` per target key (finding or absence key)."""
    from schemas.tables import ReviewerDecision

    out: dict[str, Any] = {}
    if not keys:
        return out
    for i in range(0, len(keys), 500):
        rows = session.exec(
            select(ReviewerDecision).where(col(ReviewerDecision.target_key).in_(keys[i : i + 500]))
        ).all()
        for row in rows:
            if row.target_key not in out or row.seq > out[row.target_key].seq:
                out[row.target_key] = row
    return out


@task(name="mark-document-reviewed", task_run_name=for_document("mark-reviewed"), cache_policy=NO_CACHE)
def mark_document_reviewed(
    session: Session,
    sha256: str,
    prompt_version: str,
    model: str,
    backend: str,
    run_id: str,
    chunks: int,
    findings: int,
) -> None:
    """Add the document to the skip ledger; written last, after its findings are stored."""
    upsert(
        session,
        DocumentReviewRow,
        [
            dict(
                sha256=sha256,
                prompt_version=prompt_version,
                model=model,
                backend=backend,
                run_id=run_id,
                chunks=chunks,
                findings=findings,
                reviewed_at=utcnow(),
            )
        ],
        keys=["sha256", "prompt_version", "model"],
    )


@task(name="finish-run", cache_policy=NO_CACHE)
def finish_run(session: Session, run_id: str, metrics: dict[str, float], status: str = "completed") -> datetime:
    """Store the run's metrics and mark it finished; returns the finish time (UTC)."""
    finished = utcnow()
    upsert(
        session,
        RunMetricRow,
        [dict(run_id=run_id, name=k, value=float(v)) for k, v in metrics.items()],
        keys=["run_id", "name"],
        update=["value"],
    )
    run = session.get(RunRow, run_id)
    if run is not None:
        run.finished_at = finished
        run.status = status
        session.add(run)
    return finished


def chunk_cache_key(chunk_text: str, prompt_version: str, model: str) -> str:
    """Cache key of a chunk review: stable identifiers only (content hash, prompt version, model)."""
    content = hashlib.sha256(chunk_text.encode("utf-8")).hexdigest()
    return hashlib.sha256("\x1f".join([content, prompt_version, model]).encode("utf-8")).hexdigest()


def save_chunk_result(
    session: Session, key: str, prompt_version: str, model: str, findings: list[dict[str, Any]]
) -> None:
    """Store a successful chunk review for reuse (first result for a key wins)."""
    from schemas.tables import ChunkResultRow

    upsert(
        session,
        ChunkResultRow,
        [dict(cache_key=key, prompt_version=prompt_version, model=model, findings=findings, created_at=utcnow())],
        keys=["cache_key"],
    )


def load_chunk_result(session: Session, key: str) -> list[dict[str, Any]] | None:
    """The stored findings (JSON dumps) for ``key``, or None when this chunk was never reviewed."""
    from schemas.tables import ChunkResultRow

    row = session.exec(select(ChunkResultRow).where(ChunkResultRow.cache_key == key)).first()
    return list(row.findings) if row is not None else None


def known_source_sha256(session: Session, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """``{(uri, etag): sha256}`` for the bucket-object versions in ``keys`` that an earlier run
    fetched and hashed (``source_objects``). S3 gives an overwritten object a new ETag, so an
    object listed with a known ``(uri, etag)`` holds the bytes hashed then and need not be
    downloaded again to learn its sha256. Queried 500 keys at a time."""
    from schemas.tables import SourceObjectRow

    found: dict[tuple[str, str], str] = {}
    wanted = set(keys)
    uris = sorted({uri for uri, _ in wanted})
    for i in range(0, len(uris), 500):
        rows = session.exec(
            select(SourceObjectRow.uri, SourceObjectRow.etag, SourceObjectRow.sha256).where(
                col(SourceObjectRow.uri).in_(uris[i : i + 500]), col(SourceObjectRow.sha256).is_not(None)
            )
        ).all()
        found.update({(u, e): h for u, e, h in rows if (u, e) in wanted and h is not None})
    return found


@task(name="save-source-object", task_run_name=for_document("save-source-object"), cache_policy=NO_CACHE)
def save_source_object(session: Session, run_id: str, outcome: IngestOutcome) -> None:
    """Record the S3 ETag, VersionId and sha256 of a bucket object this run fetched
    (``source_objects``, natural key ``(uri, etag)``; a later run of the same version updates
    ``last_run_id``). No-op for an object without an ETag (a local file)."""
    from schemas.tables import SourceObjectRow

    src = outcome.source
    if not src.etag:
        return
    row = dict(
        uri=src.uri,
        etag=src.etag,
        version_id=src.version_id,
        sha256=outcome.sha256,
        size_bytes=src.size_bytes,
        first_run_id=run_id,
        last_run_id=run_id,
        fetched_at=utcnow(),
    )
    update = ["last_run_id", "fetched_at"] + [k for k in ("version_id", "sha256") if row[k] is not None]
    upsert(session, SourceObjectRow, [row], keys=["uri", "etag"], update=update)


def save_playbook_results(
    session: Session, run_id: str, playbook: str, documents: list[tuple[str, str, list[dict[str, Any]]]]
) -> int:
    """Record playbook results (:func:`tasks.check.playbook.evaluate_document`) of a run:
    ``documents`` is ``[(sha256, file_name, results)]``; returns how many rows were written.
    Idempotent on (run, document, rule): a repeated call updates the rows."""
    from schemas.tables import PlaybookResultRow

    rows = [
        dict(
            run_id=run_id,
            sha256=sha,
            file_name=name,
            playbook=playbook,
            rule_id=r["rule"],
            clause_type=r["clause"],
            expect=r["expect"],
            status=r["status"],
            severity=r["severity"],
            reason=r["reason"],
            finding_ids=[int(i) for i in r["finding_ids"]],
            created_at=utcnow(),
        )
        for sha, name, results in documents
        for r in results
    ]
    for i in range(0, len(rows), 500):
        upsert(
            session,
            PlaybookResultRow,
            rows[i : i + 500],
            keys=["run_id", "sha256", "rule_id"],
            update=["status", "severity", "reason", "finding_ids", "playbook", "file_name"],
        )
    return len(rows)


def load_playbook_results(session: Session, run_id: str) -> dict[str, list[Any]]:
    """A run's :class:`schemas.tables.PlaybookResultRow` rows by document sha256, in rule order."""
    from schemas.tables import PlaybookResultRow

    out: dict[str, list[Any]] = {}
    for row in session.exec(
        select(PlaybookResultRow).where(PlaybookResultRow.run_id == run_id).order_by(col(PlaybookResultRow.id))
    ).all():
        out.setdefault(row.sha256, []).append(row)
    return out


def save_run_playbook(session: Session, run_id: str, name: str, source: str | None, definition: dict[str, Any]) -> None:
    """Record the playbook run ``run_id`` applied (:class:`schemas.tables.RunPlaybookRow`): ``definition`` is
    the validated playbook as JSON (``Playbook.model_dump(mode="json")``). Idempotent: a repeated call
    replaces the row."""
    from schemas.tables import RunPlaybookRow

    row = session.get(RunPlaybookRow, run_id) or RunPlaybookRow(run_id=run_id, name=name)
    row.name, row.source, row.definition = name, source, definition
    session.add(row)


def load_run_playbook(session: Session, run_id: str) -> Any | None:
    """The :class:`schemas.tables.RunPlaybookRow` of ``run_id``; None for a run without a playbook, or one made
    before runs recorded theirs (its stored ``playbook_results`` are then all there is)."""
    from schemas.tables import RunPlaybookRow

    return session.get(RunPlaybookRow, run_id)
