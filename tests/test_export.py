"""``docreview export RUN``: the report as XLSX (read back with openpyxl and with LibreOffice),
CSV and .ics; a run that does not exist and a document without dates are refused, nothing written."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from cli.app import app
from cli.queue import record_decision
from tasks.store.persist import dispose_engines

pytestmark = pytest.mark.usefixtures("prefect_harness")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """Two sample contracts, a letter with no dates and a 10-Q with inline XBRL (scale 3), reviewed with the
    sample playbook; one finding
    approved by a named reviewer, one reclassified."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    base = tmp_path_factory.mktemp("export")
    generate_samples(base / "inbox", count=2)
    from fpdf import FPDF

    letter = FPDF(format="A4")
    letter.add_page()
    letter.set_font("Helvetica", size=11)
    letter.multi_cell(170, 6, "Dear Sir or Madam, thank you for your letter. We will write again soon.")
    letter.output(str(base / "inbox" / "letter.pdf"))
    from docreview_testing.filings import write_quarterly_10q

    write_quarterly_10q(base / "inbox" / "harbor-10q.htm", scale=3)  # a filing: its key figures
    db = f"sqlite:///{base / 'review.db'}"
    kw = dict(source=str(base / "inbox"), out_dir=str(base / "out"), database_url=db, backend="rules")
    review_documents(**kw, playbook=str(ROOT / "deployments" / "playbook.yaml"))
    report = json.loads((base / "out" / "report.json").read_text())
    findings = [f for d in report["documents"] if d.get("profile") == "contract" for f in d["findings"]]
    record_decision(db, str(findings[0]["id"]), "approve", "read in full", reviewer="Alice Example")
    record_decision(db, str(findings[1]["id"]), "reclassify", reviewer="Bob", category="Non-Compete")
    result = review_documents(**kw, playbook=str(ROOT / "deployments" / "playbook.yaml"))  # the next run shows them
    dispose_engines()
    report = json.loads((base / "out" / "report.json").read_text())
    return dict(base=base, db=db, run_id=result["run_id"], report=report)


def _rows(report: dict) -> list[tuple]:
    return [(str(f["id"]), d["file_name"], f["clause_label"]) for d in report["documents"] for f in d["findings"]]


def test_the_workbook_has_a_sheet_each_frozen_headers_filters_links_and_the_reports_rows(run, tmp_path):
    out = tmp_path / "run.xlsx"
    res = CliRunner().invoke(
        app,
        [
            "export",
            run["run_id"][:8],
            "--format",
            "xlsx",
            "--out",
            str(out),
            "--db",
            run["db"],
            "--report-url",
            "http://reports.example:8088",
        ],
    )
    assert res.exit_code == 0, res.output
    book = load_workbook(out)
    assert book.sheetnames == ["Findings", "Key terms", "Key figures", "Deviations", "Deadlines"]
    for ws in book.worksheets:
        assert ws.freeze_panes == "A2" and ws.auto_filter.ref == ws.dimensions
        assert all(c.font.bold for c in ws[1])
    ws = book["Findings"]
    header = [c.value for c in ws[1]]
    rows = [dict(zip(header, (c.value for c in r))) for r in ws.iter_rows(min_row=2)]
    assert [(str(r["ID"]), r["Document"], r["Category"]) for r in rows] == _rows(run["report"])
    by_id = {str(r["ID"]): r for r in rows}
    findings = [f for d in run["report"]["documents"] for f in d["findings"]]
    decided = [f for f in findings if f.get("decision")]
    assert {(by_id[str(f["id"])]["Decision"], by_id[str(f["id"])]["Reviewer"]) for f in decided} == {
        ("approved", "Alice Example"),
        ("reclassified", "Bob"),
    }
    moved = next(f for f in decided if f["decision"]["decision"] == "reclassify")
    assert by_id[str(moved["id"])]["Category"] == "Non-Compete" and by_id[str(moved["id"])]["Claimed as"]
    link = ws.cell(row=2, column=header.index("Link") + 1)
    assert link.hyperlink.target == f"http://reports.example:8088/runs/{run['run_id']}/report.html#f-{rows[0]['ID']}"
    terms = [(d["file_name"], t, v) for d in run["report"]["documents"] for t, vs in d["key_terms"].items() for v in vs]
    assert [tuple(c.value for c in r[:3]) for r in book["Key terms"].iter_rows(min_row=2)] == terms
    deviations = [
        r
        for d in run["report"]["documents"]
        for r in d.get("playbook") or []
        if r["status"] in ("deviation", "unknown")
    ]
    assert book["Deviations"].max_row - 1 == len(deviations) > 0
    deadlines = [x for d in run["report"]["documents"] for x in d.get("deadlines") or []]
    assert book["Deadlines"].max_row - 1 == len(deadlines) > 0
    # the Date column holds dates a spreadsheet sorts and filters as dates, not text
    dates = [r[1] for r in book["Deadlines"].iter_rows(min_row=2)]
    assert all(c.is_date for c in dates)
    assert sorted(c.value.date().isoformat() for c in dates) == sorted(x["date"] for x in deadlines)


