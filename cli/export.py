"""``docreview export RUN``: a run's report for the team's spreadsheets and calendars.

``--format xlsx`` writes one workbook (findings, key terms, deviations, deadlines; frozen header
rows, filters, links back to the served report: :mod:`tasks.observe.export`); ``csv`` one CSV file
per sheet; ``ics`` the run's upcoming deadlines as an iCalendar file, or one document's with
``--document`` (:mod:`tasks.observe.deadlines`). The report is built from the database as the
run's own report is, so decisions made since show; ``--as-of`` fixes the deadlines' clock. A run
that does not exist, or a document without deadlines, is refused (exit 2) before anything is written.

``docreview export portfolio`` (RUN ``portfolio``: no run id, which is hexadecimal, spells it) writes the
portfolio instead — every contract reviewed in any run, once, at its latest version
(:mod:`tasks.observe.portfolio`): ``xlsx`` a workbook of two sheets (contracts, deadlines), ``csv`` one
file each, ``ics`` one calendar of every listed contract's upcoming deadlines. An empty portfolio is
refused (exit 2), nothing written.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import typer
from rich.markup import escape
from sqlmodel import Session, select

from cli.common import console, err, stored_database

FORMATS = ("xlsx", "csv", "ics")


def _report(url: str, run_prefix: str, as_of: date | None) -> dict:
    """The report of the run named by ``run_prefix`` (exit 2 when there is none)."""
    from schemas.tables import PlaybookResultRow
    from tasks.observe.monitoring import find_run
    from tasks.observe.report import build_report
    from tasks.store.persist import get_engine

    try:
        run = find_run(url, run_prefix)
    except KeyError as exc:
        err.print(f"[red]error:[/] {escape(str(exc.args[0]))}: nothing written")
        raise typer.Exit(2) from None
    with Session(get_engine(url)) as session:
        applied = session.exec(select(PlaybookResultRow.playbook).where(PlaybookResultRow.run_id == run.id)).first()
    playbook = {"name": applied, "source": None} if applied else None
    return build_report(url, run.id, run.backend == "rules", playbook, as_of=as_of)


def export(
    run_id: str = typer.Argument(
        ...,
        help="Run id, or a unique prefix of at least 4 characters (docreview runs); or `portfolio`: every contract "
        "reviewed in any run, once, at its latest version.",
    ),
    fmt: str = typer.Option("xlsx", "--format", help="xlsx | csv | ics"),
    out: Path | None = typer.Option(
        None,
        "--out",
        help=(
            "File (xlsx, ics) or folder (csv) to write; an existing folder gets export-<run>.xlsx or "
            "deadlines-<run>.ics inside it (default: export-<run>.xlsx, export-<run>/, deadlines-<run>.ics)."
        ),
    ),
    reports: Path = typer.Option(
        Path("out"), "--reports", help="The report folder the links point at when no URL base is set."
    ),
    report_url: str | None = typer.Option(
        None,
        "--report-url",
        help="Base URL of the served reports (default: DOCREVIEW_REPORT_URL_BASE; else file links).",
    ),
    document: str | None = typer.Option(None, "--document", help="ics: only this document (its file name or sha256)."),
    as_of: str | None = typer.Option(
        None, "--as-of", help="Deadlines as of this date (YYYY-MM-DD; default today, UTC)."
    ),
    db: str | None = typer.Option(
        None, "--db", "--database-url", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."
    ),
) -> None:
    """Export a run's findings, key terms, deviations and deadlines as XLSX or CSV, or its deadlines as .ics
    (RUN `portfolio`: every contract once, at its latest version, and one calendar of all their deadlines)."""
    from schemas.settings import Settings
    from tasks.observe.report import report_link

    if fmt not in FORMATS:
        err.print(f"[red]error:[/] --format must be xlsx, csv or ics, not {escape(repr(fmt))}")
        raise typer.Exit(2)
    if document and fmt != "ics":
        err.print("[red]error:[/] --document goes with --format ics")
        raise typer.Exit(2)
    try:
        clock = date.fromisoformat(as_of) if as_of else None
    except ValueError:
        err.print(f"[red]error:[/] --as-of {escape(as_of or '')}: not a date (YYYY-MM-DD)")
        raise typer.Exit(2) from None
    if run_id == "portfolio":
        _portfolio(fmt, out, reports, report_url, document, clock, db)
        return
    url = stored_database(db)
    report = _report(url, run_id, clock)
    rid = report["run"]["id"]
    base = report_url or Settings().report_url_base
    page = report_link(str(reports), rid, base)
    kept = Path(reports) / "runs" / rid / "report.html"
    if not base and not kept.is_file():  # file links to a report that is not there would all be dead
        err.print(
            f"[yellow]note:[/] the links point at {escape(str(kept))}, which does not exist: give --reports the "
            "folder the run wrote to (its --out), or --report-url"
        )
    if fmt == "ics":
        name = f"deadlines-{rid[:8]}.ics"
        _ics(report, out / name if out is not None and out.is_dir() else out or Path(name), document, page)
        return
    from tasks.observe.export import export_sheets, write_csv, write_xlsx

    sheets = export_sheets(report, lambda anchor: f"{page}#{anchor}")
    counts = ", ".join(f"{len(rows) - 1} {name.lower()}" for name, rows in sheets.items())
    if fmt == "xlsx":
        name = f"export-{rid[:8]}.xlsx"
        path = out / name if out is not None and out.is_dir() else out or Path(name)
        write_xlsx(sheets, path)
        console.print(f"Wrote {path} ({counts})", highlight=False, soft_wrap=True)
        return
    folder = out or Path(f"export-{rid[:8]}")
    if folder.exists() and not folder.is_dir():
        err.print(f"[red]error:[/] --out {escape(str(folder))} is a file; give a folder for the CSV files")
        raise typer.Exit(2)
    paths = write_csv(sheets, folder, f"run-{rid[:8]}")
    console.print(f"Wrote {len(paths)} CSV file(s) to {folder}/ ({counts})", highlight=False, soft_wrap=True)


def _ics(report: dict, path: Path, document: str | None, link: str) -> None:
    """Write the run's (or one document's) upcoming deadlines as an iCalendar file; exit 2 naming the
    document when it has none (nothing written)."""
    from tasks.observe.deadlines import calendar_ics

    docs = report["documents"]
    if document:
        docs = [d for d in docs if document in (d["file_name"], d.get("sha256"))]
        if not docs:
            err.print(
                f"[red]error:[/] run {report['run']['id'][:8]} has no document {escape(document)}: nothing written"
            )
            raise typer.Exit(2)
    rows = [(d, x) for d in docs for x in d.get("deadlines") or [] if x["upcoming"]]
    if not rows:
        why = "; ".join(f"{d['file_name']}: {_no_deadline(d)}" for d in docs)
        err.print(f"[red]error:[/] no upcoming deadline ({escape(why or 'no document')}): no calendar written")
        raise typer.Exit(2)
    name = docs[0]["file_name"] if document else f"docreview run {report['run']['id'][:8]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(calendar_ics(rows, name, link))
    console.print(f"Wrote {path} ({len(rows)} deadline(s) as of {report['run']['deadlines_as_of']})", highlight=False)


def _target(out: Path | None, name: str) -> Path:
    """``--out`` as the file to write: ``out/name`` for an existing folder, ``name`` without ``--out``."""
    return out / name if out is not None and out.is_dir() else out or Path(name)


def _portfolio(
    fmt: str,
    out: Path | None,
    reports: Path,
    report_url: str | None,
    document: str | None,
    clock: date | None,
    db: str | None,
) -> None:
    """``docreview export portfolio``: the portfolio as a workbook, CSV files or one calendar (exit 2, nothing
    written, when it is empty, when ``--document`` names none of it, or when no deadline is upcoming)."""
    from cli.portfolio import load_portfolio, portfolio_database
    from schemas.settings import Settings
    from tasks.observe.portfolio import calendar_rows, portfolio_calendar
    from tasks.observe.report import report_link

    url = portfolio_database(db)
    data = load_portfolio(url, clock)
    docs = data["documents"]
    if not docs:
        err.print("[red]error:[/] no contract has been reviewed into this database yet: nothing written")
        raise typer.Exit(2)
    base = report_url or Settings().report_url_base
    if fmt == "ics":
        if document:
            docs = [d for d in docs if document in (d["file_name"], d["sha256"])]
            if not docs:
                err.print(f"[red]error:[/] the portfolio has no document {escape(document)}: nothing written")
                raise typer.Exit(2)
        rows = calendar_rows(docs)
        if not rows:
            why = "; ".join(f"{d['file_name']}: {d['deadlines_note'] or 'every deadline has passed'}" for d in docs)
            err.print(f"[red]error:[/] no upcoming deadline ({escape(why)}): no calendar written")
            raise typer.Exit(2)
        path = _target(out, "portfolio.ics")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(portfolio_calendar(docs, f"{base.rstrip('/')}/portfolio" if base else None))
        console.print(
            f"Wrote {path} ({len(rows)} deadline(s) of {len({d['sha256'] for d, _x in rows})} contract(s) "
            f"as of {data['as_of']})",
            highlight=False,
            soft_wrap=True,
        )
        return
    from tasks.observe.export import portfolio_sheets, write_csv, write_xlsx

    sheets = portfolio_sheets(
        data, lambda d, anchor: f"{report_link(str(reports), d['run_id'], base)}" + (f"#{anchor}" if anchor else "")
    )
    counts = ", ".join(f"{len(rows) - 1} {name.lower()}" for name, rows in sheets.items())
    if fmt == "xlsx":
        path = _target(out, "portfolio.xlsx")
        write_xlsx(sheets, path)
        console.print(f"Wrote {path} ({counts}; as of {data['as_of']})", highlight=False, soft_wrap=True)
        return
    folder = out or Path("portfolio")
    if folder.exists() and not folder.is_dir():
        err.print(f"[red]error:[/] --out {escape(str(folder))} is a file; give a folder for the CSV files")
        raise typer.Exit(2)
    paths = write_csv(sheets, folder, "portfolio")
    console.print(
        f"Wrote {len(paths)} CSV file(s) to {folder}/ ({counts}; as of {data['as_of']})",
        highlight=False,
        soft_wrap=True,
    )


def _no_deadline(document: dict) -> str:
    """Why a document of a report has no upcoming deadline, in a reviewer's words."""
    if document.get("not_judged"):
        return f"not judged as an agreement ({document['not_judged'].split(' (', 1)[0]})"
    if document.get("deadlines_note"):
        return str(document["deadlines_note"])
    return "not a reviewed contract" if "deadlines" not in document else "every deadline has passed"
