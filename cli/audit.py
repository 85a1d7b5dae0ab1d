"""``docreview audit verify`` and ``docreview audit show ITEM``: who decided what, and whether the
record of it was altered.

Decisions are append-only and hash-chained (:mod:`schemas.decisions`). ``audit verify`` walks the
chain and names the first broken link (exit 1), else prints the number of decisions and the head
hash (exit 0); with ``--reports OUT`` it also checks the head each kept run report recorded
(``run.decisions`` in ``report.json``) is still in the chain where it was, so decisions removed from
the end, or a chain rewritten after a run, show too. ``audit show`` answers an auditor's question
about one finding or absence: what it is, every decision on it with the reviewer, the time, the
note and the decision's hash, the decision that stands, and whether the chain vouches for them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table
from sqlmodel import Session, col, select

from cli.common import err, stored_database, table_console

audit_app = typer.Typer(no_args_is_help=True, help="The decisions' audit trail: verify the chain, show an item.")
console = table_console()

_DONE = {"approve": "approved", "reject": "rejected", "reclassify": "reclassified"}


def _label(value: str | None) -> str:
    from tasks.observe.report import finding_label

    return finding_label(value) if value else ""


def decision_text(d: dict[str, Any]) -> str:
    """``"reclassified as Non-Compete"``, ``"approved"``: a decision in words."""
    done = _DONE.get(str(d["decision"]), str(d["decision"]))
    return done + (f" as {_label(d['category'])}" if d.get("category") else "")


def reports_heads(folder: Path) -> list[tuple[str, int, str]]:
    """``[(run id, count, head)]`` recorded by the kept reports under ``folder/runs`` (and
    ``folder/report.json``): the decision chain as each run's report saw it. Reports without the
    record (written before it existed) are left out."""
    found: dict[str, tuple[str, int, str]] = {}
    for path in [folder / "report.json", *sorted((folder / "runs").glob("*/report.json"))]:
        try:
            run = json.loads(path.read_text(encoding="utf-8"))["run"]
            seen = run["decisions"]
            found[str(run["id"])] = (str(run["id"]), int(seen["count"]), str(seen["head"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return list(found.values())


def check_heads(session: Session, heads: list[tuple[str, int, str]]) -> list[str]:
    """Problems with recorded heads: for each ``(run, count, head)`` the chain's ``count``-th
    decision (by id) must have the hash ``head`` (``count`` 0: nothing to check)."""
    from schemas.tables import ReviewerDecision

    problems = []
    for run_id, count, head in heads:
        if count <= 0:
            continue
        row = session.exec(
            select(ReviewerDecision).order_by(col(ReviewerDecision.id)).offset(count - 1).limit(1)
        ).first()
        if row is None:
            problems.append(
                f"run {run_id[:8]}'s report saw {count} decision(s); the table now holds fewer: decisions were removed"
            )
        elif row.row_hash != head:
            problems.append(
                f"run {run_id[:8]}'s report saw decision {count} with hash {head[:12]}…; it is now {row.row_hash[:12]}…: "
                "the chain was rewritten since that run"
            )
    return problems


def append_only_guard(session: Session) -> bool | None:
    """Whether the database still refuses UPDATE and DELETE on ``reviewer_decisions`` (its
    triggers are there); None for a dialect docreview does not install them on."""
    from sqlalchemy import text

    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        names = set(
            session.exec(  # type: ignore[call-overload]
                text("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'reviewer_decisions'")
            ).scalars()
        )
        return {"reviewer_decisions_no_update", "reviewer_decisions_no_delete"} <= names
    if dialect == "postgresql":
        found = session.exec(  # type: ignore[call-overload]
            text(
                "SELECT count(*) FROM pg_trigger WHERE tgname = 'reviewer_decisions_append_only' "
                "AND tgrelid = 'reviewer_decisions'::regclass"
            )
        ).scalar_one()
        return bool(found)
    return None


@audit_app.command("verify")
def verify(
    db: str | None = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
    reports: Path | None = typer.Option(
        None,
        "--reports",
        help="Also check the chain heads the kept reports of this folder recorded (docreview review --out).",
    ),
) -> None:
    """Check every decision's hash and link; exit 1 naming the first broken link, else 0 with the head hash."""
    from tasks.store.decisions import verify_chain
    from tasks.store.persist import get_engine

    if reports is not None and not reports.is_dir():
        err.print(f"[red]error:[/] --reports {escape(str(reports))}: not a folder")
        raise typer.Exit(2)
    url = stored_database(db)
    with Session(get_engine(url)) as session:
        check = verify_chain(session)
        problems = check_heads(session, reports_heads(reports)) if check.intact and reports is not None else []
        guard = append_only_guard(session)
    if check.broken is not None:
        err.print(
            f"[red]Decision chain broken[/] at decision #{check.broken.id} "
            f"({escape(_item_name(url, check.broken.target_kind, check.broken.target_key))}): "
            f"{escape(check.broken.problem)}"
        )
        err.print(f"{check.count - 1} decision(s) before it verified.")
        raise typer.Exit(1)
    for problem in problems:
        err.print(f"[red]Decision chain rewritten:[/] {escape(problem)}")
    if guard is False:
        err.print(
            "[yellow]warning:[/] the database no longer refuses UPDATE and DELETE on reviewer_decisions (its "
            "append-only triggers were dropped); run `docreview db upgrade` after finding out why"
        )
    if problems:
        raise typer.Exit(1)
    console.print(
        f"Decision chain intact: {check.count} decision(s), every hash and link verified"
        + (f"; {len(reports_heads(reports))} report(s)' recorded heads found in it" if reports is not None else ""),
        highlight=False,
    )
    console.print(f"Head: {check.head}  (keep it: a later verify against it shows any rewrite)", highlight=False)