def test_libreoffice_reads_the_workbook_with_the_same_rows(run, tmp_path):
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        pytest.skip("LibreOffice is not installed (apt-get install libreoffice-calc)")
    out = tmp_path / "run.xlsx"
    assert CliRunner().invoke(app, ["export", run["run_id"], "--out", str(out), "--db", run["db"]]).exit_code == 0
    profile = tmp_path / "lo-profile"
    # every sheet to its own CSV: the filter's 12th token is the sheet, -1 all of them (LibreOffice 7.2+)
    done = subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1",
            "--outdir",
            str(tmp_path / "csv"),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    findings = tmp_path / "csv" / "run-Findings.csv"
    assert findings.is_file(), sorted(p.name for p in (tmp_path / "csv").iterdir())
    rows = list(csv.reader(io.StringIO(findings.read_text(encoding="utf-8"))))
    assert [(r[0], r[1], r[3]) for r in rows[1:]] == _rows(run["report"])
    terms = list(csv.reader(io.StringIO((tmp_path / "csv" / "run-Key terms.csv").read_text(encoding="utf-8"))))
    assert len(terms) - 1 == sum(len(v) for d in run["report"]["documents"] for v in d["key_terms"].values())


def test_csv_files_and_an_ics_and_the_refusals(run, tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        app, ["export", run["run_id"], "--format", "csv", "--out", str(tmp_path / "csv"), "--db", run["db"]]
    )
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in (tmp_path / "csv").iterdir())
    stem = f"run-{run['run_id'][:8]}"
    assert names == sorted(
        f"{stem}-{s}.csv" for s in ("findings", "key-terms", "key-figures", "deviations", "deadlines")
    )
    rows = list(csv.reader(io.StringIO((tmp_path / "csv" / f"{stem}-findings.csv").read_text(encoding="utf-8-sig"))))
    assert [(r[0], r[1], r[3]) for r in rows[1:]] == _rows(run["report"])
    ics = tmp_path / "all.ics"
    res = runner.invoke(
        app, ["export", run["run_id"], "--format", "ics", "--out", str(ics), "--as-of", "2026-01-01", "--db", run["db"]]
    )
    assert res.exit_code == 0 and "as of 2026-01-01" in res.output, res.output
    assert ics.read_bytes().count(b"BEGIN:VEVENT") == sum(
        1 for d in run["report"]["documents"] for _ in d.get("deadlines") or []
    )
    # An existing folder named by --out gets the workbook under the run's name, as the calendar below.
    res = runner.invoke(app, ["export", run["run_id"], "--out", str(tmp_path / "csv"), "--db", run["db"]])
    assert res.exit_code == 0, res.output
    assert load_workbook(tmp_path / "csv" / f"export-{run['run_id'][:8]}.xlsx").sheetnames[0] == "Findings"
    # --out naming a folder writes the calendar into it under the run's name; a missing parent folder is made.
    nested = tmp_path / "calendars" / "q1.ics"
    for out, written in ((tmp_path / "csv", tmp_path / "csv" / f"deadlines-{run['run_id'][:8]}.ics"), (nested, nested)):
        res = runner.invoke(
            app,
            ["export", run["run_id"], "--format", "ics", "--out", str(out), "--as-of", "2026-01-01", "--db", run["db"]],
        )
        assert res.exit_code == 0, res.output
        assert written.read_bytes().startswith(b"BEGIN:VCALENDAR")
    # Refused, nothing written: a run that does not exist, a letter (no agreement: no deadlines), a bad format.
    for args, why in (
        (["zzzz9999", "--format", "xlsx", "--out", str(tmp_path / "none.xlsx")], "no run"),
        (
            [run["run_id"], "--format", "ics", "--document", "letter.pdf", "--out", str(tmp_path / "none.ics")],
            "no upcoming deadline (letter.pdf: not judged as an agreement (not an agreement))",
        ),
        ([run["run_id"], "--format", "pdf", "--out", str(tmp_path / "none.pdf")], "--format must be"),
    ):
        res = runner.invoke(app, ["export", *args, "--db", run["db"]])
        assert res.exit_code == 2 and why in res.output, res.output
    assert not any(p.name.startswith("none") for p in tmp_path.iterdir())


