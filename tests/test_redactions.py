"""Confidential-treatment redactions (Regulation S-K Item 601(b)(10)(iv), Rule 24b-2): a value of its own
kind, never verified, never missing: the fact-check says ``needs_review`` and a playbook rule ``unknown``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemas.documents import ExtractedDocument, PageText, SourceObject
from schemas.findings import CheckResult, Finding, FindingValue, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.factcheck import fact_check
from tasks.check.index import DocumentIndex
from tasks.check.playbook import evaluate_document, load_playbook
from tasks.check.redactions import REDACTED_REASON, check_redaction, find_redactions, is_redacted
from tasks.check.values import Kind, extract_values
from tasks.review.chunk import chunk_text

# --- the marks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [
        "[***]",
        "[*]",
        "[* * *]",
        "[ * ]",
        "[**]",
        "[*****]",
        "[…***…]",
        "[...***...]",
        "[ *\u2217 ]",
        "***",
        "*****",
        "* * *",
        "[REDACTED]",
        "[Redacted]",
        "[Confidential Treatment Requested]",
        "[CONFIDENTIAL TREATMENT REQUESTED]",
        "[*** 2 pages omitted.]",
    ],
)
def test_each_redaction_form_is_one_mark(token):
    text = f"the Supplier shall pay {token} to the Company"
    marks = find_redactions(text)
    assert [m.raw for m in marks] == [token]
    assert text[marks[0].start : marks[0].end] == token
    assert is_redacted(f"${token}") and check_redaction(finding(text)) is not None


@pytest.mark.parametrize(
    "text",
    [
        "a fee of $[●] per unit",  # a blank of a draft: nothing was withheld
        "a fee of [•] per unit",
        "the sum of [________] dollars",
        "Section 4 [Intentionally omitted]",
        "[GRAPHIC OMITTED]",
        "Confidential Treatment Requested by Acme Corp.",  # the legend, not a mark
        "Net Sales* and Royalties** as defined",  # footnote marks
        "*" * 60,  # a rule between parts
    ],
)
def test_blanks_legends_and_footnotes_are_no_redactions(text):
    assert find_redactions(text) == [] and check_redaction(finding(text)) is None
    assert not any(v.kind is Kind.redacted for v in extract_values(text))


@pytest.mark.parametrize(
    "text, slot",
    [
        ("shall not exceed [***]", None),
        ("a term of [*] years", Kind.duration),
        ("Fee: $[***]", Kind.money),
        ("USD [***] million", Kind.money),
        ("within [...***...] Business Days", Kind.duration),
        ("[***] percent", Kind.percent),
        ("[***]%", Kind.percent),
        ("effective on [***], 2020", Kind.date),
        ("on March [*], 2021", Kind.date),
    ],
)
def test_a_redaction_is_a_value_of_its_own_kind_with_the_slot_it_hides(text, slot):
    values = extract_values(text)
    assert [(v.kind, v.slot) for v in values] == [(Kind.redacted, slot)]
    assert values[0].amount is None and values[0].show().startswith("redacted")
    assert values[0].as_json()["kind"] == "redacted"


# --- real filed contracts (shared CUAD corpus) ------------------------------------------------

#: (contract, a pattern of a sentence in it, the mark, the slot it hides)
CUAD_SENTENCES = [
    (
        "ADMA BioManufacturing, LLC -  Amendment #3 to Manufacturing Agreement .txt",
        r"rejected Batches,\s+shall not exceed \[\*\*\*\]",
        "[***]",
        None,
    ),
    (
        "ADMA BioManufacturing, LLC -  Amendment #3 to Manufacturing Agreement .txt",
        r"amounting to \$\[\*\*\*\] \(\[\*\*\*\]\) USD",
        "[***]",
        Kind.money,
    ),
    (
        "MANUFACTURERSSERVICESLTD_06_05_2000-EX-10.14-OUTSOURCING AGREEMENT.txt",
        r"for a period of \[\*\] years from the Effective Date",
        "[*]",
        Kind.duration,
    ),
    (
        "BELLICUMPHARMACEUTICALS,INC_05_07_2019-EX-10.1-Supply Agreement.txt",
        r"at least \[\.\.\.\*\*\*\.\.\.\] months' advance written notice",
        "[...***...]",
        Kind.duration,
    ),
    (
        "DRKOOPCOMINC_04_21_1999-EX-10.28-SPONSORSHIP AGREEMENT.txt",
        r"Sponsor shall pay \* \* \* to drkoop\.com",
        "* * *",
        None,
    ),
    (
        "GluMobileInc_20070319_S-1A_EX-10.09_436630_EX-10.09_Content License Agreement1.txt",
        r"Royalties at the rate of \*\*\*\*\* percent",
        "*****",
        Kind.percent,
    ),
]


def cuad_text(shared_data: Path, name: str) -> str:
    path = shared_data / "cuad" / "txt" / name
    if not path.exists():
        pytest.skip(f"{path} is not in the shared corpus")
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("name, pattern, mark, slot", CUAD_SENTENCES)
def test_redactions_in_real_filed_contracts(shared_data, name, pattern, mark, slot):
    text = cuad_text(shared_data, name)
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {name}"
    redacted = [v for v in extract_values(m.group(0)) if v.kind is Kind.redacted]
    assert redacted and redacted[0].raw == mark and redacted[0].slot is slot


def test_the_corpus_holds_the_forms_the_module_lists(shared_data):
    """The counts in tasks/check/redactions.py's docstring: 103 of the 340 contracts carry a mark."""
    paths = sorted((shared_data / "cuad" / "txt").glob("*.txt"))
    if len(paths) != 340:
        pytest.skip(f"{len(paths)} CUAD texts, the counts were taken on 340")
    with_marks = [p for p in paths if find_redactions(p.read_text(encoding="utf-8", errors="replace"))]
    assert len(with_marks) == 103


