"""``docreview audit show|verify``: the auditor's question answered, and a hand-edited decision found."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.queue import queue_items, record_decision
from tasks.store.persist import dispose_engines

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """A review of two sample contracts (rules backend) with its report folder: ``{db, out, path, report}``."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    base = tmp_path_factory.mktemp("audit")
    generate_samples(base / "inbox", count=2)
    path = base / "review.db"
    db = f"sqlite:///{path}"
    review_documents(source=str(base / "inbox"), out_dir=str(base / "out"), database_url=db, backend="rules")
    dispose_engines()
    return dict(db=db, path=path, out=base / "out", report=json.loads((base / "out" / "report.json").read_text()))


def test_audit_show_answers_who_approved_the_uncapped_liability_finding_and_when(run):
    finding = next(
        f for d in run["report"]["documents"] for f in d["findings"] if f["clause_type"] == "uncapped_liability"
    )
    fid = str(finding["id"])
    # the chain as the report saw it
    assert run["report"]["run"]["decisions"] == {"count": 0, "head": "0" * 64, "broken": None}
    record_decision(run["db"], fid, "reject", "reads as a carve-out", reviewer="Bob Stone")
    record_decision(run["db"], fid, "approve", "carve-out is uncapped: approved", reviewer="Alice Example")
    dispose_engines()
    runner = CliRunner()
    shown = runner.invoke(app, ["audit", "show", fid, "--db", run["db"]], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert f"Finding {fid}: Uncapped Liability" in text and finding["evidence"].split()[0] in text
    assert "Bob Stone" in text and "rejected" in text and "reads as a carve-out" in text  # the history
    assert "Stands: approved by Alice Example at " in text and "(decision 2 of 2)" in text
    assert "Decision chain intact" in text
    data = json.loads(runner.invoke(app, ["audit", "show", fid, "--db", run["db"], "--json"]).output)
    assert [(h["reviewer"], h["decision"], h["verified"]) for h in data["history"]] == [
        ("Bob Stone", "reject", True),
        ("Alice Example", "approve", True),
    ]
    assert data["decision"]["decided_at"].endswith("Z") and len(data["decision"]["hash"]) == 64
    missing = runner.invoke(app, ["audit", "show", "999999", "--db", run["db"]])
    assert missing.exit_code == 2 and "no finding 999999" in missing.output


def test_audit_verify_passes_untouched_and_fails_on_a_hand_edited_decision(run, tmp_path):
    items = queue_items(run["db"])
    for i, item in enumerate(items[:4]):
        record_decision(run["db"], item["id"], "approve" if i % 2 else "reject", reviewer=f"reviewer {i}")
    dispose_engines()
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "verify", "--db", run["db"]])
    assert ok.exit_code == 0 and "Decision chain intact" in ok.output, ok.output
    head = ok.output.split("Head: ")[1].split()[0]
    assert len(head) == 64
    # Someone with the database file drops the append-only triggers and changes who decided one item.
    conn = sqlite3.connect(run["path"])
    with conn:
        conn.execute("DROP TRIGGER reviewer_decisions_no_update")
        victim = conn.execute("SELECT id FROM reviewer_decisions ORDER BY id LIMIT 1 OFFSET 1").fetchone()[0]
        conn.execute("UPDATE reviewer_decisions SET reviewer = 'Mallory' WHERE id = ?", (victim,))
    conn.close()
    bad = runner.invoke(app, ["audit", "verify", "--db", run["db"]])
    assert bad.exit_code == 1
    assert f"Decision chain broken at decision #{victim}" in bad.output and "changed after it was written" in bad.output
    assert "Traceback" not in bad.output
    # The next report of the run says so above everything else; an intact chain shows no such notice.
    from tasks.observe.report import build_report, render_html

    run_id = run["report"]["run"]["id"]
    report = build_report(run["db"], run_id, offline=True)
    assert f"decision #{victim} does not match its hash" in report["run"]["decisions"]["broken"]
    html = render_html(report)
    assert 'id="chain-broken"' in html and f"decision #{victim} does not match its hash" in html
    assert 'id="chain-broken"' not in render_html(run["report"])


def test_a_rewritten_tail_is_caught_by_the_head_a_report_recorded(tmp_path, db_url):
    """Remove the newest decision (the chain before it stays consistent): verify alone passes; against
    the head a report recorded it fails."""
    from sqlmodel import Session

    from cli.audit import check_heads
    from schemas.decisions import Decision
    from tasks.store.decisions import append_decision, chain_position
    from tasks.store.persist import get_engine

    with Session(get_engine(db_url)) as session:
        for i in range(3):
            append_decision(
                session, target_kind="finding", target_key=f"{i:064x}", decision=Decision.approve, reviewer="A"
            )
        count, head = chain_position(session)
    assert count == 3
    path = db_url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER reviewer_decisions_no_delete")
        conn.execute("DELETE FROM reviewer_decisions WHERE id = (SELECT max(id) FROM reviewer_decisions)")
    conn.close()
    out = tmp_path / "out"
    (out / "runs" / "r1").mkdir(parents=True)
    (out / "runs" / "r1" / "report.json").write_text(
        json.dumps({"run": {"id": "r1", "decisions": {"count": count, "head": head}}})
    )
    dispose_engines()
    runner = CliRunner()
    assert runner.invoke(app, ["audit", "verify", "--db", db_url]).exit_code == 0  # a shorter chain is consistent
    res = runner.invoke(app, ["audit", "verify", "--db", db_url, "--reports", str(out)])
    assert res.exit_code == 1 and "decisions were removed" in res.output
    with Session(get_engine(db_url)) as session:
        assert check_heads(session, [("r1", 2, "x" * 64)])[0].endswith("the chain was rewritten since that run")