def _item_name(url: str, kind: str, key: str) -> str:
    """``finding 12`` / ``absence A3`` for a decision's item (``… key <prefix>`` when it is gone)."""
    from schemas.tables import AbsenceRow, FindingRow
    from tasks.store.persist import get_engine

    with Session(get_engine(url)) as session:
        if kind == "finding":
            fid = session.exec(select(FindingRow.id).where(FindingRow.finding_key == key)).first()
            return f"finding {fid}" if fid is not None else f"a finding no longer stored, key {key[:12]}…"
        aid = session.exec(select(AbsenceRow.id).where(AbsenceRow.absence_key == key)).first()
        return f"absence A{aid}" if aid is not None else f"an absence no longer stored, key {key[:12]}…"


def audit_record(database_url: str, item_id: str) -> dict[str, Any]:
    """What ``audit show`` prints, JSON-safe: ``{id, kind, document, sha256, clause_type (as
    claimed), clause_label, category (as decided: a reclassification's, else the claim), verdict,
    locator, evidence, decision (the latest, or None), history: [{decision, category, reviewer, note,
    seq, decided_at, hash, id, verified}], chain: {intact, count, head, broken}}``; ``verified`` is
    False for a decision at or after the chain's first broken link. Raises ``KeyError`` for an
    unknown item id."""
    from cli.queue import _resolve
    from schemas.tables import AbsenceRow, DocumentRow, FindingRow
    from tasks.store.decisions import decision_fields, history, verify_chain
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        kind, key = _resolve(session, item_id)
        if kind == "finding":
            f = session.exec(select(FindingRow).where(FindingRow.finding_key == key)).one()
            sha, clause, verdict, locator, evidence = f.sha256, f.clause_type, f.verdict, f.locator, f.evidence
            locator = locator or f"page {f.page}"
        else:
            a = session.exec(select(AbsenceRow).where(AbsenceRow.absence_key == key)).one()
            sha, clause, verdict, locator, evidence = a.sha256, a.clause_type, a.verdict, None, ""
        doc = session.exec(select(DocumentRow).where(DocumentRow.sha256 == sha)).first()
        rows = history(session, key)
        check = verify_chain(session)
    broken = check.broken.id if check.broken is not None else None
    past = [dict(decision_fields(r), id=r.id, verified=broken is None or int(r.id or 0) < broken) for r in rows]
    latest = past[-1] if past else None
    decided = latest["category"] if latest and latest.get("category") else clause
    return dict(
        id=item_id.strip().upper() if kind == "absence" else item_id.strip(),
        kind=kind,
        document=doc.file_name if doc is not None else None,
        sha256=sha,
        clause_type=clause,
        clause_label=_label(clause),
        category=decided,
        verdict=verdict,
        locator=locator,
        evidence=evidence,
        decision=latest,
        history=past,
        chain=dict(
            intact=check.intact,
            count=check.count,
            head=check.head,
            broken=None if check.broken is None else dict(id=check.broken.id, problem=check.broken.problem),
        ),
    )