# --- the fact-check ------------------------------------------------------------------------------


def finding(evidence: str, page: int = 1, values=(), clause=ClauseType.cap_on_liability) -> Finding:
    return Finding(
        clause_type=clause,
        summary="s",
        risk=Risk.low,
        evidence=evidence,
        page=page,
        values=[FindingValue(name=n, value=v) for n, v in values],
    )


def document(*pages: str) -> ExtractedDocument:
    src = SourceObject(uri="x.pdf", name="x.pdf", local_path="/x.pdf", size_bytes=1)
    return ExtractedDocument(
        sha256="e" * 64, source=src, pages=[PageText(number=i + 1, text=t) for i, t in enumerate(pages)]
    )


def check(doc: ExtractedDocument, f: Finding, verifier=None):
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=4000, overlap=400)
    return fact_check([f], chunks[0], chunks[1:2], DocumentIndex.build(doc), verifier=verifier, support_model=None)[0]


def by_name(cf) -> dict[str, CheckResult]:
    return {c.name: c for c in cf.checks}


CAP = "12. LIMITATION OF LIABILITY. In no event shall either party's aggregate liability exceed [***]."


@pytest.mark.parametrize(
    "values",
    [(), [("cap", "[***]")], [("amount", "$[***]")], [("cap", "redacted")], [("cap", "[Redacted]")]],
)
def test_a_redacted_cap_needs_review_and_is_never_contradicted(values):
    cf = check(document(CAP), finding("aggregate liability exceed [***]", values=values))
    checks = by_name(cf)
    assert cf.verdict is Verdict.needs_review
    assert checks["grounding"].verdict is Verdict.verified
    assert checks["values"].verdict is Verdict.verified  # nothing missing, nothing to compare
    assert checks["redaction"].verdict is Verdict.needs_review
    assert REDACTED_REASON in checks["redaction"].reason and "'[***]'" in checks["redaction"].reason


@pytest.mark.parametrize(
    "page, quote, values",
    [
        ("3.1 Term. This Agreement has a term of [*] years from the Effective Date.", "a term of [*] years", ()),
        ("3.1 Term. This Agreement has a term of [*] years from the Effective Date.", "a term of [*] years",
         [("duration", "[*] years")]),
        ("Schedule A. Fee: $[***] per month, payable in arrears.", "Fee: $[***] per month", [("fee", "$[***]")]),
    ],
)  # fmt: skip
def test_a_redacted_term_or_fee_needs_review(page, quote, values):
    cf = check(document(page), finding(quote, values=values, clause=ClauseType.minimum_commitment))
    assert cf.verdict is Verdict.needs_review
    assert by_name(cf)["values"].verdict is Verdict.verified
    assert REDACTED_REASON in by_name(cf)["redaction"].reason


def test_a_verifier_does_not_settle_a_redaction():
    def verifier(f, passage):
        return CheckResult(name="verifier", verdict=Verdict.verified, reason="verifier: supported")

    cf = check(document(CAP), finding("aggregate liability exceed [***]"), verifier=verifier)
    assert by_name(cf)["verifier"].verdict is Verdict.verified
    assert cf.verdict is Verdict.needs_review


def test_a_stated_value_the_quote_does_not_redact_needs_review():
    doc = document("7. Fees. Customer shall pay $25,000 per month.")
    cf = check(doc, finding("Customer shall pay $25,000 per month", values=[("fee", "$[***]")]))
    assert cf.verdict is Verdict.needs_review
    assert "the quote holds none" in by_name(cf)["values"].reason


def test_a_value_beside_a_redaction_is_still_compared():
    doc = document("Royalty: [***]% of Net Sales, and a fee of $50,000 per year.")
    wrong = check(doc, finding("[***]% of Net Sales, and a fee of $50,000 per year", values=[("fee", "$60,000")]))
    assert wrong.verdict is Verdict.contradicted  # a stated figure the quote does not give is still wrong
    assert "redaction" in by_name(wrong)


