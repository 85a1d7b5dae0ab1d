"""Documents in other forms through the whole run: a Word draft made from a real CUAD contract, reviewed
with paragraph locators, its tracked changes and comment in report.json and the HTML report, and the
cap's tracked change in the playbook result of a ``max_amount`` rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docreview_testing.docx_maker import make_contract_docx

CONTRACT = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.txt"

PLAYBOOK = """\
playbook: caps
rules:
  - id: cap-at-most-2m
    clause: cap_on_liability
    expect: max_amount
    value: "$2,000,000"
    severity: high
"""


@pytest.fixture(scope="module")
def reviewed_draft(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    root = tmp_path_factory.mktemp("draft")
    inbox = root / "inbox"
    inbox.mkdir()
    text = (shared_data / "cuad" / "txt" / CONTRACT).read_text(encoding="utf-8", errors="replace")
    make_contract_docx(text, inbox / "reseller-draft.docx", clause_headings=True)
    playbook = root / "playbook.yaml"
    playbook.write_text(PLAYBOOK)
    try:
        review_documents(
            source=str(inbox),
            out_dir=str(root / "out"),
            database_url=f"sqlite:///{root / 'r.db'}",
            backend="rules",
            playbook=str(playbook),
        )
    finally:
        dispose_engines()
    report = json.loads((root / "out" / "report.json").read_text())
    html = (root / "out" / "report.html").read_text()
    return report, html, root


def test_a_word_draft_is_reviewed_with_paragraph_locators(reviewed_draft):
    report, _, _ = reviewed_draft
    (doc,) = report["documents"]
    assert doc["status"] == "reviewed" and doc["kind"] == "docx"
    assert doc["findings"]
    for f in doc["findings"]:
        assert "page" not in f["locator"]  # a DOCX has no pages: none is invented
        assert "paragraph" in f["locator"] or f["locator"].startswith("§ ")
    assert any(f["locator"].startswith("§ ") for f in doc["findings"])


def test_tracked_changes_and_the_comment_reach_report_json_and_html(reviewed_draft):
    report, html, _ = reviewed_draft
    (doc,) = report["documents"]
    kinds = sorted(c["kind"] for c in doc["redline"])
    assert kinds == ["insertion", "replacement"]
    cap = next(c for c in doc["redline"] if c["kind"] == "replacement")
    assert (cap["before"], cap["after"], cap["author"]) == ("$1,000,000", "$5,000,000", "J. Smith")
    assert cap["note"] == "the redline replaces '$1,000,000' with '$5,000,000' (J. Smith, 2026-03-14)"
    (comment,) = doc["comments"]
    assert comment["author"] == "A. Reviewer" and "60-day cure period" in comment["text"] and comment["anchor"]
    assert "Redline: 2 tracked change(s), 1 comment(s)" in html
    assert "the redline replaces &#39;$1,000,000&#39; with &#39;$5,000,000&#39;" in html
    assert "60-day cure period" in html
    assert "Word document" in html and "(no pages)" in html


def test_the_cap_change_reaches_the_max_amount_rule(reviewed_draft):
    report, _, _ = reviewed_draft
    (doc,) = report["documents"]
    (rule,) = doc["playbook"]
    assert rule["rule"] == "cap-at-most-2m"
    cap_findings = [f for f in doc["findings"] if f["id"] in rule["finding_ids"]]
    assert any("$5,000,000" in f["evidence"] for f in cap_findings), rule
    assert "the redline replaces '$1,000,000' with '$5,000,000' (J. Smith, 2026-03-14)" in rule["reason"]
    assert rule["status"] == "deviation"  # $5,000,000 is over the $2,000,000 limit
    assert rule["reason"].startswith("$5,000,000 (§ 4. WARRANTY AND LIABILITY")
