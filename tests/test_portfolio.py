"""The portfolio (tasks/observe/portfolio.py): every contract reviewed into one database, once, at its
latest version, with its next deadline; ``docreview portfolio``, ``docreview export portfolio`` (XLSX, CSV
and one calendar) and the ``/portfolio`` page of ``docreview report serve``."""

from __future__ import annotations

import csv
import threading
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from icalendar import Calendar
from openpyxl import load_workbook
from typer.testing import CliRunner

from cli.app import app
from tasks.store.persist import dispose_engines

AS_OF = date(2026, 6, 1)


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, prefect_harness) -> dict:
    """Two runs into one SQLite database with the offline rules backend: the first reviews two sample
    contracts, the second a later version of the second one (same title and parties, a new effective
    date, so new deadlines)."""
    from docreview_testing.samples import generate_revision, generate_samples
    from flows.review import review_documents
    from tasks.observe.report import build_report

    base = tmp_path_factory.mktemp("portfolio")
    made = generate_samples(base / "v1", count=2)
    later = generate_revision(base / "v2", 1, count=2, effective_date="March 2, 2025")
    assert later.title == made[1].title and later.parties == made[1].parties
    db = f"sqlite:///{base / 'review.db'}"
    kw = dict(out_dir=str(base / "out"), database_url=db, backend="rules")
    try:
        first = review_documents(source=str(base / "v1"), **kw)
        second = review_documents(source=str(base / "v2"), **kw)
        reports = [build_report(db, r["run_id"], offline=True, as_of=AS_OF) for r in (first, second)]
    finally:
        dispose_engines()
    by_name = {d["file_name"]: d for r in reports for d in r["documents"]}
    return dict(
        base=base,
        db=db,
        runs=(first["run_id"], second["run_id"]),
        kept=by_name[made[0].file_name],
        old=by_name[made[1].file_name],
        new=by_name[later.file_name],
    )


def _portfolio(db: str, as_of: date = AS_OF) -> dict:
    from tasks.observe.portfolio import portfolio

    try:
        return portfolio(db, as_of)
    finally:
        dispose_engines()


def test_each_contract_is_listed_once_at_its_latest_version_with_its_next_deadline(reviewed):
    data = _portfolio(reviewed["db"])
    docs = data["documents"]
    kept, old, new = reviewed["kept"], reviewed["old"], reviewed["new"]
    assert old["sha256"] != new["sha256"]
    assert sorted(d["sha256"] for d in docs) == sorted([kept["sha256"], new["sha256"]])  # each once, v1 left out
    assert data["superseded"] == [dict(file_name=old["file_name"], sha256=old["sha256"], superseded_by=new["sha256"])]
    assert data["as_of"] == "2026-06-01"
    entry = {d["sha256"]: d for d in docs}
    latest = entry[new["sha256"]]
    assert latest["file_name"] == new["file_name"] and latest["run_id"] == reviewed["runs"][1]
    assert latest["previous_sha256"] == old["sha256"]
    assert entry[kept["sha256"]]["run_id"] == reviewed["runs"][0]
    assert datetime.fromisoformat(latest["reviewed_at"]).astimezone(UTC).date() <= datetime.now(UTC).date()
    # the later version's terms: effective 2025-03-02 + thirty-six months; its deadlines are not the first version's
    assert latest["term_ends"] == "2028-03-02"
    assert latest["governing_law"] == ["Illinois"]
    assert any("Quantum Ledger" in p for p in latest["parties"]) and len(latest["parties"]) == 2
    upcoming = [x for x in new["deadlines"] if x["upcoming"]]
    assert latest["next_deadline"] == {k: upcoming[0][k] for k in ("kind", "date", "title", "basis", "days_left")}
    assert latest["next_deadline"]["kind"] == "notice" and latest["next_deadline"]["date"] == "2028-02-01"
    assert latest["next_deadline"]["days_left"] == (date(2028, 2, 1) - AS_OF).days
    old_next = next(x for x in old["deadlines"] if x["upcoming"])
    assert old_next["date"] != latest["next_deadline"]["date"]  # the superseded version's deadline is not shown
    # soonest next deadline first
    dates = [d["next_deadline"]["date"] for d in docs]
    assert dates == sorted(dates)
    # open findings as the report counts them, decisions none yet
    assert latest["open_findings"] == new["counts"]["attention"] > 0 and latest["decisions"] == 0


def test_a_decision_on_the_latest_version_shows_in_its_row(reviewed, tmp_path):
    import shutil

    from cli.queue import record_decision
    from tasks.observe.report import needs_attention

    db_file = tmp_path / "copy.db"
    shutil.copy(reviewed["base"] / "review.db", db_file)  # the other tests keep the undecided database
    db = f"sqlite:///{db_file}"
    finding = next(f for f in reviewed["new"]["findings"] if needs_attention(f))
    try:
        record_decision(db, str(finding["id"]), "approve", "checked", reviewer="Alice Example")
    finally:
        dispose_engines()
    row = next(d for d in _portfolio(db)["documents"] if d["sha256"] == reviewed["new"]["sha256"])
    assert row["decisions"] == 1 and row["open_findings"] == reviewed["new"]["counts"]["attention"] - 1


