"""Fact-check: quote grounding with normalisation, page correction, and values in the quote."""

from __future__ import annotations

from decimal import Decimal

from schemas.documents import ExtractedDocument, PageQuality, PageText, SourceObject
from schemas.findings import CheckedFinding, CheckResult, Finding, FindingValue, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.absences import ABSENCE_CATEGORIES, find_absences
from tasks.check.consistency import consistency
from tasks.check.factcheck import check_values, fact_check, overall_verdict
from tasks.check.index import DocumentIndex
from tasks.check.values import DateOrder
from tasks.check.verifier import build_verifier_request, parse_verifier_response
from tasks.review.chunk import chunk_text

PAGE1 = (
    "MASTER SERVICES AGREEMENT\n\n1. FEES. Customer shall pay the \ufb01xed fee of $25,000 per month, "
    "payable within thirty (30) days of re-\nceipt of each invoice."
)
PAGE2 = (
    "7. LIMITATION OF LIABILITY. In no event shall either party\u2019s aggregate liability exceed "
    "$1,500,000 or the interest rate of 8.75% per annum."
)
PAGE3 = "12. GOVERNING LAW. This Agreement shall be governed by the laws of the State of Delaware."


def make_doc(pages=(PAGE1, PAGE2, PAGE3), glued=()) -> ExtractedDocument:
    src = SourceObject(uri="x.pdf", name="x.pdf", local_path="/x.pdf", size_bytes=1)
    return ExtractedDocument(
        sha256="f" * 64,
        source=src,
        pages=[
            PageText(number=i + 1, text=t, quality=PageQuality(glued_words=(i + 1) in glued))
            for i, t in enumerate(pages)
        ],
    )


def finding(evidence: str, page: int, values=(), clause=ClauseType.cap_on_liability) -> Finding:
    return Finding(
        clause_type=clause,
        summary="s",
        risk=Risk.high,
        evidence=evidence,
        page=page,
        values=[FindingValue(name=n, value=v) for n, v in values],
    )


def run(doc: ExtractedDocument, f: Finding, chunk_no: int | None = None, budget: int = 4000):
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=budget, overlap=budget // 10)
    chunk = chunks[chunk_no if chunk_no is not None else 0]
    neighbours = [c for c in chunks if abs(c.index - chunk.index) == 1]
    # grounding and values only: the support check has its own tests (tests/test_support.py)
    return fact_check([f], chunk, neighbours, DocumentIndex.build(doc), support_model=None)[0]


def test_verbatim_quote_with_layout_artefacts_is_verified():
    doc = make_doc()
    quote = "Customer shall pay the fixed fee of $25,000 per month, payable within thirty (30) days of receipt"
    cf = run(doc, finding(quote, 1, [("amount", "$25,000"), ("duration", "thirty (30) days")]))
    assert cf.verdict == Verdict.verified
    assert {c.name: c.verdict for c in cf.checks} == {"grounding": Verdict.verified, "values": Verdict.verified}


def test_curly_apostrophe_and_page_corrected():
    doc = make_doc()
    quote = "In no event shall either party's aggregate liability exceed $1,500,000"
    cf = run(doc, finding(quote, 1, [("amount", "$1,500,000")]))
    assert cf.verdict == Verdict.verified
    assert cf.finding.page == 2 and cf.stated_page == 1
    assert "corrected" in cf.checks[0].reason


def test_quote_with_one_number_changed_is_not_verified():
    doc = make_doc()
    quote = "In no event shall either party's aggregate liability exceed $1,600,000"
    cf = run(doc, finding(quote, 2, [("amount", "$1,600,000")]))
    assert cf.verdict == Verdict.unsupported
    assert cf.checks[0].verdict == Verdict.unsupported


def test_value_not_in_a_real_quote_is_contradicted():
    doc = make_doc()
    quote = "the interest rate of 8.75% per annum"
    cf = run(doc, finding(quote, 2, [("rate", "8.5%")]))
    assert cf.checks[0].verdict == Verdict.verified  # the quote is real ...
    assert cf.checks[1].verdict == Verdict.contradicted  # ... the value is not in it
    assert cf.verdict == Verdict.contradicted
    assert "8.5" in cf.checks[1].reason


