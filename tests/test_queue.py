"""Review queue: queued findings and absences, reviewer decisions, gold set, report and metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from cli.queue import gold_set, queue_items, record_decision
from docreview_testing.samples import generate_samples
from schemas.findings import CheckedFinding, CheckResult, Finding, FindingValue, Risk, Verdict
from schemas.tables import AbsenceRow, FindingRow, ReviewerDecision
from schemas.taxonomy import ClauseType
from tasks.check.absences import find_absences
from tasks.store.persist import dispose_engines, get_engine, save_absences, save_findings, unit_of_work

SHA = "a" * 64


def _cf(evidence: str, clause: ClauseType, verdict: Verdict, reason: str) -> CheckedFinding:
    f = Finding(
        clause_type=clause,
        summary="s",
        risk=Risk.high,
        evidence=evidence,
        page=2,
        values=[FindingValue(name="amount", value="$5")],
    )
    return CheckedFinding(
        finding=f,
        chunk_index=0,
        ordinal=0,
        stated_page=2,
        verdict=verdict,
        checks=[
            CheckResult(name="grounding", verdict=Verdict.verified, reason="found"),
            CheckResult(name="values", verdict=verdict, reason=reason),
        ],
    )


@pytest.fixture
def stored(db_url):
    checked = [
        _cf("liability shall not exceed $6", ClauseType.cap_on_liability, Verdict.contradicted, "amount not in quote"),
        _cf("royalty of 5% of Net Sales", ClauseType.revenue_profit_sharing, Verdict.verified, "ok"),
        _cf("dated 03/01/2020", ClauseType.agreement_date, Verdict.needs_review, "day/month order undecided"),
    ]
    with unit_of_work(db_url) as session:
        save_findings.fn(session, "run-1", SHA, "rules", "rules-v1", "review-v1", checked)
        save_absences.fn(session, "run-1", SHA, "review-v1", "rules-v1", find_absences(checked, [0, 1]))
    yield db_url
    dispose_engines()


def test_queue_lists_doubtful_findings_and_absences(stored):
    items = queue_items(stored)
    findings = [i for i in items if i["kind"] == "finding"]
    absences = [i for i in items if i["kind"] == "absence"]
    assert sorted(i["verdict"] for i in findings) == ["contradicted", "needs_review"]
    assert any("amount not in quote" in r for i in findings for r in i["reasons"])
    # cap_on_liability has a finding; the other six looked-for categories are absent
    assert sorted(a["clause_type"] for a in absences) == sorted(
        [
            "governing_law",
            "uncapped_liability",
            "termination_for_convenience",
            "change_of_control",
            "non_compete",
            "exclusivity",
        ]
    )
    assert all(a["id"].startswith("A") and a["chunks"] == [0, 1] and a["verdict"] == "needs_review" for a in absences)


def test_absences_follow_the_latest_review(stored):
    with Session(get_engine(stored)) as s:
        assert len(s.exec(select(AbsenceRow)).all()) == 6
    # a re-review that finds a non-compete clause drops that absence; a repeat adds nothing
    present = [
        _cf("shall not compete", ClauseType.non_compete, Verdict.verified, "ok"),
        _cf("liability shall not exceed $6", ClauseType.cap_on_liability, Verdict.verified, "ok"),
    ]
    for _ in range(2):
        with unit_of_work(stored) as session:
            save_absences.fn(session, "run-2", SHA, "review-v1", "rules-v1", find_absences(present, [0, 1, 2]))
    with Session(get_engine(stored)) as s:
        rows = s.exec(select(AbsenceRow)).all()
    assert sorted(r.clause_type for r in rows) == sorted(
        ["governing_law", "uncapped_liability", "termination_for_convenience", "change_of_control", "exclusivity"]
    )
    assert all(r.chunk_count == 3 and r.run_id == "run-2" for r in rows)


def test_decisions_keep_history_latest_wins_and_repeat_is_idempotent(stored):
    item = next(i for i in queue_items(stored) if i["verdict"] == "contradicted")
    row, created = record_decision(stored, item["id"], "reject", "the cap is $6, not $5")
    assert created and row.seq == 1
    again, created_again = record_decision(stored, item["id"], "reject", "the cap is $6, not $5")
    assert not created_again and again.seq == 1
    later, _ = record_decision(stored, item["id"], "approve", None)
    assert later.seq == 2
    with Session(get_engine(stored)) as s:
        history = s.exec(select(ReviewerDecision).where(ReviewerDecision.target_key == item["key"])).all()
    assert [h.decision for h in sorted(history, key=lambda h: h.seq)] == ["reject", "approve"]
    latest = next(i for i in queue_items(stored) if i["id"] == item["id"])["decision"]
    assert latest["decision"] == "approve" and latest["seq"] == 2
    assert item["id"] not in {i["id"] for i in queue_items(stored, pending_only=True)}
    gold = gold_set(stored)
    assert [g["id"] for g in gold] == [item["id"]]
    assert [h["decision"] for h in gold[0]["history"]] == ["reject", "approve"]


def test_decisions_reject_bad_input(stored):
    with pytest.raises(ValueError):
        record_decision(stored, "1", "maybe")
    with pytest.raises(KeyError):
        record_decision(stored, "999999", "approve")
    with pytest.raises(KeyError):
        record_decision(stored, "A999999", "approve")
    with pytest.raises(KeyError):
        record_decision(stored, "finding-one", "approve")


def test_cli_queue_decide_and_gold(stored, tmp_path):
    from cli.app import app

    runner = CliRunner()
    absence = next(i for i in queue_items(stored) if i["kind"] == "absence")
    res = runner.invoke(app, ["decide", absence["id"], "approve", "--note", "no cap clause: confirmed", "--db", stored])
    assert res.exit_code == 0, res.output
    assert "Recorded approve" in res.output
    assert runner.invoke(app, ["decide", absence["id"], "perhaps", "--db", stored]).exit_code == 2
    assert runner.invoke(app, ["decide", "A999999", "approve", "--db", stored]).exit_code == 2
    listed = runner.invoke(app, ["queue", "--db", stored])
    assert listed.exit_code == 0 and "2 finding(s) and 6 absence(s)" in listed.output
    # A verified finding is not queued, but a reviewer may still reject it: the gold set keeps that too.
    from sqlmodel import Session, select

    from schemas.tables import FindingRow
    from tasks.store.persist import get_engine

    with Session(get_engine(stored)) as session:
        verified = session.exec(select(FindingRow).where(FindingRow.verdict == "verified")).one()
    assert (
        runner.invoke(app, ["decide", str(verified.id), "reject", "--note", "wrong clause", "--db", stored]).exit_code
        == 0
    )
    gold = tmp_path / "gold.json"
    assert runner.invoke(app, ["queue", "--db", stored, "--gold", str(gold)]).exit_code == 0
    data = {d["kind"]: d for d in json.loads(gold.read_text())}
    assert len(data) == 2 and data["absence"]["decision"]["note"] == "no cap clause: confirmed"
    assert data["finding"]["verdict"] == "verified" and data["finding"]["decision"]["decision"] == "reject"
    for bad, why in ((tmp_path, "is a folder"), (tmp_path / "no" / "g.json", "does not exist")):
        done = runner.invoke(app, ["queue", "--db", stored, "--gold", str(bad)])
        assert done.exit_code == 2 and why in done.output
    assert not (tmp_path / "no").exists()


pytestmark_flow = pytest.mark.usefixtures("prefect_harness")


@pytestmark_flow
def test_review_run_records_absences_metrics_and_decisions_in_the_report(tmp_path, db_url):
    from flows.review import review_documents
    from tasks.observe.report import build_report

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    try:
        result = review_documents(
            source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules"
        )
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        m = report["run"]["metrics"]
        assert {"unsupported", "contradicted", "needs_review"} <= set(m)
        findings = [f for d in report["documents"] for f in d["findings"]]
        for verdict in ("unsupported", "contradicted", "needs_review"):
            assert m[verdict] == sum(f["verdict"] == verdict for f in findings)
        # every finding stating a term carries the consistency check; none conflicts in the samples
        assert any(c["name"] == "consistency" for f in findings for c in f["checks"])
        assert not any(c["name"] == "consistency" and c["verdict"] != "verified" for f in findings for c in f["checks"])
        with Session(get_engine(db_url)) as s:
            absences = s.exec(select(AbsenceRow)).all()
            stored = {(r.sha256, r.clause_type) for r in s.exec(select(FindingRow)).all()}
        assert absences and all((a.sha256, a.clause_type) not in stored for a in absences)
        assert all(a.chunk_count == len(a.chunks) > 0 for a in absences)
        target = findings[0]
        assert "decision" not in target
        record_decision(db_url, str(target["id"]), "approve", "checked against the PDF")
        again = build_report(db_url, result["run_id"], offline=True)
        f = next(f for d in again["documents"] for f in d["findings"] if f["id"] == target["id"])
        assert f["decision"]["decision"] == "approve" and f["decision"]["note"] == "checked against the PDF"
    finally:
        dispose_engines()


def test_tables_written_to_a_pipe_are_wider_than_rich_default(monkeypatch):
    import io
    import sys

    from cli.common import PIPE_WIDTH, table_console

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert table_console().width == PIPE_WIDTH > 80
    monkeypatch.setenv("COLUMNS", "100")  # an explicit width still wins
    assert table_console().width == 100


def test_a_command_log_never_overwrites_its_own_output():
    from cli.common import log_beside

    assert log_beside(Path("eval-cuad.json")) == Path("eval-cuad.log")
    assert log_beside(Path("/tmp/x.log")) == Path("/tmp/x.log.prefect.log")


def test_decide_records_the_reviewer_the_os_user_by_default_and_a_reclassification(stored, monkeypatch):
    from cli.app import app

    monkeypatch.setenv("LOGNAME", "jdoe")  # getpass.getuser reads LOGNAME first
    runner = CliRunner()
    item = next(i for i in queue_items(stored) if i["verdict"] == "needs_review")  # an Agreement Date finding
    res = runner.invoke(app, ["decide", item["id"], "approve", "--db", stored])
    assert res.exit_code == 0, res.output
    assert "by jdoe (your OS user name; --reviewer names another)" in res.output
    res = runner.invoke(
        app, ["decide", item["id"], "reclassify", "--as", "Effective Date", "--db", stored, "--reviewer", "Ann Lee"]
    )
    assert res.exit_code == 0 and "Recorded reclassify as Effective Date" in res.output and "by Ann Lee" in res.output
    history = next(g for g in gold_set(stored) if g["id"] == item["id"])["history"]
    assert [(h["decision"], h["category"], h["reviewer"]) for h in history] == [
        ("approve", None, "jdoe"),
        ("reclassify", "effective_date", "Ann Lee"),
    ]
    # Refused, nothing written: no category, an unknown one, the finding's own, an absence, an empty name.
    absence = next(i for i in queue_items(stored) if i["kind"] == "absence")
    for args, why in (
        ([item["id"], "reclassify"], "needs the new category"),
        ([item["id"], "reclassify", "--as", "Nonsense"], "not a category"),
        ([item["id"], "reclassify", "--as", "agreement_date"], "already is Agreement Date"),
        ([absence["id"], "reclassify", "--as", "Non-Compete"], "only a finding"),
        ([item["id"], "approve", "--as", "Non-Compete"], "only reclassify takes a category"),
        ([item["id"], "approve", "--reviewer", " \t"], "--reviewer is empty"),
    ):
        res = runner.invoke(app, ["decide", *args, "--db", stored])
        assert res.exit_code == 2 and why in res.output, res.output
    assert len(next(g for g in gold_set(stored) if g["id"] == item["id"])["history"]) == 2