def test_the_exported_calendar_holds_every_listed_contracts_deadlines(reviewed, tmp_path):
    data = _portfolio(reviewed["db"])
    out = tmp_path / "portfolio.ics"
    res = CliRunner().invoke(
        app,
        ["export", "portfolio", "--format", "ics", "--out", str(out), "--as-of", "2026-06-01", "--db", reviewed["db"]],
    )
    assert res.exit_code == 0, res.output
    cal = Calendar.from_ical(out.read_bytes())
    assert str(cal.get("x-wr-calname")) == "docreview portfolio"
    events = {(str(e.get("uid")), e.decoded("dtstart")) for e in cal.walk("VEVENT")}
    wanted = {
        (f"{d['sha256']}-{x['kind']}-{x['date']}@docreview", date.fromisoformat(x["date"]))
        for d in data["documents"]
        for x in d["deadlines"]
        if x["upcoming"]
    }
    assert events == wanted and len(wanted) >= 2 * len(data["documents"])
    assert {uid.split("-")[0] for uid, _day in events} == {d["sha256"] for d in data["documents"]}
    assert not any(uid.startswith(reviewed["old"]["sha256"]) for uid, _day in events)  # no superseded version's


def test_the_command_prints_one_row_per_contract_and_filters_by_days(reviewed):
    runner = CliRunner()
    res = runner.invoke(
        app, ["portfolio", "--database-url", reviewed["db"], "--as-of", "2026-06-01"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Portfolio: 2 contract(s)" in out and "1 earlier version(s) left out" in out
    assert out.count(reviewed["new"]["file_name"]) == 1 and out.count(reviewed["kept"]["file_name"]) == 1
    assert reviewed["old"]["file_name"] not in out
    assert "notice 2028-02-01" in out and f"{(date(2028, 2, 1) - AS_OF).days} days" in out and "Illinois" in out
    soonest = min(
        (x for d in (reviewed["kept"], reviewed["new"]) for x in d["deadlines"] if x["upcoming"]),
        key=lambda x: x["date"],
    )
    days = (date.fromisoformat(soonest["date"]) - AS_OF).days
    near = runner.invoke(
        app,
        ["portfolio", "--db", reviewed["db"], "--as-of", "2026-06-01", "--within-days", str(days)],
        env={"COLUMNS": "200"},
    )
    assert near.exit_code == 0, near.output
    assert "Portfolio: 1 contract(s) with a deadline within" in near.output
    none = runner.invoke(app, ["portfolio", "--db", reviewed["db"], "--as-of", "2026-06-01", "--within-days", "0"])
    assert none.exit_code == 0 and "No contract has a deadline within 0 day(s)" in none.output


def test_the_workbook_and_csv_list_the_portfolio(reviewed, tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "export",
            "portfolio",
            "--format",
            "xlsx",
            "--out",
            str(tmp_path),
            "--as-of",
            "2026-06-01",
            "--db",
            reviewed["db"],
        ],
    )
    assert res.exit_code == 0, res.output
    book = load_workbook(tmp_path / "portfolio.xlsx")
    assert book.sheetnames == ["Contracts", "Deadlines"]
    rows = list(book["Contracts"].iter_rows(values_only=True))
    assert rows[0][:2] == ("Document", "SHA-256") and len(rows) == 3
    assert {r[1] for r in rows[1:]} == {reviewed["kept"]["sha256"], reviewed["new"]["sha256"]}
    row = next(r for r in rows[1:] if r[1] == reviewed["new"]["sha256"])
    assert row[6].date() == date(2028, 2, 1) and row[7] == (date(2028, 2, 1) - AS_OF).days  # a date, a number
    res = runner.invoke(
        app, ["export", "portfolio", "--format", "csv", "--out", str(tmp_path / "csv"), "--db", reviewed["db"]]
    )
    assert res.exit_code == 0, res.output
    with (tmp_path / "csv" / "portfolio-contracts.csv").open(encoding="utf-8-sig", newline="") as fh:
        names = [r["Document"] for r in csv.DictReader(fh)]
    assert sorted(names) == sorted([reviewed["kept"]["file_name"], reviewed["new"]["file_name"]])


def test_the_served_portfolio_page_lists_the_latest_versions_escaped_and_asks_for_a_login(reviewed, tmp_path):
    import shutil

    from sqlmodel import Session

    from cli.report import make_report_server
    from cli.report_server import PAGE_CSP
    from tasks.store.accounts import add_account
    from tasks.store.persist import get_engine

    db_file = tmp_path / "served.db"
    shutil.copy(reviewed["base"] / "review.db", db_file)
    db = f"sqlite:///{db_file}"
    server = make_report_server(reviewed["base"] / "out", "127.0.0.1", 0, db)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_address[1]}", timeout=60) as client:
            page = client.get("/portfolio")  # loopback, no account yet: readable
            assert page.status_code == 200 and page.headers["content-security-policy"] == PAGE_CSP
            text = page.text
            assert text.count(reviewed["new"]["file_name"]) == 1 and reviewed["old"]["file_name"] not in text
            assert f'href="/runs/{reviewed["runs"][1]}/report.html#doc-1"' in text
            assert "&#34;" in text and '("' not in text  # the parties' defined names, escaped
            ics = client.get("/portfolio.ics")
            assert ics.headers["content-type"].startswith("text/calendar")
            assert len(Calendar.from_ical(ics.content).walk("VEVENT")) >= 4
            with Session(get_engine(db)) as session:
                add_account(session, "Alice Example", "correct horse battery staple")
            assert client.get("/portfolio").status_code == 303  # once an account exists, a login first
    finally:
        server.shutdown()
        server.server_close()
        dispose_engines()