def test_search_falls_back_to_whole_document():
    doc = make_doc()
    cf = run(
        doc,
        finding(
            "governed by the laws of the State of Delaware", 1, [("jurisdiction", "Delaware")], ClauseType.governing_law
        ),
        chunk_no=0,
        budget=120,
    )
    assert cf.verdict == Verdict.verified
    assert cf.finding.page == 3
    assert "document" in cf.checks[0].reason or "neighbouring" in cf.checks[0].reason


def test_fabricated_quote_is_unsupported():
    doc = make_doc()
    cf = run(doc, finding("Either party may terminate for convenience on ten days notice", 1))
    assert cf.verdict == Verdict.unsupported


def test_glued_page_matches_ignoring_spaces():
    glued = "7.LIMITATIONOFLIABILITY.Innoeventshalleitherparty'saggregateliabilityexceed$1,500,000."
    doc = make_doc(pages=(PAGE1, glued, PAGE3), glued=(2,))
    quote = "In no event shall either party's aggregate liability exceed $1,500,000"
    cf = run(doc, finding(quote, 2, [("amount", "$1,500,000")]))
    assert cf.verdict == Verdict.verified
    assert "ignoring spaces" in cf.checks[0].reason


def test_empty_quote_needs_review():
    doc = make_doc()
    cf = run(doc, finding("", 1))
    assert cf.verdict == Verdict.needs_review


# --- typed values, section references, consistency, arithmetic, absence, verifier -------------


def _fact_check(*args, **kwargs):
    """:func:`fact_check` without the support check (tested in tests/test_support.py)."""
    return fact_check(*args, support_model=None, **kwargs)


def checks_of(cf) -> dict:
    return {c.name: c for c in cf.checks}


def test_changed_currency_is_contradicted():
    doc = make_doc()
    quote = "In no event shall either party's aggregate liability exceed $1,500,000"
    cf = run(doc, finding(quote, 2, [("amount", "EUR 1,500,000")]))
    assert checks_of(cf)["grounding"].verdict == Verdict.verified
    assert checks_of(cf)["values"].verdict == Verdict.contradicted
    assert "EUR 1500000" in checks_of(cf)["values"].reason and "USD 1500000" in checks_of(cf)["values"].reason


def test_money_in_other_words_is_verified():
    doc = make_doc()
    quote = "In no event shall either party's aggregate liability exceed $1,500,000"
    cf = run(doc, finding(quote, 2, [("amount", "USD 1.5 million")]))
    assert cf.verdict == Verdict.verified


def test_duration_changed_in_words_only_is_contradicted():
    doc = make_doc()
    quote = "payable within thirty (30) days of re-\nceipt of each invoice"
    assert run(doc, finding(quote, 1, [("duration", "30 days")])).verdict == Verdict.verified
    assert run(doc, finding(quote, 1, [("duration", "thirty days")])).verdict == Verdict.verified
    bad = run(doc, finding(quote, 1, [("duration", "sixty days")]))
    assert bad.verdict == Verdict.contradicted and "60 day" in checks_of(bad)["values"].reason
    unit = run(doc, finding(quote, 1, [("duration", "thirty (30) months")]))
    assert unit.verdict == Verdict.contradicted


def test_truncated_amount_is_not_a_match():
    doc = make_doc()
    quote = "In no event shall either party's aggregate liability exceed $1,500,000"
    cf = run(doc, finding(quote, 2, [("amount", "$1,500")]))
    assert cf.verdict == Verdict.contradicted


