"""Fact-check: quote grounding with normalisation, page correction, and values in the quote."""

from __future__ import annotations

from schemas.documents import ExtractedDocument, PageQuality, PageText, SourceObject
from schemas.findings import Finding, FindingValue, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.chunk import chunk_text
from tasks.factcheck import DocumentIndex, fact_check

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
        pages=[PageText(number=i + 1, text=t, quality=PageQuality(glued_words=(i + 1) in glued))
               for i, t in enumerate(pages)],
    )


def finding(evidence: str, page: int, values=(), clause=ClauseType.cap_on_liability) -> Finding:
    return Finding(clause_type=clause, summary="s", risk=Risk.high, evidence=evidence, page=page,
                   values=[FindingValue(name=n, value=v) for n, v in values])


def run(doc: ExtractedDocument, f: Finding, chunk_no: int | None = None, budget: int = 4000):
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=budget, overlap=budget // 10)
    chunk = chunks[chunk_no if chunk_no is not None else 0]
    neighbours = [c for c in chunks if abs(c.index - chunk.index) == 1]
    return fact_check([f], chunk, neighbours, DocumentIndex.build(doc))[0]


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
    cf = run(doc, finding("governed by the laws of the State of Delaware", 1, [("jurisdiction", "Delaware")],
                          ClauseType.governing_law), chunk_no=0, budget=120)
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
