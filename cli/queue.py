"""The review queue: ``docreview queue`` and ``docreview decide``.

The queue holds every stored finding whose verdict is ``unsupported``, ``contradicted`` or
``needs_review``, and every recorded absence of a high-risk clause (``absences`` table). A
reviewer approves or rejects an item, or reclassifies a finding as another category
(``reclassify --as CATEGORY``); each decision is a new :class:`ReviewerDecision` row appended to
the decision chain (:mod:`tasks.store.decisions`: history kept, tamper-evident) with the reviewer's
name and the time, the latest per item wins, and repeating the latest decision by the same
reviewer with the same note adds nothing (idempotent). Decided items form a gold set
(``docreview queue --gold FILE``).

Item ids: findings by their ``findings.id`` (the ``id`` in ``report.json``); absences as
``A<absences.id>``.

Below the queue, ``docreview queue`` lists each document's playbook deviations from the latest
run that applied a playbook to it (``playbook_results``); a deviation rests on findings, which are
decided by their ids.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import ColumnElement, or_
from sqlmodel import Session, col, select

from cli.common import stored_database, table_console
from schemas.decisions import MAX_REVIEWER_CHARS, Decision
from schemas.tables import AbsenceRow, CheckRow, DocumentRow, FindingRow, ReviewerDecision
from tasks.check.absences import NOT_EXPECTED

#: Verdicts that put a finding in the review queue.
QUEUE_VERDICTS = ("unsupported", "contradicted", "needs_review")
DECISIONS = tuple(d.value for d in Decision)

console = table_console()
err = Console(stderr=True, soft_wrap=True)


def _db(url: str | None) -> str:
    """``--db`` or the configured URL of a reviewed database (:func:`cli.common.stored_database`)."""
    return stored_database(url)


def queue_items(
    database_url: str, pending_only: bool = False, include: list[str] | None = None
) -> list[dict[str, Any]]:
    """Queued items, findings first (by document, page), then absences.

    Each item: ``{id, kind (finding|absence), key, sha256, file_name, clause_type, verdict,
    page, locator (the finding's one locator, :func:`tasks.observe.report.unit_locator`: ``page`` is None in a
    DOCX), evidence, reasons: [str], decision: {decision, note, decided_at, seq} | None}``.
    An absence recorded as information because no clause is expected of its document (its reason starts
    :data:`tasks.check.absences.NOT_EXPECTED`: not an agreement, an exhibit that is none, a partial copy) is
    left out unless a reviewer decided it.
    ``pending_only`` drops items that already have a decision; ``include`` adds the findings with
    these keys whatever their verdict (a reviewer may decide on a verified finding too).
    """
    from tasks.observe.report import cite_finding_ids, unit_locator
    from tasks.store.persist import get_engine, latest_decisions

    with Session(get_engine(database_url)) as session:
        queued: ColumnElement[bool] = col(FindingRow.verdict).in_(QUEUE_VERDICTS)
        if include:
            queued = or_(queued, col(FindingRow.finding_key).in_(include))
        findings = session.exec(
            select(FindingRow).where(queued).order_by(col(FindingRow.sha256), col(FindingRow.page), col(FindingRow.id))
        ).all()
        absences = session.exec(select(AbsenceRow).order_by(AbsenceRow.sha256, AbsenceRow.clause_type)).all()
        shas = {f.sha256 for f in findings} | {a.sha256 for a in absences}
        documents = session.exec(select(DocumentRow).where(col(DocumentRow.sha256).in_(shas))).all() if shas else []
        names = {d.sha256: d.file_name for d in documents}
        where = {d.sha256: unit_locator(d.kind, dict(d.structure or {})) for d in documents}
        keys = [f.finding_key for f in findings]
        cited = {  # finding_key prefix -> id: reasons cite other findings of the document by key prefix
            key[:12]: fid
            for key, fid in session.exec(
                select(FindingRow.finding_key, FindingRow.id).where(col(FindingRow.sha256).in_(shas))
            ).all()
            if fid is not None
        }
        checks: dict[str, list[CheckRow]] = {}
        for i in range(0, len(keys), 500):
            for c in session.exec(select(CheckRow).where(col(CheckRow.finding_key).in_(keys[i : i + 500]))).all():
                checks.setdefault(c.finding_key, []).append(c)
        decided = latest_decisions(session, keys + [a.absence_key for a in absences])
    items: list[dict[str, Any]] = []
    for f in findings:
        items.append(
            dict(
                id=str(f.id),
                kind="finding",
                key=f.finding_key,
                sha256=f.sha256,
                file_name=names.get(f.sha256, ""),
                clause_type=f.clause_type,
                verdict=f.verdict,
                page=where[f.sha256](f.page).page if f.sha256 in where else f.page,
                locator=where[f.sha256](f.page).label() if f.sha256 in where else f.locator or f"page {f.page}",
                evidence=f.evidence,
                values=dict(f.values),
                reasons=[
                    f"{c.name}: {cite_finding_ids(c.reason, cited)}"
                    for c in checks.get(f.finding_key, [])
                    if c.verdict != "verified"
                ],
                decision=_decision_dict(decided.get(f.finding_key)),
            )
        )
    for a in absences:
        if a.reason.startswith(NOT_EXPECTED) and a.absence_key not in decided:
            continue  # a document no clause is expected of (not an agreement, a partial copy): information only
        items.append(
            dict(
                id=f"A{a.id}",
                kind="absence",
                key=a.absence_key,
                sha256=a.sha256,
                file_name=names.get(a.sha256, ""),
                clause_type=a.clause_type,
                verdict=a.verdict,
                page=None,
                locator=None,
                evidence="",
                values={},
                reasons=[a.reason],
                chunks=list(a.chunks),
                decision=_decision_dict(decided.get(a.absence_key)),
            )
        )
    if pending_only:
        items = [i for i in items if i["decision"] is None]
    return items


def playbook_deviations(database_url: str) -> list[dict[str, Any]]:
    """Each document's deviations and undecided (``unknown``) rules from the latest run that applied
    a playbook to it, deviations first, high severity first: ``[{file_name, sha256, playbook, rule,
    clause_type, status, severity, reason, finding_ids, run_id}]``."""
    from schemas.tables import PlaybookResultRow
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        rows = session.exec(
            select(PlaybookResultRow).order_by(col(PlaybookResultRow.created_at), col(PlaybookResultRow.id))
        ).all()
    latest: dict[str, str] = {}
    for r in rows:
        latest[r.sha256] = r.run_id  # ordered by time: the last one wins
    order = {"high": 0, "medium": 1, "low": 2}
    out: list[dict[str, Any]] = [
        dict(
            file_name=r.file_name,
            sha256=r.sha256,
            playbook=r.playbook,
            rule=r.rule_id,
            clause_type=r.clause_type,
            status=r.status,
            severity=r.severity,
            reason=r.reason,
            finding_ids=list(r.finding_ids),
            run_id=r.run_id,
        )
        for r in rows
        if r.status in ("deviation", "unknown") and latest.get(r.sha256) == r.run_id
    ]
    out.sort(key=lambda d: (d["status"] != "deviation", order.get(d["severity"], 3), d["file_name"], d["rule"]))
    return out


def _decision_dict(row: ReviewerDecision | None) -> dict[str, Any] | None:
    return None if row is None else _decision_fields(row)


def _decision_fields(row: ReviewerDecision) -> dict[str, Any]:
    from tasks.store.decisions import decision_fields

    return decision_fields(row)


def os_reviewer() -> str:
    """The reviewer ``docreview decide`` records when ``--reviewer`` is not given: the operating
    system's user name (``getpass.getuser``: ``LOGNAME``, ``USER``, ``LNAME``, ``USERNAME``, else the
    password database), or ``"unknown"`` when none can be read."""
    try:
        return clean_reviewer(getpass.getuser()) or "unknown"
    except (OSError, KeyError):
        return "unknown"


def clean_reviewer(raw: str) -> str:
    """A reviewer's name on one line: control characters dropped, spaces collapsed, at most
    :data:`schemas.decisions.MAX_REVIEWER_CHARS` characters (``""`` when nothing is left)."""
    text = "".join(ch if ch.isprintable() else " " for ch in raw)
    return " ".join(text.split())[:MAX_REVIEWER_CHARS]


def category_of(raw: str, current: str) -> str:
    """The category a ``reclassify`` names, as a clause type value of the same taxonomy as the
    finding's ``current`` one (CUAD categories for a contract finding, filing topics for a filing's):
    the value (``non_compete``) or the label (``Non-Compete``), any case. Raises ``ValueError``
    naming the choices for anything else or for the finding's own category."""
    from schemas.filings import FILING_LABELS, FilingTopic
    from schemas.taxonomy import ClauseType, label

    names: dict[str, str]
    if current in {t.value for t in FilingTopic}:
        names = {t.value: FILING_LABELS[t] for t in FilingTopic}
    else:
        names = {c.value: label(c) for c in ClauseType}
    wanted = " ".join(raw.replace("_", " ").split()).casefold()
    for value, shown in names.items():
        if wanted in (value.replace("_", " ").casefold(), shown.casefold()):
            if value == current:
                raise ValueError(f"the finding already is {shown}: approve it instead")
            return value
    raise ValueError(f"not a category: {raw!r} (one of {', '.join(sorted(names.values()))})")