def test_section_reference_trap():
    page = (
        "5. FEES\n5.1 Payment. Licensee shall pay USD 1.5 million on signature, as set out in "
        "Section 2.3 and subject to Section 4.\n6. TERM\n6.1 Duration. Five years."
    )
    doc = make_doc(pages=(page,))
    quote = "Licensee shall pay USD 1.5 million on signature, as set out in Section 2.3"
    # "USD 1.5 million" is no "Section 1.5"
    trap = run(doc, finding(quote, 1, [("section", "Section 1.5")], ClauseType.other))
    assert trap.verdict == Verdict.contradicted
    assert "section 1.5" in checks_of(trap)["values"].reason
    # a reference the quote makes, and the section the quote sits in, are fine
    assert run(doc, finding(quote, 1, [("section", "Section 2.3")], ClauseType.other)).verdict == Verdict.verified
    assert run(doc, finding(quote, 1, [("section", "Section 5.1")], ClauseType.other)).verdict == Verdict.verified
    assert run(doc, finding(quote, 1, [("amount", "USD 1.5 million")], ClauseType.other)).verdict == Verdict.verified


def test_party_not_in_the_quote_is_contradicted():
    page = 'This Agreement is made between Acme Widgets, Inc. ("Acme") and Borealis Trading LLC ("Borealis").'
    doc = make_doc(pages=(page,))
    ok = run(
        doc, finding(page, 1, [("party", "Acme Widgets, Inc."), ("party", "Borealis Trading LLC")], ClauseType.parties)
    )
    assert ok.verdict == Verdict.verified
    bad = run(doc, finding(page, 1, [("party", "Zenith Holdings Corp.")], ClauseType.parties))
    assert bad.verdict == Verdict.contradicted and "not in the quote" in checks_of(bad)["values"].reason


def test_numeric_date_against_per_document_order():
    us = make_doc(pages=("Signed on 12/31/2020. The Effective Date is 03/01/2021.",))
    eu = make_doc(pages=("Signed on 31/12/2020. The Effective Date is 03/01/2021.",))
    unknown = make_doc(pages=("The Effective Date is 03/01/2021.",))
    quote = "The Effective Date is 03/01/2021."
    stated = [("date", "March 1, 2021")]
    assert run(us, finding(quote, 1, stated, ClauseType.effective_date)).verdict == Verdict.verified
    assert run(eu, finding(quote, 1, stated, ClauseType.effective_date)).verdict == Verdict.contradicted
    undecided = run(unknown, finding(quote, 1, stated, ClauseType.effective_date))
    assert undecided.verdict == Verdict.needs_review
    assert "day/month order" in checks_of(undecided)["values"].reason
    # the same numeric text on both sides claims no order and is verified in any document
    assert (
        run(unknown, finding(quote, 1, [("date", "03/01/2021")], ClauseType.effective_date)).verdict == Verdict.verified
    )


def test_changed_ordinal_date_is_contradicted():
    page = "THIS AGREEMENT is made this 22nd day of June 2021 between the parties."
    doc = make_doc(pages=(page,))
    assert (
        run(doc, finding(page, 1, [("date", "June 22, 2021")], ClauseType.agreement_date)).verdict == Verdict.verified
    )
    assert (
        run(doc, finding(page, 1, [("date", "June 23, 2021")], ClauseType.agreement_date)).verdict
        == Verdict.contradicted
    )
    # not a calendar date at all
    assert (
        run(doc, finding(page, 1, [("date", "June 31, 2021")], ClauseType.agreement_date)).verdict
        == Verdict.contradicted
    )


def test_source_words_and_figures_disagreeing_needs_review():
    page = "Licensee shall pay a royalty of ten percent (15%) of Net Sales."
    doc = make_doc(pages=(page,))
    cf = run(doc, finding(page, 1, [("percentage", "ten percent (15%)")], ClauseType.revenue_profit_sharing))
    assert cf.verdict == Verdict.needs_review and "words say 10%" in checks_of(cf)["values"].reason


def _checked(evidence: str, clause: ClauseType, values, page: int = 1, chunk: int = 0) -> CheckedFinding:
    f = finding(evidence, page, values, clause)
    return CheckedFinding(
        finding=f,
        chunk_index=chunk,
        ordinal=0,
        stated_page=page,
        verdict=Verdict.verified,
        checks=[CheckResult(name="grounding", verdict=Verdict.verified, reason="found")],
    )