@audit_app.command("show")
def show(
    item: str = typer.Argument(..., help="Finding id (as in the report) or A<n> for an absence."),
    db: str | None = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
    as_json: bool = typer.Option(False, "--json", help="Print the record as JSON."),
) -> None:
    """Who decided ITEM, when, and how it changed: every decision on it, the one that stands, and whether the chain vouches for them."""
    try:
        record = audit_record(stored_database(db), item)
    except KeyError as exc:
        err.print(f"[red]error:[/] {escape(str(exc.args[0]))}")
        raise typer.Exit(2) from None
    if as_json:
        console.print_json(json.dumps(record, ensure_ascii=False))
        raise typer.Exit(0 if record["chain"]["intact"] else 1)
    what = (
        f"Finding {record['id']}: {record['clause_label']} (as the review claimed it; {record['verdict'].replace('_', ' ')})"
        if record["kind"] == "finding"
        else f"Absence {record['id']}: no {record['clause_label']} clause found"
    )
    console.print(f"[bold]{escape(what)}[/]", highlight=False)
    console.print(
        f"Document: {escape(str(record['document'] or '(not stored)'))}  sha256 {record['sha256'][:16]}…"
        + (f"  at {escape(str(record['locator']))}" if record["locator"] else ""),
        highlight=False,
    )
    if record["evidence"]:
        quote = " ".join(str(record["evidence"]).split())
        console.print(f"Quote: “{escape(quote[:400])}{'…' if len(quote) > 400 else ''}”", highlight=False)
    if not record["history"]:
        console.print("No reviewer has decided it.")
    else:
        table = Table(title="Decisions, oldest first", show_lines=False)
        for column in ("#", "decided (UTC)", "reviewer", "decision", "note", "hash", "chain"):
            table.add_column(column, overflow="fold")
        for h in record["history"]:
            table.add_row(
                str(h["seq"]),
                str(h["decided_at"] or "")[:19].replace("T", " "),
                h["reviewer"] or "(not recorded)",
                decision_text(h),
                h["note"] or "",
                str(h["hash"])[:12] + "…",
                "verified" if h["verified"] else "NOT VERIFIED",
            )
        console.print(table)
        d = record["decision"]
        console.print(
            f"Stands: {decision_text(d)} by {escape(d['reviewer'] or 'a reviewer not recorded')} at "
            f"{str(d['decided_at'])[:19].replace('T', ' ')} UTC (decision {d['seq']} of {len(record['history'])})",
            highlight=False,
        )
    chain = record["chain"]
    if chain["intact"]:
        console.print(
            f"Decision chain intact: {chain['count']} decision(s); head {chain['head'][:16]}…", highlight=False
        )
        return
    err.print(
        f"[red]Decision chain broken[/] at decision #{chain['broken']['id']}: {escape(chain['broken']['problem'])}"
    )
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``audit`` group to the ``docreview`` app."""
    app.add_typer(audit_app, name="audit")
