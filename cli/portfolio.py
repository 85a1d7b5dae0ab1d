"""``docreview portfolio``: every contract reviewed into the database, once, at its latest version.

One row per contract (:func:`tasks.observe.portfolio.portfolio`): its parties, governing law, when the
current term ends, the next deadline with its date and the days left, the findings still needing
attention and the reviewer decisions on it. ``--within-days N`` keeps the contracts whose next
deadline is at most N days away; ``--as-of`` fixes the clock. ``docreview export portfolio`` writes
the same list as XLSX or CSV, and its deadlines as one calendar (:mod:`cli.export`).
"""

from __future__ import annotations

from datetime import date
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from cli.common import err, table_console

_DB_HELP = "Database URL (default: sqlite:///docreview.db or DATABASE_URL)."


def portfolio_database(db: str | None) -> str:
    """The database a portfolio command reads: ``--db`` or the configured one. Settings that cannot be
    read end the command with the setting's name (exit 2), as does a SQLite file that does not exist
    (:func:`cli.common.stored_database`)."""
    from cli.checks import load_settings
    from cli.common import stored_database

    settings, problem = load_settings(
        {"database_url": db} if db else {}, options={"database_url": "--db"} if db else None
    )
    if settings is None:
        err.print(f"[red]error:[/] {escape(problem or 'the settings cannot be read')}")
        raise typer.Exit(2)
    return stored_database(settings.database_url)


def parse_as_of(as_of: str | None) -> date | None:
    """``--as-of`` as a date (None: today, UTC); exit 2 for text that is not ``YYYY-MM-DD``."""
    try:
        return date.fromisoformat(as_of) if as_of else None
    except ValueError:
        err.print(f"[red]error:[/] --as-of {escape(as_of or '')}: not a date (YYYY-MM-DD)")
        raise typer.Exit(2) from None


def load_portfolio(url: str, as_of: date | None) -> dict[str, Any]:
    """:func:`tasks.observe.portfolio.portfolio` of ``url``, the engines disposed of afterwards."""
    from tasks.observe.portfolio import portfolio as build
    from tasks.store.persist import dispose_engines

    try:
        return build(url, as_of)
    finally:
        dispose_engines()


def _days(days: int) -> str:
    text = f"{days} day{'' if days == 1 else 's'}"
    return f"[red]{text}[/]" if days <= 30 else text


def portfolio(
    db: str | None = typer.Option(None, "--db", "--database-url", help=_DB_HELP),
    as_of: str | None = typer.Option(
        None, "--as-of", help="Deadlines as of this date (YYYY-MM-DD; default today, UTC)."
    ),
    within_days: int | None = typer.Option(
        None, "--within-days", min=0, help="Only contracts whose next deadline is at most N days away."
    ),
) -> None:
    """Every contract reviewed in any run, once, at its latest version: parties, law, term, next deadline, open findings."""
    from tasks.observe.portfolio import due_within

    clock = parse_as_of(as_of)
    url = portfolio_database(db)
    data = load_portfolio(url, clock)
    console = table_console()
    everything = data["documents"]
    if not everything:
        console.print("No contract has been reviewed into this database yet (docreview review SOURCE).")
        return
    shown = everything if within_days is None else due_within(everything, within_days)
    if not shown:
        console.print(
            f"No contract has a deadline within {within_days} day(s) of {data['as_of']} "
            f"({len(everything)} contract(s) in the portfolio).",
            highlight=False,
        )
        return
    table = Table(
        title=f"Portfolio: {len(shown)} contract(s)"
        + (f" with a deadline within {within_days} day(s)" if within_days is not None else "")
        + f", deadlines as of {data['as_of']}",
        title_justify="left",
        pad_edge=False,
        box=box.SIMPLE_HEAD,
        expand=True,
    )
    wide = console.width >= 120  # narrower: the parties go under the document's name
    table.add_column("document" if wide else "document / parties", overflow="fold", ratio=3)
    if wide:
        table.add_column("parties", overflow="fold", ratio=2)
    table.add_column("law", overflow="fold")
    table.add_column("term ends", no_wrap=True)
    table.add_column("next deadline", no_wrap=True)
    table.add_column("days left", justify="right", no_wrap=True)
    table.add_column("open", justify="right", no_wrap=True)
    table.add_column("decisions", justify="right", no_wrap=True)
    for d in shown:
        nxt = d["next_deadline"]
        parties = escape("\n".join(d["parties"])) or "—"
        table.add_row(
            *([escape(d["file_name"]), parties] if wide else [f"{escape(d['file_name'])}\n[dim]{parties}[/]"]),
            escape("; ".join(d["governing_law"])) or "—",
            escape(d["term_ends"] or "; ".join(d["expiration"]) or "—"),
            f"{nxt['kind']} {nxt['date']}" if nxt else "—",
            _days(nxt["days_left"]) if nxt else "—",
            f"[yellow]{d['open_findings']}[/]" if d["open_findings"] else "0",
            str(d["decisions"]),
        )
    console.print(table)
    left_out = len(data["superseded"])
    console.print(
        "[dim]Each contract once, at its latest version"
        + (f" ({left_out} earlier version(s) left out)" if left_out else "")
        + f"; business days: {escape(data['business_days'])}. open = findings needing attention, undecided; "
        "decisions = findings and absences a reviewer decided. docreview export portfolio --format ics: the calendar.[/]"
    )
    undated = [d for d in shown if d["next_deadline"] is None]
    for d in undated[:10]:
        why = d["deadlines_note"] or "every deadline has passed"
        console.print(f"  {escape(d['file_name'])}: {escape(why)}", highlight=False)