def test_contradiction_pair_points_at_each_other():
    a = _checked(
        "This Agreement shall be governed by the laws of the State of Delaware.",
        ClauseType.governing_law,
        [("jurisdiction", "Delaware")],
        page=3,
    )
    b = _checked(
        "This Agreement shall be construed under the laws of the State of New York.",
        ClauseType.governing_law,
        [("jurisdiction", "New York")],
        page=9,
        chunk=4,
    )
    c = _checked(
        "The initial term of this Agreement shall be five (5) years.",
        ClauseType.expiration_date,
        [("duration", "five (5) years")],
        page=2,
    )
    out = consistency([a, b, c])
    ca, cb, cc = (checks_of(x)["consistency"] for x in out)
    assert out[0].verdict == out[1].verdict == Verdict.contradicted
    assert ca.verdict == cb.verdict == Verdict.contradicted
    assert "'New York'" in ca.reason and "page 9" in ca.reason
    assert "'Delaware'" in cb.reason and "page 3" in cb.reason
    assert cc.verdict == Verdict.verified and out[2].verdict == Verdict.verified


def test_consistent_terms_and_federal_law_do_not_conflict():
    a = _checked(
        "This Agreement shall be governed by the laws of the State of Delaware.",
        ClauseType.governing_law,
        [("jurisdiction", "State of Delaware")],
    )
    b = _checked(
        "governed by the laws of Delaware and the federal laws of the United States",
        ClauseType.governing_law,
        [("jurisdiction", "Delaware"), ("jurisdiction", "United States")],
    )
    cap1 = _checked(
        "the liability of either party shall not exceed $1,000,000",
        ClauseType.cap_on_liability,
        [("amount", "$1,000,000")],
    )
    cap2 = _checked(
        "each party's liability is limited to USD 1 million", ClauseType.cap_on_liability, [("amount", "USD 1 million")]
    )
    out = consistency([a, b, cap1, cap2])
    assert all(x.verdict == Verdict.verified for x in out)
    assert "agrees with 1 other" in checks_of(out[2])["consistency"].reason


def test_conflicting_liability_caps_and_dates():
    cap1 = _checked(
        "the liability of either party shall not exceed $1,000,000",
        ClauseType.cap_on_liability,
        [("amount", "$1,000,000")],
    )
    cap2 = _checked(
        "each party's liability shall not exceed $2,000,000", ClauseType.cap_on_liability, [("amount", "$2,000,000")]
    )
    d1 = _checked(
        "This Agreement is dated as of March 1, 2020.", ClauseType.agreement_date, [("date", "March 1, 2020")]
    )
    d2 = _checked(
        "This Agreement was made and entered into on the 2nd day of March, 2020.",
        ClauseType.agreement_date,
        [("date", "the 2nd day of March, 2020")],
    )
    recital = _checked(
        "WHEREAS, the parties entered into that certain agreement dated May 5, 2015.",
        ClauseType.agreement_date,
        [("date", "May 5, 2015")],
    )
    out = consistency([cap1, cap2, d1, d2, recital])
    assert [x.verdict for x in out] == [Verdict.contradicted] * 4 + [Verdict.verified]
    assert "consistency" not in checks_of(out[4])  # a recital states no term of this agreement


def test_unsupported_findings_are_no_evidence_for_consistency():
    a = _checked(
        "This Agreement shall be governed by the laws of the State of Delaware.",
        ClauseType.governing_law,
        [("jurisdiction", "Delaware")],
    )
    b = _checked(
        "This Agreement shall be governed by the laws of the State of Texas.",
        ClauseType.governing_law,
        [("jurisdiction", "Texas")],
    )
    b.verdict = Verdict.unsupported
    out = consistency([a, b], DateOrder.unknown)
    assert out[0].verdict == Verdict.verified


