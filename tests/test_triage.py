"""The reviewer's first screen: triage order, absences that alarm only where they should, ids in
reasons that the report shows, and the liability cap in the key terms (issue 33, item 4)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from schemas.taxonomy import ClauseType
from tasks.check.absences import ABSENCE_CATEGORIES, ABSENCE_POLICY, absence_policy
from tasks.observe.report import (
    absence_alarms,
    attention_rows,
    cap_terms,
    cite_finding_ids,
    key_terms,
    needs_attention,
    render_html,
    triage,
    triage_why,
    wanted_absent,
)


def finding(fid: int, clause: str, risk: str, verdict: str, page: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "id": fid,
        "clause_type": clause,
        "clause_label": clause.replace("_", " ").title(),
        "summary": f"{clause} on page {page}",
        "risk": risk,
        "verdict": verdict,
        "evidence": "quote",
        "page": page,
        "locator": f"page {page}",
        "values": {},
        "checks": [],
        "chunk_index": 0,
        **extra,
    }


PLAYBOOK = [
    {"rule": "governing-law", "clause": "governing_law", "expect": "allowed_values", "status": "deviation",
     "severity": "medium", "finding_ids": [5]},
    {"rule": "no-uncapped-liability", "clause": "uncapped_liability", "expect": "absent", "status": "deviation",
     "severity": "high", "finding_ids": [6]},
    {"rule": "liability-cap", "clause": "cap_on_liability", "expect": "present", "status": "pass",
     "severity": "high", "finding_ids": [3]},
]  # fmt: skip


def sample_findings() -> list[dict[str, Any]]:
    return [
        finding(1, "renewal_term", "low", "needs_review", page=1),
        finding(2, "insurance", "medium", "needs_review", page=2),
        finding(3, "cap_on_liability", "high", "verified", page=3),
        finding(4, "audit_rights", "low", "verified", page=4),
        finding(5, "governing_law", "low", "verified", page=5),
        finding(6, "uncapped_liability", "high", "verified", page=3),
        finding(7, "change_of_control", "high", "needs_review", page=4),
        finding(8, "expiration_date", "medium", "contradicted", page=6),
        finding(9, "license_grant", "medium", "needs_review", page=1),
    ]


def test_a_documents_findings_follow_a_reviewers_order():
    ordered = triage(sample_findings(), PLAYBOOK)
    # deviations by severity (high before medium), verified high-risk terms, then what needs a decision
    # by risk (contradicted before needs review within one risk), then the rest
    assert [f["id"] for f in ordered] == [6, 5, 3, 7, 8, 9, 2, 1, 4]
    assert [f["triage"] for f in ordered] == ["deviation"] * 2 + ["must_know"] + ["decide"] * 5 + ["other"]
    assert ordered[0]["deviations"] == [
        {"rule": "no-uncapped-liability", "severity": "high", "clause": "uncapped_liability"}
    ]
    # a verified high-risk clause no longer sits below a low-risk needs_review row
    assert [f["id"] for f in ordered].index(3) < [f["id"] for f in ordered].index(1)


def test_a_verified_low_risk_finding_a_deviation_rests_on_is_to_look_at():
    ordered = {f["id"]: f for f in triage(sample_findings(), PLAYBOOK)}
    assert needs_attention(ordered[5])  # the governing-law deviation's finding: low risk, verified
    assert not needs_attention(ordered[4])  # low risk, verified, no deviation
    decided = dict(ordered[5], decision={"decision": "approve", "note": None, "decided_at": None})
    assert not needs_attention(decided)


def test_the_attention_list_orders_across_documents_by_tier_first():
    first = triage(sample_findings(), PLAYBOOK)
    second = triage(
        [finding(21, "non_compete", "high", "verified", page=2), finding(22, "renewal_term", "low", "unsupported")],
        [],
    )
    report = {"documents": [{"file_name": "b.pdf", "findings": first}, {"file_name": "a.pdf", "findings": second}]}
    rows = attention_rows(report, limit=None)
    assert [r["id"] for r in rows] == [6, 5, 21, 3, 7, 8, 9, 2, 22, 1]  # by document within a tier and risk
    assert rows[0]["why"] == "deviation: no-uncapped-liability (high)"
    assert rows[2]["why"] == "high risk, verified: a term to know" and rows[2]["triage"] == "must_know"
    assert rows[4]["why"] == "needs review (high risk): decide"
    assert 4 not in [r["id"] for r in rows]


def _dismissed(fid: int, clause: str, risk: str = "high", **extra: Any) -> dict[str, Any]:
    from tasks.check.support import DISMISSED_REASON

    checks = [
        {"name": "grounding", "verdict": "verified", "reason": "found"},
        {
            "name": "support",
            "verdict": "needs_review",
            "reason": f"{DISMISSED_REASON}quote reads as no CUAD clause, not Insurance (support 0.00)",
        },
    ]
    return finding(fid, clause, risk, "needs_review", checks=checks, **extra)


def test_a_finding_the_fact_check_dismissed_is_listed_last_and_not_to_look_at():
    from tasks.observe.report import fact_check_dismissed, finding_counts

    gone = _dismissed(10, "insurance")
    doubted = finding(
        11, "insurance", "low", "needs_review", checks=[dict(gone["checks"][1], reason="quote reads as X")]
    )
    also_values = _dismissed(12, "insurance")  # a redaction mark on its page: not the clause, no decision
    also_values["checks"].append({"name": "redaction", "verdict": "needs_review", "reason": "value redacted"})
    contradicted = dict(_dismissed(14, "insurance"), verdict="contradicted")  # a check contradicts it: to decide
    contradicted["checks"].append({"name": "values", "verdict": "contradicted", "reason": "not in the quote"})
    ordered = triage([gone, doubted, also_values, contradicted, *sample_findings()], PLAYBOOK)
    assert [f["id"] for f in ordered[-2:]] == [10, 12] and ordered[-1]["triage"] == "dismissed"  # listed last
    assert fact_check_dismissed(gone) and fact_check_dismissed(also_values)
    assert not fact_check_dismissed(doubted) and not fact_check_dismissed(contradicted)
    assert not needs_attention(gone) and needs_attention(doubted) and not needs_attention(also_values)
    assert needs_attention(contradicted)
    report = {"documents": [{"file_name": "a.pdf", "findings": ordered}]}
    assert 10 not in [r["id"] for r in attention_rows(report, limit=None)]
    counts = finding_counts(ordered)
    assert counts["dismissed"] == 2 and counts["needs_review"] == 7  # still counted by its verdict
    # a reviewer who approves a dismissed finding takes it out of the dismissed ones (report.json too)
    approved = triage([dict(_dismissed(15, "insurance"), decision={"decision": "approve"})], [])[0]
    assert approved["triage"] == "decide" and not needs_attention(approved)
    # a playbook deviation resting on it keeps it on the first screen
    resting = triage([_dismissed(13, "uncapped_liability")], [dict(PLAYBOOK[1], finding_ids=[13])])
    assert resting[0]["triage"] == "deviation" and needs_attention(resting[0])


# --- absences ------------------------------------------------------------------------------------


def test_every_absence_category_states_whether_it_alarms_and_why():
    assert set(ABSENCE_CATEGORIES) == set(ABSENCE_POLICY)
    alarms = {c for c, p in ABSENCE_POLICY.items() if p.alarm}
    assert alarms == {ClauseType.cap_on_liability, ClauseType.governing_law}
    assert "uncapped" in absence_policy("cap_on_liability").why
    assert "forum" in absence_policy("governing_law").why
    assert not absence_policy(ClauseType.exclusivity).alarm  # no exclusivity: usually the favourable position
    assert all(p.why for p in ABSENCE_POLICY.values())
    assert not absence_policy("insurance").alarm  # not looked for: information
    with pytest.raises(ValueError):
        absence_policy("no_such_category")


def absences_doc(playbook: list[dict[str, Any]], *clauses: str) -> dict[str, Any]:
    return {
        "playbook": playbook,
        "absences": [
            {"id": f"A{i}", "clause_type": c, "clause_label": c, "reason": "no finding", "chunks_examined": 3}
            for i, c in enumerate(clauses, 1)
        ],
    }


def test_absences_alarm_only_where_they_should():
    rules = [
        {"rule": "no-non-compete", "clause": "non_compete", "expect": "absent", "status": "pass",
         "severity": "medium", "finding_ids": []},
        {"rule": "exit", "clause": "termination_for_convenience", "expect": "present", "status": "deviation",
         "severity": "high", "finding_ids": []},
    ]  # fmt: skip
    doc = absences_doc(
        rules, "exclusivity", "non_compete", "termination_for_convenience", "cap_on_liability", "change_of_control"
    )
    wanted_absent(doc)
    absence_alarms(doc)
    got = {a["clause_type"]: a for a in doc["absences"]}
    assert not got["exclusivity"]["alarm"] and "favourable" in got["exclusivity"]["why"]
    assert not got["non_compete"]["alarm"] and got["non_compete"]["wanted_by"] == "no-non-compete"
    assert got["termination_for_convenience"]["alarm"] and got["termination_for_convenience"]["expected_by"] == "exit"
    assert "playbook rule exit (high) expects it" in got["termination_for_convenience"]["why"]
    assert got["cap_on_liability"]["alarm"] and "uncapped" in got["cap_on_liability"]["why"]
    assert not got["change_of_control"]["alarm"]
    assert [a["id"] for a in doc["absences"]] == ["A1", "A2", "A3", "A4", "A5"]  # decide A<n> unchanged


def test_the_html_lists_information_absences_apart_from_the_alarms():
    doc = absences_doc([], "exclusivity", "cap_on_liability")
    absence_alarms(doc)
    report = {
        "run": {
            "id": "r" * 32,
            "source": "in",
            "backend": "rules",
            "model": "rules-v1",
            "offline": True,
            "endpoint": None,
            "playbook": None,
            "started_at": None,
            "finished_at": None,
            "metrics": {},
        },
        "documents": [
            dict(
                doc,
                file_name="a.pdf",
                status="reviewed",
                sha256="0" * 64,
                pages=3,
                reason=None,
                findings=[],
                counts={},
                key_terms={},
                flags=[],
                checks=[],
                page_flags=[],
            )
        ],
    }
    html = render_html(report)
    assert "Dismissed by the fact-check" not in html  # none dismissed: no such section
    missing = html.split("Missing high-risk clauses", 1)[1].split("</table>", 1)[0]
    assert "<code>A2</code>" in missing and "uncapped" in missing
    assert "<code>A1</code>" not in missing  # exclusivity: information, not an alarm
    info = html.split("Not found, for information", 1)[1].split("</table>", 1)[0]
    assert "<code>A1</code>" in info and "favourable" in info
    assert "Not found (information):</b> exclusivity (<code>A1</code>)" in html
    report["documents"][0]["findings"] = triage([_dismissed(10, "insurance")], [])
    html = render_html(report)
    dismissed = html.split("Dismissed by the fact-check (1)", 1)[1].split("</table>", 1)[0]
    assert "<code>10</code>" in dismissed and "not Insurance" in dismissed  # with the support check's reason
    assert 'id="f-10"' in html and "Findings to look at" not in html  # still in the document's findings


# --- ids in reasons -------------------------------------------------------------------------------


def test_a_reason_cites_the_id_the_report_shows():
    reason = 'liability cap "$1,000,000" conflicts with \'$5,000,000\' in finding d5c85053c137 (cap_on_liability finding on page 4 ("…"))'
    assert cite_finding_ids(reason, {"d5c85053c137": 42}).endswith(
        'in finding 42 (cap_on_liability finding on page 4 ("…"))'
    )
    assert "a finding not in this report (" in cite_finding_ids(reason, {})
    assert cite_finding_ids("no other finding stated it", {}) == "no other finding stated it"


def test_a_consistency_conflict_in_a_review_cites_report_ids(db_url):
    """Two findings that state different liability caps: each reason names the other by the id the
    report shows (and ``docreview decide`` takes), linked to its row in the HTML."""
    from schemas.findings import CheckedFinding, CheckResult, Finding, FindingValue, Verdict
    from tasks.check.consistency import check_consistency
    from tasks.observe.report import build_report
    from tasks.store.persist import dispose_engines, save_findings, unit_of_work

    def cf(quote: str, amount: str, page: int) -> CheckedFinding:
        found = Finding(
            clause_type=ClauseType.cap_on_liability,
            summary="cap",
            risk="high",
            evidence=quote,
            page=page,
            values=[FindingValue(name="amount", value=amount)],
        )
        grounded = CheckResult(name="grounding", verdict=Verdict.verified, reason="found")
        return CheckedFinding(
            finding=found, chunk_index=0, ordinal=page, stated_page=page, verdict=Verdict.verified, checks=[grounded]
        )

    sha = "c" * 64
    checked = [
        cf("The aggregate liability of either party shall not exceed $1,000,000.", "$1,000,000", 1),
        cf("In no event shall the total liability of Supplier exceed $5,000,000.", "$5,000,000", 2),
    ]
    checked = check_consistency.fn(checked, None, sha, "review-v1", "rules-v1")
    stated = [c.reason for x in checked for c in x.checks if c.name == "consistency"]
    assert len(stated) == 2 and all(re.search(r"finding [0-9a-f]{12}", r) for r in stated)  # a key, no id yet
    with unit_of_work(db_url) as session:
        save_findings.fn(session, "run-1", sha, "rules", "rules-v1", "review-v1", checked)
    _run(db_url, sha)
    report = build_report(db_url, "run-1", offline=True)
    dispose_engines()
    doc = report["documents"][0]
    ids = {f["id"] for f in doc["findings"]}
    assert len(ids) == 2
    for f in doc["findings"]:
        reason = next(c["reason"] for c in f["checks"] if c["name"] == "consistency")
        cited = {int(i) for i in re.findall(r"finding (\d+)", reason)}
        assert cited == ids - {f["id"]}, reason
        assert not re.search(r"[0-9a-f]{12}", reason), reason
    html = render_html(report)
    for i in ids:
        assert f'<a href="#f-{i}">finding {i}</a>' in html and f'<tr id="f-{i}"' in html


def _run(db_url: str, sha: str) -> None:
    """A finished run ``run-1`` that reviewed one document ``sha``."""
    from datetime import UTC, datetime

    from sqlmodel import Session

    from schemas.tables import RunDocumentRow, RunRow
    from tasks.store.persist import get_engine

    with Session(get_engine(db_url)) as s:
        s.add(RunRow(id="run-1", source="in", backend="rules", model="rules-v1", prompt_version="review-v1",
                     finished_at=datetime.now(UTC), status="finished"))  # fmt: skip
        s.add(RunDocumentRow(run_id="run-1", source="in/a.pdf", file_name="a.pdf", sha256=sha, status="reviewed",
                             pages=2))  # fmt: skip
        s.commit()


# --- key terms -------------------------------------------------------------------------------------


def cap(fid: int, amount: str, support: str, page: int, **extra: Any) -> dict[str, Any]:
    checks = [
        {"name": "grounding", "verdict": "verified"},
        {"name": "support", "verdict": support},
        {"name": "values", "verdict": "verified"},
    ]
    verdict = "verified" if support == "verified" else "needs_review"
    return finding(
        fid, "cap_on_liability", "high", verdict, page=page, values={"amount": amount}, checks=checks, **extra
    )


def test_the_key_terms_carry_the_cap_amount_and_its_locator():
    assert key_terms([cap(3, "$500,000", "verified", 3)])["Liability cap"] == ["$500,000 (page 3)"]
    # the cap the support check doubts still shows, marked, after a confirmed one
    got = cap_terms([cap(7, "$1,000,000", "needs_review", 4), cap(8, "$2,000,000", "verified", 5)])
    assert got == ["$2,000,000 (page 5)", "$1,000,000 (page 4; finding 7 needs review)"]
    # a DOCX locator, a reviewer's approval, a rejection, a values check that doubts the amount
    docx = cap(9, "$250,000", "needs_review", 12, decision={"decision": "approve"})
    docx["locator"] = "§ 7.2 Limitation of Liability, paragraph 12"
    assert cap_terms([docx]) == ["$250,000 (§ 7.2 Limitation of Liability, paragraph 12)"]
    assert cap_terms([cap(10, "$1", "verified", 2, decision={"decision": "reject"})]) == []
    doubted = cap(11, "$3", "verified", 2)
    doubted["checks"][2]["verdict"] = "contradicted"
    assert cap_terms([doubted]) == []
    # the same amount stated twice shows once, confirmed first
    assert cap_terms([cap(12, "$1,000,000", "needs_review", 4), cap(13, "$1,000,000", "verified", 6)]) == [
        "$1,000,000 (page 6)"
    ]


def _doubted(fid: int, clause: str, score: float | None, page: int = 1, **extra: Any) -> dict[str, Any]:
    """A needs_review finding whose support check states ``score`` (None: the model cannot judge it)."""
    reason = (
        f"quote reads as no CUAD clause, not {clause} (support {score:.2f})"
        if score is not None
        else "not a heading, not negated; the support model covers CUAD clause categories, not this one"
    )
    checks = [{"name": "support", "verdict": "needs_review", "reason": reason}]
    return finding(fid, clause, "medium", "needs_review", page=page, checks=checks, **extra)


def test_one_question_per_category_reaches_the_first_screen():
    from tasks.observe.report import FIRST_SCREEN_SUPPORT, finding_counts

    weak = FIRST_SCREEN_SUPPORT / 2
    ordered = triage(
        [
            finding(30, "insurance", "medium", "verified", page=2),
            _doubted(31, "insurance", 0.40, page=5),  # the category is already shown by finding 30
            _doubted(32, "audit_rights", 0.07, page=3),
            _doubted(33, "audit_rights", 0.31, page=9),  # the strongest passage of its category
            _doubted(34, "exclusivity", weak, page=4),  # the strongest, but most likely no such clause
            _doubted(35, "post_termination_services", None, page=6),  # the model cannot judge: stays
            _doubted(36, "post_termination_services", 0.90, page=7),
            dict(_doubted(37, "audit_rights", 0.01, page=8), verdict="contradicted"),  # contradicted: stays
        ],
        [],
    )
    by = {f["id"]: f for f in ordered}
    assert sorted(i for i in by if needs_attention(by[i])) == [33, 35, 37]
    assert by[31]["secondary"] == "another passage of Insurance, which finding 30 shows"
    assert by[32]["secondary"] == "finding 33 is the stronger passage of Audit Rights (support 0.31 against 0.07)"
    assert by[34]["secondary"].startswith("the strongest passage of Exclusivity here, and the support model barely")
    assert "(support 0.03, below 0.05)" in by[34]["secondary"]
    assert by[36]["secondary"] == "finding 35 is the stronger passage of Post Termination Services"
    assert "secondary" not in by[33] and "secondary" not in by[37]
    assert {by[i]["triage"] for i in (31, 32, 34, 36)} == {"secondary"}
    # listed last (nothing here is dismissed), by page; counted apart
    assert [f["id"] for f in ordered][-4:] == [32, 34, 31, 36]
    assert finding_counts(ordered)["secondary"] == 4
    report = {"documents": [{"file_name": "a.pdf", "findings": ordered}]}
    assert [r["id"] for r in attention_rows(report, limit=None)] == [37, 35, 33]  # contradicted, then by page


def test_a_decision_changes_which_passage_puts_the_question():
    approve = {"decision": "approve", "note": None, "decided_at": None}
    reject = dict(approve, decision="reject")
    # the reviewer rejected the strongest passage: the next one puts the question
    ordered = {
        f["id"]: f
        for f in triage([_doubted(40, "insurance", 0.5, decision=reject), _doubted(41, "insurance", 0.2)], [])
    }
    assert "secondary" not in ordered[41] and needs_attention(ordered[41])
    # an approved passage shows the category present; a rejected verified one does not
    ordered = {
        f["id"]: f
        for f in triage([_doubted(42, "insurance", 0.5, decision=approve), _doubted(43, "insurance", 0.2)], [])
    }
    assert ordered[43]["secondary"] == "another passage of Insurance, which finding 42 shows"
    rejected = finding(44, "insurance", "medium", "verified", decision=reject)
    ordered = {f["id"]: f for f in triage([rejected, _doubted(45, "insurance", 0.2)], [])}
    assert "secondary" not in ordered[45]
    # re-triage after a change forgets the old mark
    again = {f["id"]: f for f in triage([dict(ordered[45])], [])}
    assert "secondary" not in again[45]


def test_the_report_says_how_many_passages_are_not_on_the_first_screen():
    ordered = triage([finding(30, "insurance", "medium", "verified"), _doubted(31, "insurance", 0.4, page=5)], [])
    run = {"id": "r" * 32, "source": "in", "backend": "rules", "model": "rules-v1", "offline": True}
    run |= {"endpoint": None, "playbook": None, "started_at": None, "finished_at": None, "metrics": {}}
    doc = absences_doc([])
    doc |= {"file_name": "a.pdf", "status": "reviewed", "sha256": "0" * 64, "pages": 3, "reason": None}
    doc |= {"findings": ordered, "counts": {}, "key_terms": {}, "flags": [], "checks": [], "page_flags": []}
    html = render_html({"run": run, "documents": [doc]})
    assert "1 more passage(s) the fact-check could not confirm are listed under their documents" in html
    # … with each document that has them, linked, and how many
    assert re.search(
        r'could not confirm are listed under their documents.*<a href="#doc-[^"]+">a\.pdf</a> \(1\)\.</p>', html
    )
    assert 'Not on the first screen: another passage of Insurance, which <a href="#f-30">finding 30</a> shows.' in html


def test_the_evaluation_counts_what_reaches_the_first_screen_against_the_labels():
    from flows.eval import TriageTally, tally_triage

    span = "Licensee shall maintain insurance coverage of not less than one million dollars at all times"
    audit = "Licensor may audit the books and records of Licensee once each calendar year on notice"
    findings = triage(
        [
            finding(1, "insurance", "medium", "verified", evidence=span),
            dict(_doubted(2, "insurance", 0.4), evidence="an unrelated sentence about the parties to it"),
            dict(_doubted(3, "audit_rights", 0.01), evidence=audit),  # real, but below the first screen
            dict(_doubted(4, "exclusivity", 0.5), evidence="no exclusive rights are granted to anyone here"),
        ],
        [],
    )
    tally = TriageTally()
    tally_triage(findings, {ClauseType.insurance: [span], ClauseType.audit_rights: [audit]}, tally)
    scores = tally.scores()
    assert (tally.to_look_at, tally.to_look_at_real) == (1, 0)  # only the exclusivity question, not real
    assert scores["to_look_at_per_contract"] == 1.0 and scores["to_look_at_precision"] == 0.0
    assert (tally.categories_found, tally.categories_shown) == (2, 1)  # the audit clause is off the first screen
    assert scores["labelled_categories_shown"] == 0.5


def test_a_passage_the_model_reads_as_a_category_nothing_else_shows_stays_on_the_first_screen():
    def reads_as(fid: int, clause: str, other: str, page: int) -> dict[str, Any]:
        checks = [
            {"name": "support", "verdict": "needs_review", "reason": f"quote reads as {other}, not X (support 0.02)"}
        ]
        return finding(fid, clause, "medium", "needs_review", page=page, checks=checks)

    ordered = triage(
        [
            finding(50, "effective_date", "medium", "verified", page=1),
            reads_as(51, "effective_date", "Expiration Date", page=2),  # no Expiration Date finding anywhere
            reads_as(52, "agreement_date", "Expiration Date", page=3),  # that category is already asked
            reads_as(53, "effective_date", "Insurance", page=4),
            finding(54, "insurance", "medium", "verified", page=5),  # shows Insurance present
        ],
        [],
    )
    by = {f["id"]: f for f in ordered}
    assert needs_attention(by[51]) and by[51]["reads_as"] == "Expiration Date" and "secondary" not in by[51]
    assert by[52]["triage"] == "secondary" and "reads_as" not in by[52]  # Expiration Date is asked by 51
    assert by[53]["triage"] == "secondary" and "reads_as" not in by[53]
    report = {"documents": [{"file_name": "a.pdf", "findings": ordered}]}
    why = {r["id"]: r["why"] for r in attention_rows(report, limit=None)}
    assert why[51] == "needs review (medium risk): reads as Expiration Date, which nothing else here shows: decide"


def test_a_deviation_read_in_a_finding_of_another_category_says_so():
    """A no-non-compete deviation resting on a passage claimed as License Grant (the playbook read it as
    Non-Compete): the first screen says what it was read as, and Non-Compete is not "not found"."""
    results = [
        {
            "rule": "no-non-compete",
            "clause": "non_compete",
            "expect": "absent",
            "status": "deviation",
            "severity": "medium",
            "finding_ids": [6],
        }
    ]
    ordered = triage(
        [finding(6, "license_grant", "low", "needs_review"), finding(7, "insurance", "low", "verified")], results
    )
    by_id = {f["id"]: f for f in ordered}
    assert triage_why(by_id[6]) == "deviation: no-non-compete (medium), reading it as Non-Compete"
    assert by_id[6]["deviations"] == [{"rule": "no-non-compete", "severity": "medium", "clause": "non_compete"}]
    # a deviation on the finding's own category says nothing more
    own = [dict(results[0], finding_ids=[8])]
    assert (
        triage_why(triage([finding(8, "non_compete", "high", "verified")], own)[0])
        == "deviation: no-non-compete (medium)"
    )

    doc = absences_doc(results, "non_compete", "cap_on_liability")
    absence_alarms(doc)
    non_compete, cap = doc["absences"]
    assert non_compete["alarm"] is False
    assert (
        non_compete["why"]
        == "no finding claims it, but the playbook rule no-non-compete reads it in finding(s) 6 (deviation)"
    )
    assert cap["alarm"] is True  # no cap found, none read: still the alarm its absence is
