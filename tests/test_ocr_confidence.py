"""A quote resting on words the OCR read with low confidence is never silently verified (``ocr_confidence``)."""

from __future__ import annotations

from schemas.documents import ExtractedDocument, Locator, PageQuality, PageText, SourceObject
from schemas.findings import CheckResult, Finding, FindingValue, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.factcheck import fact_check
from tasks.check.index import DocumentIndex
from tasks.review.chunk import chunk_text

PAGE1 = "MASTER SERVICES AGREEMENT\n\n1. FEES. Customer shall pay a fixed fee of $25,000 per month."
PAGE2 = (
    "7. LIMITATION OF LIABILITY. In no event shall either party's aggregate liability exceed "
    "$1,500,000 in any contract year.\n\n8. NOTICES. Notices shall be given in writing."
)
PAGE3 = "12. GOVERNING LAW. This Agreement shall be governed by the laws of the State of Delaware."

#: What Tesseract might report for page 2: the amount and a word of the notices clause, under 0.75.
UNCERTAIN = [("$1,500,000", 0.61), ("exceed", 0.72), ("writing.", 0.40)]


def make_doc(ocr: bool = True, uncertain=UNCERTAIN) -> ExtractedDocument:
    src = SourceObject(uri="scan.pdf", name="scan.pdf", local_path="/scan.pdf", size_bytes=1)
    pages = [PageText(number=1, text=PAGE1)]
    quality = PageQuality(ocr=True, ocr_confidence=0.83, extractor="tesseract") if ocr else PageQuality()
    pages.append(
        PageText(
            number=2,
            text=PAGE2,
            quality=quality,
            locator=Locator(page=2, ocr_confidence=0.83) if ocr else None,
            uncertain_words=list(uncertain),
        )
    )
    pages.append(PageText(number=3, text=PAGE3))
    return ExtractedDocument(sha256="d" * 64, source=src, pages=pages)


def finding(evidence: str, page: int, values=()) -> Finding:
    return Finding(
        clause_type=ClauseType.cap_on_liability,
        summary="s",
        risk=Risk.low,
        evidence=evidence,
        page=page,
        values=[FindingValue(name=n, value=v) for n, v in values],
    )


def check(doc: ExtractedDocument, f: Finding, verifier=None):
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=4000, overlap=400)
    return fact_check([f], chunks[0], chunks[1:2], DocumentIndex.build(doc), verifier=verifier, support_model=None)[0]


def by_name(cf) -> dict[str, CheckResult]:
    return {c.name: c for c in cf.checks}


CAP = finding(
    "either party's aggregate liability exceed $1,500,000 in any contract year", 2, [("amount", "$1,500,000")]
)


def test_a_quote_resting_on_uncertain_words_needs_review():
    cf = check(make_doc(), CAP)
    checks = by_name(cf)
    assert checks["grounding"].verdict is Verdict.verified and checks["values"].verdict is Verdict.verified
    ocr = checks["ocr_confidence"]
    assert cf.verdict is Verdict.needs_review and ocr.verdict is Verdict.needs_review
    assert ocr.reason == "OCR confidence 0.61 on page 2: '$1,500,000' read with low confidence (also 'exceed' 0.72)"
    assert ocr.page == 2


def test_the_page_comes_from_the_grounding_not_the_stated_page():
    cf = check(make_doc(), CAP.model_copy(update={"page": 1}))
    assert cf.finding.page == 2 and "on page 2" in by_name(cf)["ocr_confidence"].reason


def test_words_compare_in_the_grounding_form():
    """Case, curly quotes and the punctuation at a word's ends do not hide an uncertain word."""
    doc = make_doc(uncertain=[("EXCEED,", 0.35), ("Party\u2019s", 0.38)])  # 2 of 6 words under 0.5
    cf = check(doc, finding("either party's aggregate liability exceed $1,500,000", 2))
    assert by_name(cf)["ocr_confidence"].reason.startswith("OCR confidence 0.35 on page 2: 'EXCEED,'")
    assert "'Party\u2019s' 0.38" in by_name(cf)["ocr_confidence"].reason


def test_a_quote_on_certain_words_is_verified_as_before():
    cf = check(make_doc(), finding("In no event shall either party's aggregate liability", 2))
    assert cf.verdict is Verdict.verified and "ocr_confidence" not in by_name(cf)


def test_an_uncertain_word_of_another_page_does_not_count():
    doc = make_doc()
    cf = check(doc, finding("governed by the laws of the State of Delaware.", 3))
    assert cf.verdict is Verdict.verified and "ocr_confidence" not in by_name(cf)


def test_a_page_that_is_not_ocr_is_unchanged():
    cf = check(make_doc(ocr=False), CAP)
    assert cf.verdict is Verdict.verified and "ocr_confidence" not in by_name(cf)
    assert DocumentIndex.build(make_doc(ocr=False)).uncertain == {}


def test_a_verifier_does_not_settle_a_low_confidence_word():
    def verifier(f, passage):
        return CheckResult(name="verifier", verdict=Verdict.verified, reason="verifier: supported")

    cf = check(make_doc(), CAP, verifier=verifier)
    assert by_name(cf)["verifier"].verdict is Verdict.verified
    assert cf.verdict is Verdict.needs_review


def test_the_least_certain_word_gives_the_confidence():
    cf = check(make_doc(), finding("Notices shall be given in writing.", 2))
    assert by_name(cf)["ocr_confidence"].reason == "OCR confidence 0.40 on page 2: 'writing.' read with low confidence"


def test_a_quote_running_onto_an_ocr_page_is_checked_there():
    doc = make_doc(uncertain=[("LIMITATION", 0.42), ("LIABILITY.", 0.31)])  # 2 of its 11 words, under 0.5
    cf = check(doc, finding("a fixed fee of $25,000 per month. 7. LIMITATION OF LIABILITY.", 1))
    assert by_name(cf)["grounding"].page == 1
    assert by_name(cf)["ocr_confidence"].reason.startswith("OCR confidence 0.31 on page 2: 'LIABILITY.'")


def test_one_ordinary_word_read_with_low_confidence_does_not_doubt_a_long_quote():
    doc = make_doc(uncertain=[("LIMITATION", 0.52)])  # 1 of 11 words, no figure: the quote still matched
    cf = check(doc, finding("a fixed fee of $25,000 per month. 7. LIMITATION OF LIABILITY.", 1))
    assert "ocr_confidence" not in by_name(cf)
    quote = "In no event shall either party's aggregate liability exceed $1,500,000 in any contract year."
    cf = check(make_doc(uncertain=[("exceed", 0.72)]), finding(quote, 2))  # 1 of 14 words
    assert "ocr_confidence" not in by_name(cf) and cf.verdict is Verdict.verified
    cf = check(make_doc(uncertain=[("$1,500,000", 0.71)]), finding(quote, 2))  # a figure always counts
    assert (
        by_name(cf)["ocr_confidence"].reason == "OCR confidence 0.71 on page 2: '$1,500,000' read with low confidence"
    )


def test_the_index_keeps_the_uncertain_words_of_ocr_pages():
    index = DocumentIndex.build(make_doc())
    assert set(index.uncertain) == {2}
    # as compared: the grounding's form, without the punctuation at the word's ends; as read: unchanged
    assert index.uncertain[2] == [
        ("1,500,000", 0.61, "$1,500,000"),
        ("exceed", 0.72, "exceed"),
        ("writing", 0.40, "writing."),
    ]