def test_a_quote_the_support_check_doubts_does_not_contradict_one_it_confirms():
    law = _checked(
        "The construction, validity and performance of this Agreement shall be governed by the laws of Japan.",
        ClauseType.governing_law,
        [("jurisdiction", "Japan")],
    )
    law.checks.append(CheckResult(name="support", verdict=Verdict.verified, reason="quote reads as Governing Law"))
    waiver = _checked(
        "any action to interpret this Agreement shall be tried without a jury in the courts of New York",
        ClauseType.governing_law,
        [("jurisdiction", "New York")],
    )
    waiver.checks.append(
        CheckResult(name="support", verdict=Verdict.needs_review, reason="reads as Governing Law only weakly")
    )
    kept, doubted = consistency([law, waiver], DateOrder.unknown)
    assert kept.verdict == Verdict.verified and checks_of(kept)["consistency"].verdict == Verdict.verified
    assert doubted.verdict == Verdict.contradicted and "conflicts with" in checks_of(doubted)["consistency"].reason
    # two confirmed (or two doubted) quotes that disagree both stay contradicted
    other = _checked(
        "governed by the laws of the State of Texas", ClauseType.governing_law, [("jurisdiction", "Texas")]
    )
    other.checks.append(CheckResult(name="support", verdict=Verdict.verified, reason="quote reads as Governing Law"))
    assert [cf.verdict for cf in consistency([law, other], DateOrder.unknown)] == [Verdict.contradicted] * 2


def test_arithmetic_instalments_and_shares():
    quote = "The Purchase Price of $100,000 is payable in four (4) equal instalments of $25,000."
    doc = make_doc(pages=(quote,))
    ok = run(doc, finding(quote, 1, [("total", "$100,000"), ("instalment_1", "$25,000")], ClauseType.other))
    assert checks_of(ok)["arithmetic"].verdict == Verdict.verified
    wrong_quote = "The Purchase Price of $90,000 is payable in four (4) equal instalments of $25,000."
    doc2 = make_doc(pages=(wrong_quote,))
    odd = run(doc2, finding(wrong_quote, 1, [], ClauseType.other))
    assert checks_of(odd)["arithmetic"].verdict == Verdict.needs_review
    parts = "Fees: first payment $40,000, second payment $50,000; total fees $100,000."
    doc3 = make_doc(pages=(parts,))
    bad = run(
        doc3,
        finding(
            parts,
            1,
            [("first payment", "$40,000"), ("second payment", "$50,000"), ("total", "$100,000")],
            ClauseType.other,
        ),
    )
    assert checks_of(bad)["arithmetic"].verdict == Verdict.contradicted and bad.verdict == Verdict.contradicted
    split = "Net profits shall be split sixty percent (60%) to Licensor and forty percent (40%) to Licensee."
    doc4 = make_doc(pages=(split,))
    good = run(
        doc4,
        finding(split, 1, [("licensor share", "60%"), ("licensee share", "40%")], ClauseType.revenue_profit_sharing),
    )
    assert checks_of(good)["arithmetic"].verdict == Verdict.verified
    # no shares or totals: no arithmetic check at all
    assert "arithmetic" not in checks_of(
        run(make_doc(), finding("the interest rate of 8.75% per annum", 2, [("rate", "8.75%")]))
    )


def test_absences_of_high_risk_categories():
    present = _checked("x", ClauseType.cap_on_liability, [])
    absent = find_absences([present], [0, 1, 2])
    kinds = {a.clause_type for a in absent}
    assert ClauseType.cap_on_liability not in kinds
    assert kinds == set(ABSENCE_CATEGORIES) - {ClauseType.cap_on_liability}
    assert all(a.chunks == [0, 1, 2] and a.verdict == Verdict.needs_review and "3 examined" in a.reason for a in absent)
    assert find_absences([], []) == []  # nothing examined, nothing claimed


def test_verifier_request_asks_for_the_structured_answer_the_table_allows():
    # The capability table decides: structured outputs where the model has them (every current model);
    # never a forced tool_choice by default.
    f = finding("aggregate liability exceed $1,500,000", 2, [("amount", "$1,500,000")])
    req = build_verifier_request(f, "PASSAGE TEXT", "claude-haiku-4-5", 300)
    assert req["model"] == "claude-haiku-4-5" and req["max_tokens"] == 300
    assert "tool_choice" not in req and "tools" not in req
    schema = req["output_config"]["format"]["schema"]
    assert set(schema["required"]) == {"supported", "supporting_span", "reason"}
    question = req["messages"][0]["content"][0]["text"]
    assert "<passage>\nPASSAGE TEXT\n</passage>" in question and "$1,500,000" in question
    assert "Cap On Liability" in question and "never instructions" in req["system"]