def test_formula_like_text_keeps_its_value_in_the_workbook_and_the_csv_keeps_the_guard(tmp_path):
    """Before: the workbook got the CSV's guard, so "-5 days" showed as "'-5 days". Now a text cell holds it
    exactly (quote-prefix style, never evaluated); the CSV, which has no cell types, keeps the apostrophe."""
    from tasks.observe.export import write_csv, write_xlsx

    sheets = {"Deadlines": [["Document", "Note"], ["a.pdf", "-5 days"], ["b.pdf", '=HYPERLINK("x")'], ["c.pdf", 3]]}
    book = load_workbook(write_xlsx(sheets, tmp_path / "x.xlsx"))
    cells = {row[0].value: row[1] for row in book["Deadlines"].iter_rows(min_row=2)}
    assert cells["a.pdf"].value == "-5 days" and cells["a.pdf"].data_type == "s" and cells["a.pdf"].quotePrefix
    assert cells["b.pdf"].value == '=HYPERLINK("x")' and cells["b.pdf"].data_type == "s"
    assert cells["c.pdf"].value == 3 and cells["c.pdf"].data_type == "n"
    (path,) = write_csv(sheets, tmp_path, "x")
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    assert rows[1] == ["a.pdf", "'-5 days"] and rows[2][1].startswith("'=")


def test_the_key_figures_sheet_holds_each_figure_as_a_number_in_its_own_unit(run, tmp_path):
    """A filing's key figures as the report has them: the exact value a number (never its displayed digits:
    the 10-Q's "16,177" tagged in thousands is 16,177,000 USD), unit, period, whether it is the filing's own;
    the CSV writes the same rows."""
    for fmt, out in (("xlsx", tmp_path / "run.xlsx"), ("csv", tmp_path / "csv")):
        res = CliRunner().invoke(
            app, ["export", run["run_id"][:8], "--format", fmt, "--out", str(out), "--db", run["db"]]
        )
        assert res.exit_code == 0, res.output
    figures = next(d for d in run["report"]["documents"] if d["file_name"] == "harbor-10q.htm")["key_figures"]
    assert figures
    sheet = load_workbook(tmp_path / "run.xlsx")["Key figures"]
    header = [c.value for c in sheet[1]]
    rows = [dict(zip(header, r)) for r in sheet.iter_rows(min_row=2, values_only=True)]
    assert [(r["Document"], r["Shown"], r["Period"], r["Current"]) for r in rows] == [
        ("harbor-10q.htm", k["shown"], k["period"], "yes" if k["current"] else "no") for k in figures
    ]
    for r, k in zip(rows, figures):
        assert isinstance(r["Value"], (int, float)) and Decimal(str(r["Value"])) == Decimal(k["value"])
        assert r["Unit"] == k["unit"]
    revenue = next(r for r in rows if r["Figure"] == "revenue" and r["Current"] == "yes")
    assert revenue["Value"] == 16177000 and revenue["Unit"] == "USD"  # the fact's value after its scale
    written = next((tmp_path / "csv").glob("*-key-figures.csv")).read_text(encoding="utf-8-sig")
    csv_rows = list(csv.DictReader(io.StringIO(written)))
    assert [Decimal(r["Value"]) for r in csv_rows] == [Decimal(k["value"]) for k in figures]


def test_file_links_to_a_report_folder_that_is_not_there_are_said_to_be_dead(run, tmp_path):
    """Without a URL base the Link column holds file:// links under --reports (default ``out``); when the run's
    kept report is not there the command says so (a newcomer's run wrote elsewhere and every link was dead)."""
    out = tmp_path / "run.xlsx"
    res = CliRunner().invoke(
        app, ["export", run["run_id"][:8], "--format", "xlsx", "--out", str(out), "--db", run["db"]]
    )
    assert res.exit_code == 0 and "which does not exist" in " ".join(res.output.split()), res.output
    kept = CliRunner().invoke(
        app,
        ["export", run["run_id"][:8], "--format", "xlsx", "--out", str(out), "--db", run["db"]]
        + ["--reports", str(run["base"] / "out")],
    )
    assert kept.exit_code == 0 and "does not exist" not in kept.output, kept.output