def _resolve(session: Session, item_id: str) -> tuple[str, str]:
    """``(kind, key)`` of a queue item id; raises ``KeyError`` when there is no such item."""
    raw = item_id.strip()
    if raw[:1].upper() == "A" and raw[1:].isdigit():
        absence = session.get(AbsenceRow, int(raw[1:]))
        if absence is None:
            raise KeyError(f"no absence {raw}")
        return "absence", absence.absence_key
    if raw.isdigit():
        finding = session.get(FindingRow, int(raw))
        if finding is None:
            raise KeyError(f"no finding {raw}")
        return "finding", finding.finding_key
    raise KeyError(f"not a finding id: {raw!r} (use the number from the report, or A<n> for an absence)")


def record_decision(
    database_url: str,
    item_id: str,
    decision: str,
    note: str | None = None,
    reviewer: str | None = None,
    category: str | None = None,
) -> tuple[ReviewerDecision, bool]:
    """Record ``decision`` (approve | reject | reclassify) by ``reviewer`` on a queue item; returns
    ``(latest row, created)``.

    ``reviewer`` defaults to the OS user (:func:`os_reviewer`). ``category`` (a clause type value or
    label, :func:`category_of`) is the new category of a ``reclassify``, which only a finding takes.
    ``created`` is False when the latest decision on the item already is the same decision by the
    same reviewer with the same note (nothing is written). Raises ``ValueError`` for an unknown
    decision, a missing or unknown category, a reclassified absence or an empty reviewer name,
    ``KeyError`` for an unknown item id, :class:`tasks.store.decisions.ChainBusy` when other writers
    kept the chain busy."""
    from tasks.store.decisions import append_decision
    from tasks.store.persist import get_engine

    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}")
    who = clean_reviewer(reviewer) if reviewer is not None else os_reviewer()
    if not who:
        raise ValueError("the reviewer's name is empty")
    with Session(get_engine(database_url)) as session:
        kind, key = _resolve(session, item_id)
        new_category = None
        if decision == Decision.reclassify.value:
            if kind != "finding":
                raise ValueError("only a finding can be reclassified (an absence is approved or rejected)")
            if not category:
                raise ValueError("reclassify needs the new category (--as CATEGORY)")
            finding = session.exec(select(FindingRow).where(FindingRow.finding_key == key)).one()
            new_category = category_of(category, finding.clause_type)
        elif category:
            raise ValueError("only reclassify takes a category")
        return append_decision(
            session,
            target_kind=kind,
            target_key=key,
            decision=Decision(decision),
            reviewer=who,
            note=note,
            category=new_category,
        )