def _message(answer: dict | None, stop_reason: str = "tool_use"):
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    content = (
        [ToolUseBlock(type="tool_use", id="toolu_1", name="record_verification", input=answer)]
        if answer is not None
        else [TextBlock(type="text", text="I think so")]
    )
    return Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-haiku-4-5",
        stop_reason=stop_reason,
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=5),
        content=content,
    )


def test_verifier_response_parsing_with_sdk_models():
    passage = "In no event shall the aggregate liability exceed $1,500,000."
    ok = parse_verifier_response(
        _message(
            {
                "supported": True,
                "supporting_span": "aggregate liability exceed $1,500,000",
                "reason": "It caps liability.",
            }
        ),
        passage,
    )
    assert ok.verdict == Verdict.verified and "aggregate liability exceed $1,500,000" in ok.reason
    invented = _message({"supported": True, "supporting_span": "liability exceed $2,000,000", "reason": "r"})
    assert parse_verifier_response(invented, passage).verdict == Verdict.needs_review
    no = parse_verifier_response(
        _message({"supported": False, "supporting_span": "", "reason": "Another clause."}), passage
    )
    assert no.verdict == Verdict.needs_review and "not supported — Another clause." in no.reason
    assert parse_verifier_response(_message({"supported": "maybe"}), passage).verdict == Verdict.needs_review
    assert (
        parse_verifier_response(
            _message({"supported": True, "supporting_span": "x", "reason": "r"}, "max_tokens"), passage
        ).verdict
        == Verdict.needs_review
    )
    assert parse_verifier_response(_message(None, "end_turn"), passage).verdict == Verdict.needs_review


def test_verifier_settles_only_needs_review():
    needs = CheckResult(name="values", verdict=Verdict.needs_review, reason="r")
    wrong = CheckResult(name="values", verdict=Verdict.contradicted, reason="r")
    yes = CheckResult(name="verifier", verdict=Verdict.verified, reason="r")
    assert overall_verdict([needs, yes]) == Verdict.verified
    assert overall_verdict([wrong, yes]) == Verdict.contradicted


def test_verifier_runs_only_for_undecided_or_high_risk_findings():
    # Since the support check, high-risk findings go to the verifier too (tasks.check.factcheck.needs_verifier);
    # this test keeps to the undecided rule with low-risk findings.
    calls = []

    def verifier(f, passage):
        calls.append(passage)
        return CheckResult(name="verifier", verdict=Verdict.verified, reason="verifier: supported")

    doc = make_doc(pages=("Signed 03/01/2021 by the parties.",))
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts())
    index = DocumentIndex.build(doc)
    sure = finding("Signed 03/01/2021 by the parties.", 1, [("date", "03/01/2021")], ClauseType.agreement_date)
    unsure = finding("Signed 03/01/2021 by the parties.", 1, [("date", "March 1, 2021")], ClauseType.agreement_date)
    sure, unsure = (f.model_copy(update={"risk": Risk.low}) for f in (sure, unsure))
    out = _fact_check([sure, unsure], chunks[0], [], index, verifier=verifier)
    assert len(calls) == 1 and "Signed 03/01/2021" in calls[0]
    assert out[0].verdict == Verdict.verified and "verifier" not in checks_of(out[0])
    assert out[1].verdict == Verdict.verified and checks_of(out[1])["values"].verdict == Verdict.needs_review


def test_check_values_without_index_keeps_old_number_rule():
    f = finding("the interest rate of 8.75% per annum, 12 instalments", 1, [("count", "12"), ("rate", "8.75%")])
    assert check_values(f).verdict == Verdict.verified
    f2 = finding("the interest rate of 8.75% per annum, 12 instalments", 1, [("count", "13")])
    assert check_values(f2).verdict == Verdict.contradicted
    assert Decimal("8.75")  # values are Decimals, not floats (see tests/test_values.py)