def test_an_empty_or_missing_database_says_so(tmp_path):
    from tasks.store.persist import get_engine

    db = f"sqlite:///{tmp_path / 'empty.db'}"
    get_engine(db)  # created, migrated, nothing reviewed
    dispose_engines()
    runner = CliRunner()
    res = runner.invoke(app, ["portfolio", "--db", db])
    assert res.exit_code == 0 and "No contract has been reviewed into this database yet" in res.output
    res = runner.invoke(app, ["export", "portfolio", "--format", "ics", "--out", str(tmp_path / "p.ics"), "--db", db])
    assert res.exit_code == 2 and "nothing written" in res.output and not (tmp_path / "p.ics").exists()
    res = runner.invoke(app, ["portfolio", "--db", f"sqlite:///{tmp_path / 'nowhere.db'}"])
    assert res.exit_code == 2 and "--db / DATABASE_URL" in res.output
    res = runner.invoke(app, ["portfolio", "--db", db], env={"DOCREVIEW_DEADLINE_HOLIDAYS": "XX"})
    assert res.exit_code == 2 and "DOCREVIEW_DEADLINE_HOLIDAYS" in res.output
    res = runner.invoke(app, ["portfolio", "--db", db, "--as-of", "June 1"])
    assert res.exit_code == 2 and "--as-of" in res.output


def test_versions_in_a_chain_and_in_a_circle():
    from tasks.observe.portfolio import latest_versions

    def reviewed(*shas: str) -> dict:
        return {
            s: (
                SimpleNamespace(updated_at=datetime(2026, 1, i + 1), id=i),
                SimpleNamespace(started_at=datetime(2026, 1, i + 1)),
            )
            for i, s in enumerate(shas)
        }

    def links(**previous: str) -> dict:
        return {s: SimpleNamespace(previous_sha256=p) for s, p in previous.items()}

    # a → b → c: c stands for all three; d was never revised; e names a version that was never reviewed
    listed, superseded = latest_versions(links(b="a", c="b", e="zz"), reviewed("a", "b", "c", "d", "e"))
    assert listed == {"c", "d", "e"} and superseded == {"a": "c", "b": "c"}
    # x and y each named as the other's previous version: the one reviewed last is listed
    listed, superseded = latest_versions(links(x="y", y="x"), reviewed("x", "y"))
    assert listed == {"y"} and superseded == {"x": "y"}


def test_the_docs_and_readme_name_the_command():
    root = Path(__file__).resolve().parents[1]
    assert "docreview portfolio" in (root / "README.md").read_text(encoding="utf-8")
    assert "## Portfolio" in (root / "docs" / "deadlines.md").read_text(encoding="utf-8")


def test_every_run_refreshes_the_portfolio_calendar_and_names_the_portfolios_deadlines(reviewed):
    """The second run reviewed one document only; the calendar and the event it leaves behind hold the first
    run's contract as well (each contract at its latest version), and no deadline of the superseded one."""
    from tasks.observe.portfolio import PORTFOLIO_DEADLINES, portfolio, portfolio_event

    ics = reviewed["base"] / "out" / "portfolio.ics"
    assert ics.is_file()
    cal = Calendar.from_ical(ics.read_bytes())
    described = " ".join(str(e.get("summary")) for e in cal.walk("VEVENT"))
    assert reviewed["kept"]["file_name"] in described and reviewed["new"]["file_name"] in described
    assert reviewed["old"]["file_name"] not in described
    try:
        book = portfolio(reviewed["db"], AS_OF)
    finally:
        dispose_engines()
    soonest = min(x["days_left"] for d in book["documents"] for x in d["deadlines"] if x["upcoming"])
    event = portfolio_event(book, soonest, "run-x", None)
    assert event["event"] == PORTFOLIO_DEADLINES and event["payload"]["contracts"] == 2
    due = event["payload"]["due"]
    assert due and all(d["days_left"] <= soonest for d in due)
    wide = portfolio_event(book, 2000, "run-x", None)["payload"]["due"]
    assert {d["sha256"] for d in wide} == {reviewed["kept"]["sha256"], reviewed["new"]["sha256"]}
    assert wide == sorted(wide, key=lambda d: d["date"]) and len(wide) > len(due)
    assert reviewed["old"]["sha256"] not in {d["sha256"] for d in wide}