def test_a_plain_cap_is_verified_as_before():
    doc = document("12. LIMITATION OF LIABILITY. Liability shall not exceed $1,000,000 in the aggregate.")
    cf = check(doc, finding("Liability shall not exceed $1,000,000", values=[("cap", "$1,000,000")]))
    assert cf.verdict is Verdict.verified and "redaction" not in by_name(cf)


def test_a_real_redacted_cap_through_the_fact_check(shared_data):
    text = cuad_text(shared_data, CUAD_SENTENCES[0][0])
    m = re.search(CUAD_SENTENCES[0][1], text)
    assert m
    page = text[max(0, m.start() - 1500) : m.end() + 1500]
    quote = page[page.index(m.group(0)) :][: len(m.group(0))]
    cf = check(document(page), finding(quote, values=[("cap", "[***]")]))
    assert by_name(cf)["grounding"].verdict is Verdict.verified
    assert cf.verdict is Verdict.needs_review
    assert by_name(cf)["redaction"].reason.startswith(f"cap='[***]': {REDACTED_REASON} ('[***]' in ")


# --- the playbook ------------------------------------------------------------------------------

PLAYBOOK = """playbook: p
rules:
  - {id: cap-max, clause: cap_on_liability, expect: max_amount, value: 'USD 2,000,000', severity: high}
  - {id: notice-max, clause: notice_period_to_terminate_renewal, expect: max_duration, value: 90 days, severity: low}
  - {id: law, clause: governing_law, expect: allowed_values, values: [New York], severity: medium}
"""


def report_finding(fid: int, clause: str, evidence: str, values: dict | None = None) -> dict:
    checks = [{"name": "grounding", "verdict": "verified"}, {"name": "support", "verdict": "verified"}]
    redacted = find_redactions(evidence) or any(is_redacted(str(v)) for v in (values or {}).values())
    if redacted:
        checks.append({"name": "redaction", "verdict": "needs_review"})
    return {
        "id": fid,
        "clause_type": clause,
        "verdict": "needs_review" if redacted else "verified",
        "evidence": evidence,
        "page": 4,
        "values": values or {},
        "checks": checks,
    }


@pytest.fixture()
def playbook(tmp_path):
    path = tmp_path / "playbook.yaml"
    path.write_text(PLAYBOOK)
    return load_playbook(path)


def results(playbook, *findings: dict) -> dict[str, dict]:
    doc = {"status": "reviewed", "findings": list(findings), "absences": []}
    return {r["rule"]: r for r in evaluate_document(playbook, doc)}


@pytest.mark.parametrize(
    "evidence, values",
    [
        ("aggregate liability shall not exceed [***]", None),
        ("aggregate liability shall not exceed $[***] in any Contract Year", None),
        ("aggregate liability shall not exceed [***]", {"amount": "[***]"}),
        ("aggregate liability shall not exceed the amount set out in Schedule B", {"amount": "redacted"}),
        # a readable figure does not decide it while another one is hidden
        ("liability shall not exceed the lesser of $1,000,000 and [***]", None),
    ],
)
def test_a_max_amount_rule_on_a_redacted_cap_is_unknown(playbook, evidence, values):
    got = results(playbook, report_finding(1, "cap_on_liability", evidence, values))["cap-max"]
    assert got["status"] == "unknown" and got["finding_ids"] == [1]
    assert f"amount {REDACTED_REASON}" in got["reason"] and "page 4" in got["reason"]


def test_a_plain_cap_still_passes_or_deviates(playbook):
    ok = results(playbook, report_finding(1, "cap_on_liability", "liability shall not exceed $1,000,000"))["cap-max"]
    assert ok["status"] == "pass" and "$1,000,000" in ok["reason"]
    high = results(playbook, report_finding(1, "cap_on_liability", "liability shall not exceed $5,000,000"))
    assert high["cap-max"]["status"] == "deviation" and "$5,000,000" in high["cap-max"]["reason"]
    # a mark that hides a percentage hides no amount: the cap is read
    pct = results(playbook, report_finding(1, "cap_on_liability", "shall not exceed $5,000,000 or [***]% of fees"))
    assert pct["cap-max"]["status"] == "deviation"


def test_duration_and_allowed_value_rules_on_redacted_values_are_unknown(playbook):
    got = results(
        playbook,
        report_finding(
            1,
            "notice_period_to_terminate_renewal",
            "unless either party gives notice of non-renewal at least [*] days prior to the end of the term",
        ),
        report_finding(2, "governing_law", "This Agreement is governed by the laws of [***]."),
    )
    assert got["notice-max"]["status"] == "unknown" and f"duration {REDACTED_REASON}" in got["notice-max"]["reason"]
    assert got["law"]["status"] == "unknown" and REDACTED_REASON in got["law"]["reason"]
    plain = results(
        playbook,
        report_finding(
            1, "notice_period_to_terminate_renewal", "notice at least 120 days prior to the end of the term"
        ),
        report_finding(2, "governing_law", "This Agreement is governed by the laws of the State of New York."),
    )
    assert plain["notice-max"]["status"] == "deviation" and plain["law"]["status"] == "pass"
