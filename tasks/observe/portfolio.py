"""The portfolio: every contract reviewed into a database, each once, at its latest version.

A run's report lists the documents of that run; a team wants one list, and one calendar, for all its
contracts. :func:`portfolio` reads every contract any run reviewed (``run_documents`` with status
``reviewed``, a document not profiled as an SEC filing), leaves out each one a later version
supersedes (``document_versions``, :func:`tasks.observe.versions.load_links`: a contract whose
sha256 is another reviewed contract's ``previous_sha256``), and takes what it shows of each of the
rest — key terms, deadlines, findings needing attention, decisions — from the report of the run that
last reviewed it (:func:`tasks.observe.report.build_report`): the same rules as that report, the
decisions made since included. :func:`portfolio_calendar` is the portfolio's iCalendar file and
:func:`render_portfolio_html` its page in ``docreview report serve``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, date
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from schemas.tables import (
    DocumentProfileRow,
    DocumentVersionRow,
    PlaybookResultRow,
    ReviewerDecision,
    RunDocumentRow,
    RunRow,
)
from tasks.observe.versions import load_links
from tasks.store.persist import get_engine

#: Days left at or under which a deadline is shown as soon (as in the report's "Upcoming deadlines").
SOON_DAYS = 30


def _reviewed_contracts(session: Session) -> dict[str, tuple[RunDocumentRow, RunRow]]:
    """``{sha256: (run_documents row, run)}`` of every contract a run reviewed, each with the latest run that
    reviewed it (latest start, then latest outcome); a document not judged as an agreement
    (``document_profiles.not_judged``: not an agreement, an exhibit that is none, a partial copy) is no contract
    of the portfolio."""
    rows = session.exec(
        select(RunDocumentRow, RunRow)
        .join(RunRow, col(RunRow.id) == RunDocumentRow.run_id)
        .outerjoin(DocumentProfileRow, col(DocumentProfileRow.sha256) == RunDocumentRow.sha256)
        .where(RunDocumentRow.status == "reviewed", col(RunDocumentRow.sha256).is_not(None))
        .where((col(DocumentProfileRow.profile).is_(None)) | (DocumentProfileRow.profile == "contract"))
        .where(col(DocumentProfileRow.not_judged).is_(None))  # a memo, an exhibit that is none, a partial copy
    ).all()
    latest: dict[str, tuple[RunDocumentRow, RunRow]] = {}
    for doc, run in rows:
        sha = str(doc.sha256)
        key = (run.started_at, doc.updated_at, doc.id or 0)
        held = latest.get(sha)
        if held is None or key > (held[1].started_at, held[0].updated_at, held[0].id or 0):
            latest[sha] = (doc, run)
    return latest


def latest_versions(links: dict[str, DocumentVersionRow], reviewed: dict[str, Any]) -> tuple[set[str], dict[str, str]]:
    """Which of the ``reviewed`` documents (``{sha256: …}``) are their contract's latest version:
    ``(listed sha256s, {superseded sha256: the sha256 of a later version})``.

    A document is superseded when another reviewed document names it as its previous version
    (``links``: ``{sha256: document_versions row}``). Versions linked in a circle (each named as the
    other's previous version) have no latest one by their links: of those, the one a run reviewed last
    (the order of ``reviewed``'s values: ``(run_documents row, run)``) is listed."""
    later: dict[str, list[str]] = {}
    for sha, link in links.items():
        prev = link.previous_sha256
        if sha in reviewed and prev and prev != sha and prev in reviewed:
            later.setdefault(prev, []).append(sha)
    listed = {sha for sha in reviewed if sha not in later}

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in later.get(todo.pop(), []):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    superseded: dict[str, str] = {}
    circled: list[str] = []
    for sha in later:
        heads = sorted(reach(sha) & listed)
        if heads:
            superseded[sha] = heads[0]
        else:
            circled.append(sha)
    while circled:  # a circle of versions: its most recently reviewed member stands for it
        group = reach(circled[0])
        keep = max(group, key=lambda s: _reviewed_order(reviewed[s]))
        listed.add(keep)
        for sha in group:
            if sha != keep:
                superseded[sha] = keep
        circled = [s for s in circled if s not in group]
    return listed, superseded


def _reviewed_order(held: Any) -> tuple[Any, ...]:
    doc, run = held
    return (run.started_at, doc.updated_at, doc.id or 0)


def run_report(database_url: str, run: RunRow, as_of: date) -> dict[str, Any]:
    """The report of ``run`` as ``docreview export RUN`` builds it (:func:`tasks.observe.report.build_report`:
    offline for a ``rules`` run, with the playbook the run applied, deadlines as of ``as_of``)."""
    from tasks.observe.report import build_report

    with Session(get_engine(database_url)) as session:
        applied = session.exec(select(PlaybookResultRow.playbook).where(PlaybookResultRow.run_id == run.id)).first()
    playbook = {"name": applied, "source": None} if applied else None
    return build_report(database_url, run.id, run.backend == "rules", playbook, as_of=as_of)


def portfolio_entry(
    document: dict[str, Any], anchor: int, run: RunRow, reviewed_at: str | None, previous: str | None
) -> dict[str, Any]:
    """One listed contract from its entry in a run's report (``document``, the ``anchor``-th of that
    report's documents, 1-based) — see :func:`portfolio` for the shape."""
    from tasks.observe.report import needs_attention

    terms: dict[str, list[str]] = document.get("key_terms") or {}
    deadlines = list(document.get("deadlines") or [])
    expiration = next((x for x in deadlines if x["kind"] == "expiration"), None)
    upcoming = [x for x in deadlines if x["upcoming"]]
    findings = document.get("findings") or []
    decided = [f for f in findings if f.get("decision")] + [
        a for a in document.get("absences") or [] if a.get("decision")
    ]
    return dict(
        file_name=document["file_name"],
        source=document.get("source"),
        sha256=document["sha256"],
        run_id=run.id,
        reviewed_at=reviewed_at,
        report_anchor=f"doc-{anchor}",
        previous_sha256=previous,
        parties=list(terms.get("Parties") or []),
        governing_law=list(terms.get("Governing law") or []),
        expiration=list(terms.get("Expiration date") or []),
        term_ends=expiration["date"] if expiration else None,
        initial_end=expiration.get("initial_end") if expiration else None,
        deadlines=deadlines,
        deadlines_note=document.get("deadlines_note"),
        next_deadline=(
            {k: upcoming[0][k] for k in ("kind", "date", "title", "basis", "days_left")} if upcoming else None
        ),
        open_findings=sum(needs_attention(f) for f in findings),
        decisions=len(decided),
    )


def portfolio(database_url: str, as_of: date | None = None) -> dict[str, Any]:
    """The portfolio of the database at ``database_url`` (SQLite or PostgreSQL, opened with
    :func:`tasks.store.persist.get_engine`): every contract reviewed in any run, once, at its latest
    version (:func:`latest_versions`), with its deadlines as of ``as_of`` (default today, UTC).

    Returns ``{as_of (ISO date), business_days (the rule, in words), documents: [entry], superseded:
    [{file_name, sha256, superseded_by (sha256)}]}``; the documents soonest next deadline first (those
    with none last), then by file name. Each entry::

        {file_name, source, sha256, run_id (the run that last reviewed it), reviewed_at (ISO 8601 UTC:
         when that run recorded it reviewed), report_anchor ("doc-<n>": its section in that run's report),
         previous_sha256 (the version it supersedes, or None), parties [str], governing_law [str],
         expiration [str] (the key term as read), term_ends (ISO date: the end of the current term, after
         any renewals, or None), initial_end (ISO date or None), deadlines (the report's: [{kind, date,
         title, basis, finding_ids, upcoming, days_left}]), deadlines_note (why none, or None),
         next_deadline ({kind, date, title, basis, days_left (days from as_of)} of the soonest upcoming
         one, or None), open_findings (int: findings needing attention, undecided:
         :func:`tasks.observe.report.needs_attention`), decisions (int: findings and absences of it a
         reviewer decided, the latest decision each)}

    An empty database (or one with no contract reviewed) has ``documents == []``. Raises
    ``sqlalchemy.exc.OperationalError`` when the database cannot be opened."""
    from tasks.observe.deadlines import today_utc

    clock = as_of or today_utc()
    with Session(get_engine(database_url)) as session:
        reviewed = _reviewed_contracts(session)
        links = load_links(session, sorted(reviewed))
    listed, superseded = latest_versions(links, reviewed)
    by_run: dict[str, list[str]] = {}
    for sha in listed:
        by_run.setdefault(reviewed[sha][1].id, []).append(sha)
    documents: list[dict[str, Any]] = []
    business_days = None
    for run_id in sorted(by_run):
        run = reviewed[by_run[run_id][0]][1]
        report = run_report(database_url, run, clock)
        business_days = report["run"].get("business_days")
        for sha in by_run[run_id]:
            row = reviewed[sha][0]
            entries = [(i, d) for i, d in enumerate(report["documents"], 1) if d.get("sha256") == sha]
            if not entries:  # not in its run's report (cannot happen: the report lists the run's documents)
                continue
            anchor, entry = next(((i, d) for i, d in entries if d["source"] == row.source), entries[0])
            link = links.get(sha)
            previous = link.previous_sha256 if link is not None and link.previous_sha256 in reviewed else None
            stamp = row.updated_at
            when = (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).isoformat() if stamp else None
            documents.append(portfolio_entry(entry, anchor, run, when, previous))
    documents.sort(
        key=lambda d: (
            d["next_deadline"] is None,
            d["next_deadline"]["date"] if d["next_deadline"] else "",
            d["file_name"],
            d["sha256"],
        )
    )
    if business_days is None:
        from schemas.settings import Settings
        from tasks.observe.deadlines import BusinessCalendar

        business_days = BusinessCalendar.parse(Settings().deadline_holidays).describe()
    return dict(
        as_of=clock.isoformat(),
        business_days=business_days,
        documents=documents,
        superseded=sorted(
            (
                dict(file_name=reviewed[sha][0].file_name, sha256=sha, superseded_by=by)
                for sha, by in superseded.items()
            ),
            key=lambda s: (s["file_name"], s["sha256"]),
        ),
    )


def due_within(documents: list[dict[str, Any]], days: int) -> list[dict[str, Any]]:
    """The portfolio entries (:func:`portfolio`) whose next deadline is at most ``days`` days after the
    as-of date, in the same order."""
    return [d for d in documents if d["next_deadline"] is not None and d["next_deadline"]["days_left"] <= days]


def calendar_rows(documents: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(entry, deadline)`` pairs of every upcoming deadline of the portfolio entries ``documents``, by
    date: the rows of :func:`tasks.observe.deadlines.calendar_ics` (an entry has the ``file_name`` and
    ``sha256`` it reads)."""
    rows = [(d, x) for d in documents for x in d["deadlines"] if x["upcoming"]]
    rows.sort(key=lambda r: (r[1]["date"], r[0]["file_name"], r[1]["kind"]))
    return rows


def portfolio_calendar(documents: list[dict[str, Any]], link: str | None = None) -> bytes:
    """The portfolio's iCalendar file (RFC 5545, :func:`tasks.observe.deadlines.calendar_ics`, named
    ``docreview portfolio``): every upcoming deadline of the entries ``documents``, ``link`` (the
    served portfolio page) as each event's URL."""
    from tasks.observe.deadlines import calendar_ics

    return calendar_ics(calendar_rows(documents), "docreview portfolio", link)


def portfolio_stamp(database_url: str) -> tuple[Any, ...]:
    """What the portfolio is built from, as a value that changes when it may: counts and latest ids and
    times of ``run_documents``, ``document_versions`` and ``reviewer_decisions`` (a page cache key)."""
    with Session(get_engine(database_url)) as session:
        docs = session.exec(
            select(func.count(), func.max(RunDocumentRow.id), func.max(RunDocumentRow.updated_at))
        ).one()
        versions = session.exec(select(func.count(), func.max(DocumentVersionRow.updated_at))).one()
        decisions = session.exec(select(func.count(), func.max(ReviewerDecision.id))).one()
    return tuple(str(v) for v in (*docs, *versions, *decisions))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>docreview portfolio</title>
<style>
 body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
 header{background:#1d2430;color:#fff;padding:18px 28px} header h1{margin:0;font-size:20px}
 header p{margin:4px 0 0;color:#c9d1dc;font-size:13px} header a{color:#c9d1dc}
 main{max-width:1200px;margin:0 auto;padding:20px 28px}
 table{border-collapse:collapse;width:100%;font-size:14px;background:#fff;border:1px solid #dde2e8}
 th,td{text-align:left;vertical-align:top;padding:6px 8px;border-top:1px solid #edf0f3}
 th{font-size:12px;text-transform:uppercase;color:#5b6675;border-top:0} td.n{text-align:right}
 .sub{color:#5b6675;font-size:12.5px} .soon{color:#9b1c1c;font-weight:600} code{font-size:12px}
</style></head><body>
<header><h1>Portfolio: {{ documents|length }} contract{{ "" if documents|length == 1 else "s" }}</h1>
<p>Each contract once, at its latest version{% if superseded %} ({{ superseded|length }} earlier version{{ "" if superseded|length == 1 else "s" }} left out){% endif %};
deadlines as of {{ as_of }} (business days: {{ business_days }}).
{% if calendar %}<a href="{{ calendar }}">Calendar (.ics)</a> · {% endif %}<a href="/runs/">kept runs</a> · <a href="/report.html">latest report</a></p></header>
<main>
{% if not documents %}<p>No contract has been reviewed into this database yet.</p>{% else %}
<table><tr><th>document</th><th>parties</th><th>law</th><th>term ends</th><th>next deadline</th><th>days left</th><th>open findings</th><th>decisions</th><th>last reviewed</th></tr>
{% for d in documents %}<tr>
<td>{% if d.link %}<a href="{{ d.link }}">{{ d.file_name }}</a>{% else %}{{ d.file_name }}{% endif %}<div class="sub"><code>{{ d.sha256[:12] }}</code>{% if d.previous_sha256 %} · new version of <code>{{ d.previous_sha256[:12] }}</code>{% endif %}</div></td>
<td>{% for p in d.parties %}{{ p }}{% if not loop.last %}<br>{% endif %}{% else %}—{% endfor %}</td>
<td>{{ d.governing_law|join("; ") or "—" }}</td>
<td>{{ d.term_ends or (d.expiration|join("; ")) or "—" }}</td>
<td>{% if d.next_deadline %}{{ d.next_deadline.kind }} {{ d.next_deadline.date }}<div class="sub">{{ d.next_deadline.title }}: {{ d.next_deadline.basis }}</div>{% else %}—<div class="sub">{{ d.deadlines_note or "every deadline has passed" }}</div>{% endif %}</td>
<td class="n">{% if d.next_deadline %}<span class="{{ 'soon' if d.next_deadline.days_left <= soon else '' }}">{{ d.next_deadline.days_left }}</span>{% else %}—{% endif %}</td>
<td class="n">{{ d.open_findings }}</td><td class="n">{{ d.decisions }}</td>
<td>{{ (d.reviewed_at or "")[:16]|replace("T", " ") }}<div class="sub">run <code>{{ d.run_id[:8] }}</code></div></td>
</tr>{% endfor %}</table>{% endif %}
</main></body></html>
"""


@functools.cache
def _page_template() -> Any:
    """:data:`_PAGE` compiled once, in the report's Jinja2 environment (autoescaping on, its filters)."""
    from tasks.observe.report import _env

    return _env.from_string(_PAGE)


def render_portfolio_html(
    data: dict[str, Any], link: Callable[[dict[str, Any]], str | None] | None = None, calendar: str | None = None
) -> str:
    """The portfolio (:func:`portfolio`) as an HTML page, every value escaped (the report's Jinja2
    environment, autoescaping on): one row per contract; ``link(entry)`` the URL of its section in the
    report of the run that last reviewed it (None: not linked); ``calendar`` the URL of the portfolio's
    ``.ics`` (None: not linked)."""
    documents = [dict(d, link=link(d) if link else None) for d in data["documents"]]
    return _page_template().render(
        documents=documents,
        superseded=data["superseded"],
        as_of=data["as_of"],
        business_days=data["business_days"],
        calendar=calendar,
        soon=SOON_DAYS,
    )


#: The event a run emits with the portfolio's deadlines due soon (every contract's latest version, not only
#: the run's documents: a quiet night still names them).
PORTFOLIO_DEADLINES = "docreview.portfolio.deadlines"


def portfolio_event(book: dict[str, Any], within_days: int, run_id: str, flow_run_id: str | None) -> dict[str, Any]:
    """The ``docreview.portfolio.deadlines`` event of a portfolio (:func:`portfolio`): resource
    ``docreview.portfolio``; payload ``{run_id, as_of, within_days, contracts (int), due: [{file_name, sha256,
    kind, date, days_left, title, basis}]}`` — every upcoming deadline at most ``within_days`` days after
    ``as_of`` across the portfolio, soonest first; pure."""
    import uuid

    from tasks.observe.events import flow_run_related

    due = [
        {
            "file_name": d["file_name"],
            "sha256": d["sha256"],
            **{k: x[k] for k in ("kind", "date", "days_left", "title", "basis")},
        }
        for d, x in calendar_rows(book["documents"])
        if x["days_left"] <= within_days
    ]
    return dict(
        event=PORTFOLIO_DEADLINES,
        resource={"prefect.resource.id": "docreview.portfolio", "prefect.resource.name": "portfolio"},
        related=flow_run_related(flow_run_id),
        payload={
            "run_id": run_id,
            "as_of": book["as_of"],
            "within_days": within_days,
            "contracts": len(book["documents"]),
            "due": due,
        },
        id=uuid.uuid5(uuid.NAMESPACE_URL, f"docreview|{run_id}|{PORTFOLIO_DEADLINES}"),
    )


def refresh_portfolio(
    database_url: str, out_dir: str, within_days: int, run_id: str, flow_run_id: str | None = None
) -> dict[str, Any]:
    """After a run: rebuild the portfolio, write ``out_dir/portfolio.ics`` (atomically; every contract's
    upcoming deadlines, each contract at its latest version) and emit :func:`portfolio_event`. A database with
    no reviewed contract leaves an existing ``portfolio.ics`` as it is and emits nothing.

    Returns ``{contracts, due (deadlines within within_days), calendar (path or None), events (sent)}``."""
    import os
    from pathlib import Path

    from tasks.observe.events import send_events

    book = portfolio(database_url)
    if not book["documents"]:
        return {"contracts": 0, "due": 0, "calendar": None, "events": 0}
    path = Path(out_dir) / "portfolio.ics"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(portfolio_calendar(book["documents"]))
    os.replace(tmp, path)
    event = portfolio_event(book, within_days, run_id, flow_run_id)
    return {
        "contracts": len(book["documents"]),
        "due": len(event["payload"]["due"]),
        "calendar": str(path),
        "events": send_events([event]),
    }