def gold_set(database_url: str) -> list[dict[str, Any]]:
    """Every decided item — queued findings and absences, and findings decided although they were
    not queued (a verified finding a reviewer rejected) — with its latest decision and full history
    (JSON-safe; each decision with its reviewer, category and hash)."""
    from tasks.store.decisions import histories
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        decided_keys = list(session.exec(select(ReviewerDecision.target_key).distinct()).all())
    items = [i for i in queue_items(database_url, include=decided_keys) if i["decision"] is not None]
    with Session(get_engine(database_url)) as session:
        history = histories(session, [i["key"] for i in items])
    for item in items:
        item["history"] = [_decision_fields(row) for row in history.get(item["key"], [])]
    return items


def queue(
    db: str | None = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
    gold: Path | None = typer.Option(None, "--gold", help="Write the decided items (gold set) to this JSON file."),
    pending: bool = typer.Option(False, "--pending", help="Only items without a decision."),
) -> None:
    """List findings that are unsupported, contradicted or need review, absent high-risk clauses, and playbook deviations."""
    url = _db(db)
    if gold is not None:
        if gold.is_dir() or not gold.parent.is_dir():
            err.print(
                f"[red]error:[/] --gold {escape(str(gold))}: "
                + (
                    "is a folder, not a file"
                    if gold.is_dir()
                    else f"the folder {escape(str(gold.parent))} does not exist"
                )
            )
            raise typer.Exit(2)
        items = gold_set(url)
        gold.write_text(json.dumps(items, indent=2, ensure_ascii=False), encoding="utf-8")
        console.print(f"Wrote {len(items)} decided item(s) to {gold}")
        return
    items = queue_items(url, pending_only=pending)
    table = Table(show_lines=False)
    for column in ("id", "document", "clause", "verdict", "where", "why", "decision"):
        table.add_column(column, overflow="fold")
    for i in items:
        d = i["decision"]
        table.add_row(
            i["id"],
            i["file_name"][:40],
            i["clause_type"],
            i["verdict"],
            i["locator"] or "",
            ("; ".join(i["reasons"]) or "")[:160],
            f"{d['decision']}" if d else "",
        )
    console.print(table)
    findings = sum(1 for i in items if i["kind"] == "finding")
    console.print(
        f"{findings} finding(s) and {len(items) - findings} absence(s) in the queue"
        + (" (undecided only)" if pending else "")
    )
    deviations = playbook_deviations(url)
    if deviations:
        table = Table(title="Playbook deviations and undecided rules (latest run per document)", show_lines=False)
        for column in ("document", "rule", "status", "severity", "why", "findings"):
            table.add_column(column, overflow="fold")
        for d in deviations:
            table.add_row(
                d["file_name"][:40],
                d["rule"],
                d["status"],
                d["severity"],
                d["reason"][:160],
                ", ".join(str(i) for i in d["finding_ids"]),
            )
        console.print(table)
        found = [d for d in deviations if d["status"] == "deviation"]
        console.print(
            f"{len(found)} playbook deviation(s), {sum(d['severity'] == 'high' for d in found)} of high "
            f"severity; {len(deviations) - len(found)} rule(s) undecided"
        )


