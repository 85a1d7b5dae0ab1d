"""Reclassify: a reviewer's "this is a Non-Compete, not an Expiration Date" moves the finding in the
key terms, the per-category counts, the playbook and the next run's report (tasks/observe/report.py
reclassify, tasks/check/playbook.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.check.playbook import evaluate_document, load_playbook
from tasks.observe.report import category_counts, key_terms, reclassify

PLAYBOOK = """playbook: licensor-positions
rules:
  - {id: non-compete-required, clause: non_compete, expect: present, severity: high}
  - {id: liability-cap, clause: cap_on_liability, expect: present, severity: high}
"""


def _finding(fid: int, clause: str, evidence: str, values: dict, support: str = "verified", decision=None) -> dict:
    from tasks.observe.report import finding_label

    f = dict(
        id=fid,
        clause_type=clause,
        clause_label=finding_label(clause),
        verdict="needs_review" if support != "verified" else "verified",
        risk="medium",
        evidence=evidence,
        page=3,
        locator="page 3",
        values=values,
        checks=[
            dict(name="grounding", verdict="verified", reason="found"),
            dict(
                name="support",
                verdict=support,
                reason="quote reads as another clause" if support != "verified" else "ok",
            ),
            dict(name="values", verdict="verified", reason="ok"),
        ],
    )
    if decision:
        f["decision"] = decision
    return f


def test_a_reclassified_finding_moves_in_key_terms_counts_and_the_playbook(tmp_path):
    quote = "During the Term and for two (2) years thereafter, Licensee shall not sell any product that competes with the Product."
    before = [
        _finding(1, "expiration_date", quote, {"duration": "two (2) years"}),
        _finding(2, "cap_on_liability", "liability shall not exceed $500,000 in the aggregate", {"amount": "$500,000"}),
    ]
    (tmp_path / "p.yaml").write_text(PLAYBOOK)
    rules = load_playbook(tmp_path / "p.yaml")
    doc = dict(status="reviewed", profile="contract", findings=before, absences=[])
    assert key_terms(before)["Term"] == ["two (2) years"]  # the non-compete's tail read as the contract's term
    assert category_counts(before) == {"cap_on_liability": 1, "expiration_date": 1}
    assert {r["rule"]: r["status"] for r in evaluate_document(rules, doc)}["non-compete-required"] == "deviation"

    decided = [dict(f) for f in before]
    decided[0]["decision"] = dict(decision="reclassify", category="non_compete", reviewer="Alice")
    decided[1]["decision"] = dict(decision="reclassify", category="uncapped_liability", reviewer="Alice")
    for f in decided:
        reclassify(f)
    assert decided[0]["clause_type"] == "non_compete" and decided[0]["claimed_clause_type"] == "expiration_date"
    assert decided[0]["clause_label"] == "Non-Compete" and decided[0]["claimed_values"] == {"duration": "two (2) years"}
    terms = key_terms(decided)
    assert "Term" not in terms and "Liability cap" not in terms  # both left the key terms
    assert category_counts(decided) == {"non_compete": 1, "uncapped_liability": 1}
    results = {r["rule"]: r for r in evaluate_document(rules, dict(doc, findings=decided))}
    assert results["non-compete-required"]["status"] == "pass" and results["non-compete-required"]["finding_ids"] == [1]
    assert results["liability-cap"]["status"] == "deviation"  # no cap clause left: the playbook requires one
    # A rejection takes a finding out of the counts; another reviewer's approval restores it.
    rejected = [dict(decided[0], decision=dict(decision="reject"))]
    assert category_counts(rejected) == {}


def test_a_finding_reclassified_into_a_key_term_gives_the_value_its_quote_states():
    f = _finding(
        3,
        "effective_date",
        "This Agreement shall expire on December 31, 2027 unless renewed.",
        {"date": "x"},
        support="needs_review",
    )
    assert "Expiration date" not in key_terms([f])
    f["decision"] = dict(decision="reclassify", category="expiration_date", reviewer="Bob")
    reclassify(f)
    assert key_terms([f])["Expiration date"] == ["December 31, 2027"]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_on_a_real_cuad_contract_the_next_runs_report_reads_the_reviewers_category(shared_data, tmp_path, db_url):
    """Eton's development agreement (a real CUAD contract): the rules backend claims its
    non-compete ("for a period of two (2) years thereafter, Aucta shall not ... sell ...") as an
    Expiration Date and its insurance clause ("$5,000,000 ... $10,000,000") as a Cap On Liability. A
    reviewer reclassifies both; the next run's report counts, lists and judges them as reclassified."""
    from cli.queue import record_decision
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    name = "EtonPharmaceuticalsInc_20191114_10-Q_EX-10.1_11893941_EX-10.1_Development Agreement.pdf"
    source = shared_data / "cuad" / "pdf" / name
    playbook = tmp_path / "playbook.yaml"
    playbook.write_text(PLAYBOOK)

    def run() -> dict:
        review_documents(
            source=str(source),
            out_dir=str(tmp_path / "out"),
            database_url=db_url,
            backend="rules",
            playbook=str(playbook),
        )
        return json.loads(Path(tmp_path / "out" / "report.json").read_text())["documents"][0]

    try:
        first = run()
        by_id = {f["id"]: f for f in first["findings"]}
        compete = next(
            f
            for f in first["findings"]
            if f["clause_type"] == "expiration_date" and "shall not research" in f["evidence"]
        )
        insurance = next(
            f for f in first["findings"] if f["clause_type"] == "cap_on_liability" and "INSURANCE" in f["evidence"]
        )
        assert any(f"finding {insurance['id']} needs review" in v for v in first["key_terms"]["Liability cap"])
        results = {r["rule"]: r for r in first["playbook"]}
        assert results["non-compete-required"]["status"] == "unknown"  # read as Non-Compete, claimed as another
        record_decision(
            db_url, str(compete["id"]), "reclassify", "a two-year non-compete", reviewer="Alice", category="Non-Compete"
        )
        record_decision(db_url, str(insurance["id"]), "reclassify", reviewer="Alice", category="insurance")
        second = run()
    finally:
        dispose_engines()
    moved = {f["id"]: f for f in second["findings"]}
    assert moved[compete["id"]]["clause_type"] == "non_compete"
    assert moved[compete["id"]]["claimed_clause_type"] == "expiration_date"
    assert moved[insurance["id"]]["clause_label"] == "Insurance"
    assert second["categories"]["non_compete"] == first["categories"].get("non_compete", 0) + 1
    assert second["categories"]["cap_on_liability"] == first["categories"]["cap_on_liability"] - 1
    assert second["categories"]["insurance"] == first["categories"]["insurance"] + 1
    assert not any(f"finding {insurance['id']}" in v for v in second["key_terms"].get("Liability cap", []))
    results = {r["rule"]: r for r in second["playbook"]}
    assert (
        results["non-compete-required"]["status"] == "pass"
        and compete["id"] in results["non-compete-required"]["finding_ids"]
    )
    assert len(by_id) == len(moved)
