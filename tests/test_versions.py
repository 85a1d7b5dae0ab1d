"""What changed since the last version of a contract (tasks/observe/versions.py): a counter-party's
second draft with a lower liability cap is linked to the first by title and parties, and the report
shows the cap reworded ($2,000,000 → $500,000) and the playbook moving from pass to deviation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tasks.observe.versions import compare_clauses, parties_key, playbook_moves, title_key

pytestmark = pytest.mark.usefixtures("prefect_harness")

PLAYBOOK = """playbook: cap-floor
rules:
  - {id: cap-at-least-1m, clause: cap_on_liability, expect: min_amount, value: "USD 1,000,000", severity: high}
  - {id: governing-law, clause: governing_law, expect: present, severity: low}
"""


def test_keys_and_clause_comparison_rules():
    assert title_key("Supply  Agreement.") == "SUPPLY AGREEMENT"
    assert parties_key(["Quantum Ledger, Inc.", "juniper data systems LLC"]) == "JUNIPER DATA SYSTEMS|QUANTUM LEDGER"
    assert parties_key(["JUNIPER DATA SYSTEMS, LLC", "Quantum Ledger Inc"]) == "JUNIPER DATA SYSTEMS|QUANTUM LEDGER"

    def f(fid: int, cat: str, text: str) -> dict:
        return dict(id=fid, clause_type=cat, clause_label=cat.title(), evidence=text, locator="page 1")

    before = [
        f(1, "cap", "liability shall not exceed $2,000,000."),
        f(2, "law", "governed by New York law"),
        f(3, "audit", "may audit once a year"),
    ]
    after = [
        f(11, "cap", "liability shall not exceed $500,000."),
        f(12, "law", "governed by New York law"),
        f(13, "noncompete", "shall not compete"),
    ]
    changes = {(c["clause_label"], c["kind"]): c for c in compare_clauses(before, after)}
    assert set(changes) == {("Cap", "reworded"), ("Audit", "removed"), ("Noncompete", "added")}
    assert changes[("Cap", "reworded")]["values"] == [{"kind": "money", "before": "$2,000,000", "after": "$500,000"}]
    moves = playbook_moves(
        [dict(rule="cap", status="pass"), dict(rule="law", status="pass")],
        [dict(rule="cap", status="deviation", reason="r"), dict(rule="law", status="pass")],
    )
    assert [(m["rule"], m["before"], m["after"]) for m in moves] == [("cap", "pass", "deviation")]


def test_a_second_version_with_a_changed_cap_shows_the_change_and_the_playbook_moving(tmp_path, db_url):
    from cli.app import app
    from docreview_testing.samples import generate_revision
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    # the software license agreement (sample 3), first drafted with a $2,000,000 cap, then sent back at $500,000
    first = generate_revision(tmp_path / "v1", 2, count=4, cap="$2,000,000", suffix="")
    second = generate_revision(tmp_path / "v2", 2, count=4, cap="$500,000")
    assert (first.liability_cap, second.liability_cap) == ("$2,000,000", "$500,000")
    assert first.title == second.title and first.parties == second.parties
    playbook = tmp_path / "playbook.yaml"
    playbook.write_text(PLAYBOOK)
    kw = dict(out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules", playbook=str(playbook))
    try:
        review_documents(source=str(tmp_path / "v1"), **kw)
        v1 = json.loads((tmp_path / "out" / "report.json").read_text())["documents"][0]
        review_documents(source=str(tmp_path / "v2"), **kw)
        v2 = json.loads((tmp_path / "out" / "report.json").read_text())["documents"][0]
    finally:
        dispose_engines()
    assert "version" not in v1  # nothing earlier with its title and parties
    assert {r["rule"]: r["status"] for r in v1["playbook"]}["cap-at-least-1m"] == "pass"
    version = v2["version"]
    assert version["previous"] == {"sha256": v1["sha256"], "file_name": first.file_name}
    assert version["linked_by"] == "title and parties"
    cap = [c for c in version["changes"] if c["category"] == "cap_on_liability"]
    assert [c["kind"] for c in cap] == ["reworded"]
    assert {"kind": "money", "before": "$2,000,000", "after": "$500,000"} in cap[0]["values"]
    assert not [c for c in version["changes"] if c["category"] == "governing_law"]  # unchanged clauses are not listed
    moves = {m["rule"]: m for m in version["playbook_moves"]}
    assert (moves["cap-at-least-1m"]["before"], moves["cap-at-least-1m"]["after"]) == ("pass", "deviation")
    html = (tmp_path / "out" / "report.html").read_text()
    assert f"Changes since the previous version, {first.file_name}" in html
    assert "pass → <b>deviation</b>" in html and "$2,000,000 → <b>$500,000</b>" in html
    # --previous must name a reviewed document, and SOURCE must be one file (refused before any work).
    runner = CliRunner()
    res = runner.invoke(app, ["review", str(tmp_path / "v2"), "--previous", "0" * 64, "--db", db_url])
    assert res.exit_code == 2 and "give SOURCE as one file" in res.output
    v2_file = tmp_path / "v2" / second.file_name
    res = runner.invoke(
        app, ["review", str(v2_file), "--previous", "1" * 64, "--db", db_url, "--out", str(tmp_path / "o2")]
    )
    assert res.exit_code == 2 and "was never reviewed" in res.output
    dispose_engines()


def test_a_named_previous_version_links_documents_with_other_titles(tmp_path, db_url):
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    made = generate_samples(tmp_path / "all", count=2)
    for name, folder in ((made[0].file_name, "a"), (made[1].file_name, "b")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_bytes((tmp_path / "all" / name).read_bytes())
    try:
        a = review_documents(
            source=str(tmp_path / "a"), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules"
        )
        sha_a = json.loads((tmp_path / "out" / "report.json").read_text())["documents"][0]["sha256"]
        review_documents(
            source=str(tmp_path / "b" / made[1].file_name),
            out_dir=str(tmp_path / "out"),
            database_url=db_url,
            backend="rules",
            previous=sha_a,
        )
        b = json.loads((tmp_path / "out" / "report.json").read_text())["documents"][0]
    finally:
        dispose_engines()
    assert a["run_id"] and b["version"]["linked_by"] == "named" and b["version"]["previous"]["sha256"] == sha_a
    assert {c["kind"] for c in b["version"]["changes"]} >= {"reworded"}  # another contract: clauses differ
    assert Path(tmp_path / "out" / "report.html").read_text().count("Changes since the previous version") == 1


def test_a_previous_version_that_was_not_reviewed_is_refused_naming_its_status(tmp_path, db_url):
    """A file ingested earlier that ended failed (here plain text: not a supported document) is in the
    database, but it is no version to compare with: --previous naming it ends with exit 2, saying why."""
    from cli.app import app
    from docreview_testing.samples import generate_revision
    from flows.pipeline import NothingReviewed
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    notes = tmp_path / "random.txt"
    notes.write_text("Meeting notes: call the counter-party about the cap.\n")
    second = generate_revision(tmp_path / "v2", 2, count=4, cap="$500,000")
    try:
        with pytest.raises(NothingReviewed, match="1 of 1 failed"):
            review_documents(source=str(notes), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    res = CliRunner().invoke(
        app,
        ["review", str(tmp_path / "v2" / second.file_name), "--previous", str(notes), "--db", db_url]
        + ["--out", str(tmp_path / "o2"), "--backend", "rules"],
    )
    dispose_engines()
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert f"--previous {notes} was not reviewed (failed: not a supported document" in said
    assert "name a reviewed version" in said
    assert not (tmp_path / "o2").exists()  # refused before any work


def test_a_previous_version_that_is_the_document_itself_is_refused(tmp_path, db_url):
    """--previous naming the same bytes as SOURCE links nothing: exit 2, before any work (it was ignored)."""
    from cli.app import app
    from docreview_testing.samples import generate_samples

    (sample,) = generate_samples(tmp_path / "inbox", count=1)
    same = tmp_path / "copy.pdf"
    same.write_bytes((tmp_path / "inbox" / sample.file_name).read_bytes())
    res = CliRunner().invoke(
        app,
        ["review", str(tmp_path / "inbox" / sample.file_name), "--previous", str(same), "--db", db_url]
        + ["--out", str(tmp_path / "out"), "--backend", "rules"],
    )
    assert res.exit_code == 2 and "is the same document as" in " ".join(res.output.split()), res.output
    assert not (tmp_path / "out").exists()