def decide(
    finding_id: str = typer.Argument(..., help="Finding id from the queue or report (A<n> for an absence)."),
    decision: str = typer.Argument(..., help="approve | reject | reclassify (with --as CATEGORY)"),
    category: str | None = typer.Option(
        None, "--as", help="reclassify: the finding's category, e.g. 'Non-Compete' or non_compete."
    ),
    note: str | None = typer.Option(None, "--note", help="Reviewer's note."),
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="Who decides (default: your operating-system user name)."
    ),
    db: str | None = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
) -> None:
    """Record a reviewer's decision on a finding or absence (the latest decision wins; the history is kept)."""
    from tasks.store.decisions import ChainBusy

    if decision not in DECISIONS:
        err.print(f"[red]error:[/] decision must be approve, reject or reclassify, not {escape(repr(decision))}")
        raise typer.Exit(2)
    who = clean_reviewer(reviewer) if reviewer is not None else os_reviewer()
    if not who:
        err.print("[red]error:[/] --reviewer is empty: give the reviewer's name")
        raise typer.Exit(2)
    try:
        row, created = record_decision(_db(db), finding_id, decision, note, reviewer=who, category=category)
    except (KeyError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc.args[0]))}: nothing recorded")
        raise typer.Exit(2) from None
    except ChainBusy as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    by = f"by {escape(who)}" + ("" if reviewer is not None else " (your OS user name; --reviewer names another)")
    what = row.decision + (f" as {_category_label(row.category)}" if row.category else "")
    if created:
        console.print(f"Recorded {what} on {finding_id} {by} (decision #{row.seq})", highlight=False)
    else:
        console.print(f"{finding_id} already has this decision by {escape(who)} (#{row.seq}); nothing recorded")


def _category_label(value: str) -> str:
    from tasks.observe.report import finding_label

    return finding_label(value)
