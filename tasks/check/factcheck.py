"""Fact-check: test every finding against the source text.

Checks, each with a verdict and a reason (stored as ``CheckRow``):

- ``grounding`` — the evidence quote must occur in the document. Quote and source get the same
  normalisation (:func:`tasks.textnorm.match_form`: NFKC, ligatures, quotes, dashes, case,
  whitespace, end-of-line hyphen joins). The search goes chunk → neighbouring chunks → whole
  document; the finding's page is corrected to where the quote truly is. On pages whose text
  layer glues words together, a second search ignores spaces on both sides. A quote that runs
  across a page break is found even when running header or footer lines the extraction did not
  remove sit between its parts (:func:`tasks.check.index.ground_quote`: at most three short lines per side).
- ``values`` — every value the finding states must equal a value inside its quote after
  normalisation (:mod:`tasks.check.values`): dates with dates (day/month order decided per document),
  money with money (amount *and* currency), durations (count and unit), percentages. Section
  references must match a ``Section N`` reference in the quote or a heading of the document,
  never just any dotted number ("USD 1.5 million" is no "Section 1.5"). Remaining numbers must
  occur among the quote's numbers; other text values (parties, jurisdictions) must occur in the
  quote (PITFALLS: "a real quote does not prove the value").
- ``arithmetic`` (only where a finding states shares or totals) — stated instalments must add
  up to the stated total, stated shares to 100 %, and "N equal instalments of X" to the total
  the quote gives.
- ``consistency`` (:func:`check_consistency`, over all findings of a document) — the same term
  (term length, renewal term, notice period, governing law, liability cap, payment amount,
  agreement/effective/expiration date) stated with conflicting values is ``contradicted`` on
  both sides, each pointing at the other finding.
- ``redaction`` (only where the quote or a stated value holds a confidential-treatment mark such as
  ``[***]``, :mod:`tasks.check.redactions`) — ``needs_review``: the value is redacted in the filed
  copy, so the finding is never verified on it, and never contradicted for lacking it (``values``
  leaves redacted values to this check).
- ``ocr_confidence`` (only for a grounded quote on an OCR'd page, :func:`check_ocr_confidence`) —
  ``needs_review`` when the quote rests on words the OCR read with low confidence (the page's
  ``uncertain_words``), naming the least certain one and its confidence.
- ``verifier`` (optional, ``DOCREVIEW_VERIFIER_ENABLED``) — for findings the deterministic checks
  leave at ``needs_review``, a model's cited answer over the source passage (a plain-text ``document``
  block with Anthropic Citations on) and a structured verdict on it (:func:`tasks.check.verifier.verify`).
  Its verdict rests on what the API cited: ``verified`` only when a well-formed citation covers the
  finding's quote; the cited range, located in the document, then becomes the finding's evidence and
  page, with the section in the check's reason. A citation elsewhere than the quote is recorded as a
  disagreement (``needs_review``).

The overall verdict is the worst of the checks: contradicted > unsupported > needs_review >
verified; a ``verifier`` check that is ``verified`` settles ``needs_review`` checks (and only those),
except ``redaction`` and ``ocr_confidence``: the verifier reads the same filed, OCR'd text
(:data:`tasks.check.verdicts.UNSETTLED_CHECKS`).

A high-risk CUAD category with no finding in a fully reviewed document is recorded as an
:class:`Absence` (:func:`find_absences`) with verdict ``needs_review``, for the review queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import nullcontext
from decimal import Decimal
from typing import TYPE_CHECKING

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import Chunk, page_for_offset
from schemas.findings import CheckedFinding, CheckResult, Finding, Verdict
from schemas.policy import ResiliencePolicy
from schemas.review import LLMCallRecord
from schemas.taxonomy import ClauseType
from tasks.check.index import (  # noqa: F401 - MIN_SQUEEZED_QUOTE also imported from here
    MIN_SQUEEZED_QUOTE,
    DocumentIndex,
    Grounding,
    ground_quote,
    word_key,
)
from tasks.check.redactions import check_redaction, find_redactions, is_redacted
from tasks.check.support import SupportModel, check_support
from tasks.check.support import configured_model as configured_support_model
from tasks.check.values import (
    NUMBER_WORDS,
    DateOrder,
    Kind,
    Match,
    Value,
    compare,
    covered_spans,
    extract_values,
    section_refs,
)
from tasks.check.verdicts import RULE_REASONS, VERDICT_SEVERITY, overall_verdict  # noqa: F401 - also imported from here
from tasks.check.verifier import VERIFIER_ATTEMPT_BASE, VerifierOutcome, make_verifier_client, verify
from tasks.check.xbrl import check_xbrl

if TYPE_CHECKING:
    from schemas.settings import Settings
from tasks.review.filing import figure_name
from tasks.review.resilience import llm_slot, model_caller
from tasks.runnames import for_document
from tasks.textnorm import match_form, numbers_in


def check_grounding(finding: Finding, grounding: Grounding, index: DocumentIndex) -> CheckResult:
    """Verdict of the ``grounding`` check from a :class:`Grounding`."""
    if not finding.evidence.strip():
        return CheckResult(name="grounding", verdict=Verdict.needs_review, reason="no evidence quote given")
    if not grounding.found:
        return CheckResult(
            name="grounding",
            verdict=Verdict.unsupported,
            reason=f"quote not found in the document (closest passage in its chunk is {grounding.similarity:.0f}% similar)",
        )
    where = f"found in the {grounding.scope} {index.on(grounding.page)}"
    if grounding.page != finding.page:
        where += f" (stated {index.on(finding.page).split(' ', 1)[1]} corrected)"
    if grounding.across_pages:
        where += (
            f", continuing {index.on(grounding.across_pages)} past the running header or footer lines at the page break"
        )
    if grounding.ignoring_spaces:
        glued = grounding.page in index.glued_pages
        return CheckResult(
            name="grounding",
            verdict=Verdict.verified if glued else Verdict.needs_review,
            reason=where
            + (
                " ignoring spaces: the page's text layer glues words together"
                if glued
                else " only when spaces are ignored"
            ),
            page=grounding.page,
        )
    return CheckResult(name="grounding", verdict=Verdict.verified, reason=where, page=grounding.page)


# --------------------------------------------------------------------------------------------
# OCR confidence
# --------------------------------------------------------------------------------------------

#: Share of a quote's distinct words read with a confidence under :data:`OCR_POOR_CONFIDENCE` from which the
#: quote's wording itself is in doubt (the check applies even when none of them carries a value). On the
#: scanned sample page of ``docreview samples`` (Tesseract 5.3, 200 dpi), flagging every quote with any
#: uncertain word sent 6 of 7 findings to review, most for correct words such as "limited" (0.17) or
#: "Customer." (0.58); on six scanned CUAD contracts (benchmarks/scanned_review.py), counting every word
#: under 0.90 toward a 15 % share still sent 52 of 62 findings.
OCR_DOUBT_SHARE = 0.10
#: Word confidence under which an ordinary word counts toward :data:`OCR_DOUBT_SHARE`: at 0.5, 48 % of
#: the words Tesseract flags are misread (benchmarks/ocr.py calibration; 38 % at 0.90, the threshold
#: that still applies to words carrying a figure, where a misread changes what the clause says).
OCR_POOR_CONFIDENCE = 0.5

_VALUE_CHARS = re.compile(r"[\d$€£¥%]")


def _carries_value(word: str) -> bool:
    """True for a word holding a figure, amount or rate (a digit, a currency sign or ``%``): a misread
    there changes what the clause says (``$l,000,000``, ``3O days``)."""
    return bool(_VALUE_CHARS.search(word))


def check_tagged_figure(finding: Finding, index: DocumentIndex) -> CheckResult | None:
    """The ``xbrl`` check (:func:`tasks.check.xbrl.check_xbrl`) of a filing's key-figure finding when the
    filing carries inline XBRL facts; None otherwise. The figure is the finding's ``figure`` value (else
    its first value) and its concept comes from the statement line it quotes
    (:func:`tasks.review.filing.figure_name`)."""
    if not index.facts or finding.clause_type.value != "key_figure":
        return None
    values = finding.values_dict()
    raw = values.get("figure") or next(iter(values.values()), "")
    if not raw:
        return None
    return check_xbrl(
        finding.evidence,
        finding.summary,
        raw,
        figure_name(finding.evidence),
        index.period_facts,
        [f for f in index.facts if f.problem is None],  # an unusable fact neither verifies nor contradicts
    )


def check_ocr_confidence(finding: Finding, grounding: Grounding, index: DocumentIndex) -> CheckResult | None:
    """The ``ocr_confidence`` check of a grounded quote, or ``None`` when it does not apply.

    It applies when the quote lies on an OCR'd page (``PageQuality.ocr``; the pages from the
    grounding's to where the quote ends) and its words among that page's ``uncertain_words`` (the
    words Tesseract read with a confidence under ``tasks.ingest.ocr.LOW_CONFIDENCE``, both compared
    in :func:`word_key` form) carry a value (:func:`_carries_value`, or a word of the finding's
    stated values) or, read under :data:`OCR_POOR_CONFIDENCE`, make at least :data:`OCR_DOUBT_SHARE` of its
    distinct words. The check is then
    ``needs_review``: "OCR confidence 0.61 on page 3: 'l,000,000' read with low confidence", with the
    lowest confidence (0..1, two decimals) among the words the quote rests on and the others after
    it. A model verifier reads the same OCR text, so its answer does not settle this check
    (:data:`tasks.check.verdicts.UNSETTLED_CHECKS`). ``None`` for a quote not found, on pages
    without OCR, or resting on no uncertain word.
    """
    if not grounding.found or not index.uncertain or grounding.page is None:
        return None
    first = grounding.page
    last = grounding.across_pages or first
    if grounding.end is not None:
        last = max(last, page_for_offset(index.page_starts, max(grounding.end - 1, 0)))
    quote_words = {word_key(w) for w in match_form(finding.evidence)[0].split(" ")}
    quote_words.discard("")
    hits = sorted(
        (confidence, page, word)
        for page in range(first, last + 1)
        for key, confidence, word in index.uncertain.get(page, [])
        if key in quote_words
    )
    if not hits:
        return None
    stated = {word_key(w) for v in finding.values_dict().values() for w in match_form(str(v))[0].split(" ")}
    decisive = [h for h in hits if _carries_value(h[2]) or word_key(h[2]) in stated]
    poor = {word_key(w) for c, _, w in hits if c < OCR_POOR_CONFIDENCE}
    share = len(poor) / max(1, len(quote_words))
    if not decisive and share < OCR_DOUBT_SHARE:
        return None  # a few ordinary words read with low confidence: the quote still matched the page
    confidence, page, word = (decisive or hits)[0]
    reason = f"OCR confidence {confidence:.2f} on page {page}: {word!r} read with low confidence"
    others = list(dict.fromkeys(f"{w!r} {c:.2f}" for c, _, w in hits[1:] if w != word))
    if others:
        reason += f" (also {', '.join(others[:4])}{' …' if len(others) > 4 else ''})"
    return CheckResult(name="ocr_confidence", verdict=Verdict.needs_review, reason=reason, page=page)


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

#: Value names that hold a section reference, checked as such even without "Section" in the value.
_SECTION_NAMES = re.compile(r"section|article|clause_ref|reference|paragraph", re.I)
#: Words that say nothing about which party or place a value names.
_GENERIC_WORDS = frozenset(
    [
        "the",
        "and",
        "of",
        "for",
        "a",
        "an",
        "to",
        "in",
        "on",
        "by",
        "inc",
        "inc.",
        "incorporated",
        "corp",
        "corporation",
        "llc",
        "l.l.c",
        "ltd",
        "limited",
        "company",
        "co",
        "lp",
        "l.p",
        "llp",
        "plc",
        "gmbh",
        "ag",
        "sa",
        "s.a",
        "bv",
        "nv",
        "state",
        "commonwealth",
        "laws",
        "law",
    ]
)
_YES_NO = frozenset({"yes", "no", "true", "false", "n/a", "none", "not stated"})
#: Value names that say the value is a date, an amount, a percentage or a period.
_TYPED_NAMES = re.compile(
    r"date|amount|fee|price|payment|money|sum|cap|limit|percent|rate|duration|period|term|"
    r"notice|total|instal|royalt",
    re.I,
)


def _occurs(needle: str, hay: str) -> bool:
    """``needle`` in ``hay`` (both :func:`match_form`) on token boundaries: ``$1,500`` is not in ``$1,500,000``
    and ``CHF 1`` is not in ``CHF 1'250'000.00`` (a group separator — ``.``, ``,``, ``'`` or ``’`` — followed by
    a digit continues the number)."""
    if not needle:
        return False
    start = 0
    while True:
        pos = hay.find(needle, start)
        if pos < 0:
            return False
        before = hay[pos - 1] if pos else " "
        after = hay[pos + len(needle) : pos + len(needle) + 2]
        ok_before = not (before.isalnum() and needle[0].isalnum())
        ok_after = not after or not (
            (after[0].isalnum() and needle[-1].isalnum())
            or (after[0] in ".,'’" and after[1:2].isdigit())  # "CHF 1" is not in "CHF 1'250'000.00"
            or (after[0].isdigit() and needle[-1] in ".,")
        )
        if ok_before and ok_after:
            return True
        start = pos + 1


def _squash(text: str) -> str:
    """Lower case, one space per whitespace run (hyphens kept, unlike :func:`match_form`)."""
    return re.sub(r"\s+", " ", text.lower()).strip()


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.&'-]*", match_form(text)[0]) if w.strip(".") not in _GENERIC_WORDS}


#: Words that make the date after them a start ("commence upon April 1, 1999") or an end
#: ("expire on", "until"); the nearest one before the date, within :data:`_ROLE_WINDOW` characters, decides.
_START_CUE = re.compile(r"\b(?:commenc\w*|begin\w*|start\w*|effective|effect|dated|made|entered|from)\b", re.I)
_END_CUE = re.compile(r"\b(?:expir\w*|terminat\w*|end|ends|ending|until|through|thru|last\s+day)\b", re.I)
#: A period that is a term or renewal length: right after "renew for (successive)", "for a period of",
#: "term of" …, or right before "periods", "terms", "renewal" ("one (1) month periods") — unless a
#: notice follows it ("sixty (60) days prior to", "30 days' written notice").
_TERM_BEFORE = re.compile(
    r"(?:\b(?:renew\w*|extend\w*|continue\w*)\s+(?:automatically\s+)?(?:for\s+)?(?:an?\s+|one\s+or\s+more\s+)?"
    r"(?:(?:additional|successive|further|consecutive|subsequent)\s+)?(?:(?:periods?|terms?)\s+of\s+)?"
    r"|\b(?:term|period)\s+of\s+)$",
    re.I,
)
_TERM_AFTER = re.compile(r"^\s*(?:periods?|terms?|renewal|increments?)\b", re.I)
_NOTICE_AFTER = re.compile(r"^[^.;]{0,40}?\b(?:prior|before|in\s+advance|notice|written|notif\w*)\b", re.I)
_ROLE_WINDOW = 60

#: Claimed categories whose date is an end (expiration) or a start (effective, agreement).
_END_DATES = frozenset({"expiration_date"})
_START_DATES = frozenset({"effective_date", "agreement_date"})


def _date_role(text: str, at: int) -> str | None:
    """``"start"`` or ``"end"``: which cue (:data:`_START_CUE`, :data:`_END_CUE`) ends nearest before
    ``text[at]`` within :data:`_ROLE_WINDOW` characters; None when neither occurs there."""
    before = text[max(0, at - _ROLE_WINDOW) : at]
    ends = {
        role: max((m.end() for m in rx.finditer(before)), default=-1)
        for role, rx in (("start", _START_CUE), ("end", _END_CUE))
    }
    role = max(ends, key=ends.__getitem__)
    return role if ends[role] >= 0 else None


def _excerpt(quote: str, start: int, end: int, before: int = 30, after: int = 0) -> str:
    """``quote[start:end]`` with about ``before``/``after`` characters around it, cut at spaces."""
    lo = quote.rfind(" ", 0, max(0, start - before)) + 1 if start > before else 0
    hi = quote.find(" ", end + after) if after else end
    return " ".join(quote[lo : hi if hi >= 0 else len(quote)].split())


def value_role_problem(category: ClauseType, stated: Value, matches: list[Value], quote: str) -> str | None:
    """Why a stated value that equals a value of the quote plays another part there, else None.

    Equality is not enough: "the initial term ends on April 1, 1999" is not supported by a quote
    saying the term "shall commence upon April 1, 1999". For an Expiration Date whose every equal
    date in ``quote`` follows a start word (commence, begin, effective, dated, from …) nearer than
    an end word (expire, terminate, end, until, through …), and for an Effective or Agreement Date
    whose every equal date follows an end word, and for a Notice Period To Terminate Renewal
    whose every equal period is a term or renewal length ("renew for successive one (1) month
    periods") with no notice after it ("… days prior to"), returns the
    reason (the finding is ``needs_review``). ``matches`` are the quote's values equal to
    ``stated`` (:func:`tasks.check.values.extract_values` offsets)."""
    cat = category.value
    if stated.kind is Kind.date and cat in _END_DATES | _START_DATES:
        roles = {_date_role(quote, q.start) for q in matches}
        wrong = "start" if cat in _END_DATES else "end"
        if roles == {wrong}:
            return (
                f"the quote gives this date as {'a start' if wrong == 'start' else 'an end'} "
                f"({_excerpt(quote, matches[0].start, matches[0].end)!r}), not as the claimed "
                f"{'end' if wrong == 'start' else 'start'}"
            )
    if stated.kind is Kind.duration and cat == "notice_period_to_terminate_renewal":

        def term_length(q: Value) -> bool:
            before, after = quote[max(0, q.start - _ROLE_WINDOW) : q.start], quote[q.end : q.end + _ROLE_WINDOW]
            return bool(_TERM_BEFORE.search(before) or _TERM_AFTER.search(after)) and not _NOTICE_AFTER.search(after)

        if all(term_length(q) for q in matches):
            return (
                f"the quote gives this period as a term or renewal length "
                f"({_excerpt(quote, matches[0].start, matches[0].end, after=20)!r}), not as a notice period"
            )
    return None


def check_values(finding: Finding, index: DocumentIndex | None = None, offset: int | None = None) -> CheckResult:
    """Every value the finding states must equal (after normalisation) a value in its quote.

    ``index`` gives the document's date order and headings; ``offset`` (where the quote is in
    the document) names the enclosing section. A section reference must be referenced in the
    quote or be the section (or a parent of the section) the quote sits in. Without ``index``
    numeric dates stay ambiguous and section references must be in the quote. Returns ``contradicted``
    when a value disagrees with the quote, ``needs_review`` when it agrees only under an
    undecided day/month order, the quote's own words and figures disagree or the equal value plays
    another part in the quote (:func:`value_role_problem`), else ``verified``. A redacted stated value
    (``"$[***]"``, ``"redacted"``; :mod:`tasks.check.redactions`) is not compared — the ``redaction``
    check reports it — unless the quote holds no redaction mark (then ``needs_review``).
    """
    order = index.date_order if index else DateOrder.unknown
    heads = index.sections_at(offset) if index else set()
    quote = finding.evidence
    qnorm = match_form(quote)[0]
    quote_vals = extract_values(quote, order)
    quote_refs = set(section_refs(quote))
    quote_numbers = set(numbers_in(quote))
    quote_redacted = any(q.kind is Kind.redacted for q in quote_vals)
    wrong: list[str] = []
    unsure: list[str] = []
    counted = 0
    for item in finding.values:
        text = item.value
        label = f"{item.name}={text!r}"
        vnorm = match_form(text)[0]
        if not vnorm or vnorm in _YES_NO:
            continue
        if is_redacted(text) and not find_redactions(text):  # "redacted" in words: no value to compare
            if not quote_redacted:
                counted += 1
                unsure.append(f"{label}: says the value is redacted, but the quote holds no redaction mark")
            continue
        refs = section_refs(text)
        if not refs and _SECTION_NAMES.search(item.name) and re.fullmatch(r"[\d.()a-z]+|[ivxlc]+", vnorm):
            refs = [vnorm.rstrip(".")]
        for ref in refs:
            counted += 1
            if ref in quote_refs or ref.split("(")[0] in heads:
                continue
            wrong.append(
                f"{label}: section {ref} is neither referenced in the quote nor the section the quote is in"
                + (f" ({', '.join(sorted(heads))})" if heads else "")
            )
        typed = list(extract_values(text, order))
        if not typed and not refs and _TYPED_NAMES.search(item.name) and re.search(r"\d|[$€£¥₹]", text):
            counted += 1
            unsure.append(
                f"{label}: cannot be read as a date, amount, percentage or period; "
                "a person has to compare it with the quote"
            )
            continue
        for v in typed:
            if v.kind is Kind.redacted:  # the redaction check reports it (tasks.check.redactions)
                if not quote_redacted:
                    counted += 1
                    unsure.append(f"{label}: states a redaction ({v.raw!r}), but the quote holds none")
                continue
            counted += 1
            same_kind = [q for q in quote_vals if q.kind is v.kind]
            results = [(compare(v, q), q) for q in same_kind]
            equal = [q for r, q in results if r is Match.equal]
            maybe = [q for r, q in results if r is Match.ambiguous]
            if equal:
                role = value_role_problem(finding.clause_type, v, equal, quote)
                if role:
                    unsure.append(f"{label}: {role}")
                    continue
                flawed = [q for q in equal if q.problem]
                # A stated value cut out of a sound quote value ("five percent (25%)" from
                # "twenty-five percent (25%)") is that value.
                cut = any(not q.problem and _squash(v.raw) in _squash(q.raw) for q in equal)
                if (v.problem and not cut) or (flawed and len(flawed) == len(equal)):
                    unsure.append(
                        f"{label}: {(v.problem or flawed[0].problem)} in {(v.raw if v.problem else flawed[0].raw)!r}"
                    )
                continue
            if maybe:
                unsure.append(
                    f"{label}: equals {maybe[0].raw!r} only under one day/month order "
                    f"(the document's order is {order.value})"
                )
                continue
            vform = match_form(v.raw)[0]
            # "Rs. 2" written inside the quote's "Rs. 2 crore" is part of another amount, not this one
            inside = any(q.amount != v.amount and _occurs(vform, match_form(q.raw)[0]) for q in same_kind)
            if _occurs(vform, qnorm) and not inside:
                if v.problem:  # the quote itself has it: the source needs a human look
                    unsure.append(f"{label}: {v.problem} (as written in the quote)")
                continue  # written exactly as in the quote
            shown = "; ".join(q.show() for q in same_kind[:6]) or "none"
            wrong.append(
                f"{label}: {v.kind.value} {v.show()} is not in the quote ({v.kind.value}s in the quote: {shown})"
            )
        cover = covered_spans(text, typed)
        leftovers = []
        for m in re.finditer(r"(?<![\w.])\d+(?:[.,]\d+)*", text):
            if not cover.covers(m.start(), m.end()):
                leftovers.append(m.group(0))
        for raw in leftovers:
            counted += 1
            num = numbers_in(raw)[0] if numbers_in(raw) else raw
            if num not in quote_numbers:
                wrong.append(
                    f"{label}: number {num} is not in the quote (numbers in the quote: "
                    f"{', '.join(sorted(quote_numbers)[:8]) or 'none'})"
                )
        if typed or refs or leftovers:
            continue
        counted += 1
        if _occurs(vnorm, qnorm):
            continue
        words = _words(text)
        present = {w for w in words if _occurs(w, qnorm)}
        if words and present == words:
            continue
        if present:
            unsure.append(
                f"{label}: only some of its words occur in the quote ({', '.join(sorted(words - present))} missing)"
            )
        else:
            wrong.append(f"{label}: not in the quote")
    if wrong:
        return CheckResult(name="values", verdict=Verdict.contradicted, reason="; ".join(wrong + unsure))
    if unsure:
        return CheckResult(name="values", verdict=Verdict.needs_review, reason="; ".join(unsure))
    return CheckResult(
        name="values",
        verdict=Verdict.verified,
        reason=f"all {counted} value(s) agree with the quote" if counted else "no values to check",
    )


# --------------------------------------------------------------------------------------------
# arithmetic
# --------------------------------------------------------------------------------------------

_TOTAL_NAME = re.compile(r"total|aggregate|sum|overall", re.I)
_PART_NAME = re.compile(r"instal+ments?|tranche|milestone|payment_?\d|part_?\d|first|second|third|fourth|final", re.I)
_SHARE_NAME = re.compile(r"share|split|allocation|portion", re.I)
_EQUAL_INSTALMENTS = re.compile(
    rf"(?P<n>\b\d+|{NUMBER_WORDS})\s*(?:\(\s*\d+\s*\)\s*)?(?:equal|equivalent)\s+(?:\w+\s+){{0,2}}?instal+ments?\s+of\s+",
    re.I,
)


def check_arithmetic(finding: Finding, index: DocumentIndex | None = None) -> CheckResult | None:
    """Shares and totals a finding states must add up; ``None`` when it states none.

    Detects: values named like a total (``total``, ``aggregate``) next to two or more money
    values named like parts (``instalment_1``, ``first payment``, ``tranche``) — the parts must
    sum to the total (same currency); two or more percentages named like shares (``share``,
    ``split``) — they must sum to 100; a quote saying ``N equal instalments of X`` and giving
    one other amount — N × X must equal it.
    """
    from tasks.check.values import words_to_number

    order = index.date_order if index else DateOrder.unknown
    money: list[tuple[str, Value]] = []
    shares: list[tuple[str, Value]] = []
    for item in finding.values:
        for v in extract_values(item.value, order):
            if v.kind is Kind.money:
                money.append((item.name, v))
            elif v.kind is Kind.percent and _SHARE_NAME.search(item.name):
                shares.append((item.name, v))
    reasons: list[str] = []
    wrong = False
    totals = [v for n, v in money if _TOTAL_NAME.search(n)]
    parts = [v for n, v in money if _PART_NAME.search(n) and not _TOTAL_NAME.search(n)]
    if len(totals) == 1 and len(parts) >= 2:
        total = totals[0]
        if len({p.unit for p in parts} | {total.unit}) > 1:
            wrong = True
            reasons.append("the parts and the total are in different currencies")
        else:
            s = sum((p.number for p in parts), Decimal(0))
            if s != total.amount:
                wrong = True
                reasons.append(
                    f"the {len(parts)} stated parts sum to {s.normalize():f}, the stated total is {total.number.normalize():f}"
                )
            else:
                reasons.append(f"the {len(parts)} stated parts sum to the stated total {total.show()}")
    if len(shares) >= 2:
        s = sum((v.number for _, v in shares), Decimal(0))
        if s != 100:
            wrong = True
            reasons.append(f"the stated shares sum to {s.normalize():f}%, not 100%")
        else:
            reasons.append("the stated shares sum to 100%")
    quote_unsure = None
    m = _EQUAL_INSTALMENTS.search(finding.evidence)
    if m:
        n = Decimal(m.group("n")) if m.group("n").isdigit() else words_to_number(m.group("n"))
        qmoney = [v for v in extract_values(finding.evidence, order) if v.kind is Kind.money]
        inst = [v for v in qmoney if v.start >= m.end() - 1 and v.start <= m.end() + 3]
        others = [v for v in qmoney if v not in inst]
        if n and inst and len(others) == 1:
            product = n * inst[0].number
            if product == others[0].amount:
                reasons.append(f"{n:f} equal instalments of {inst[0].show()} make {others[0].show()}")
            else:
                quote_unsure = (
                    f"the quote's {n:f} equal instalments of {inst[0].show()} make {product.normalize():f}, "
                    f"but it states {others[0].show()}"
                )
                reasons.append(quote_unsure)
    if not reasons:
        return None
    verdict = Verdict.contradicted if wrong else (Verdict.needs_review if quote_unsure else Verdict.verified)
    return CheckResult(name="arithmetic", verdict=verdict, reason="; ".join(reasons))


#: Support score below which a grounded finding is sent to the model verifier (when it runs).
WEAK_SUPPORT = 0.5


def needs_verifier(finding: Finding, checks: list[CheckResult], weak_support: float = WEAK_SUPPORT) -> bool:
    """Whether a finding gets the model verifier's second call: its quote was found (``grounding``
    not ``unsupported``), nothing already contradicts it, and it has ``high`` risk, a ``support``
    score below ``weak_support`` (probability, 0..1) or an undecided (``needs_review``) verdict."""
    by = {c.name: c for c in checks}
    if "grounding" in by and by["grounding"].verdict is Verdict.unsupported:
        return False
    verdict = overall_verdict(checks)
    if verdict in (Verdict.contradicted, Verdict.unsupported):
        return False
    support = by.get("support")
    weak = support is not None and (
        support.verdict is not Verdict.verified or (support.score is not None and support.score < weak_support)
    )
    return finding.risk.value == "high" or weak or verdict is Verdict.needs_review


#: Characters of context on each side of the quote in the verifier's passage.
VERIFIER_CONTEXT_CHARS = 800


def verifier_passage(
    chunk: Chunk, neighbours: list[Chunk], quote: str, offset: int | None, context: int = VERIFIER_CONTEXT_CHARS
) -> str:
    """The passage a verifier call sees: the quote where it stands in ``chunk`` or a neighbour,
    with ``context`` characters on each side (cut at the chunk's ends). The quote is looked up
    verbatim, then by document ``offset`` in a chunk whose text is its whole document range (a
    routed review unit is not); failing both, the chunk and its neighbours joined."""
    ordered = sorted([chunk, *neighbours], key=lambda c: c.index)
    for c in ordered:
        at = c.text.find(quote) if quote else -1
        if at >= 0:
            return c.text[max(0, at - context) : at + len(quote) + context]
    if offset is not None:
        for c in ordered:
            if c.char_start <= offset < c.char_end and len(c.text) == c.char_end - c.char_start:
                at = offset - c.char_start
                return c.text[max(0, at - context) : at + len(quote) + context]
    return "\n".join(c.text for c in ordered)


Verifier = Callable[[Finding, str], "VerifierOutcome | CheckResult | tuple[CheckResult, LLMCallRecord | None]"]


def fact_check(
    findings: list[Finding],
    chunk: Chunk,
    neighbours: list[Chunk],
    index: DocumentIndex,
    verifier: Verifier | None = None,
    support_model: SupportModel | str | None = "default",
    calls: list[LLMCallRecord] | None = None,
    weak_support: float = WEAK_SUPPORT,
) -> list[CheckedFinding]:
    """Run every per-finding check on every finding of one chunk; returns them in input order.

    Checks: ``grounding``, ``support`` (grounded quotes only), ``values``, ``arithmetic`` (when
    it applies), ``redaction`` (a redaction mark in the quote or a stated value,
    :func:`tasks.check.redactions.check_redaction`), ``ocr_confidence`` (a grounded quote resting on
    low-confidence OCR words, :func:`check_ocr_confidence`) and, with a ``verifier``, ``verifier``
    for the findings :func:`needs_verifier` selects (``weak_support`` is the support probability
    below which it runs). ``verifier`` is called as ``verifier(finding, passage)`` with the quote
    and its context as the passage (:func:`verifier_passage`) and returns a :class:`CheckResult` or
    ``(CheckResult, LLMCallRecord | None)`` or a :class:`~tasks.check.verifier.VerifierOutcome` (a cited
    verification: when it rests on a citation covering the quote, the cited text is located in the
    document and becomes the finding's evidence, its page the finding's page); records are appended to
    ``calls`` when given.
    ``support_model`` is the category model of the ``support`` check (:mod:`tasks.check.support`;
    ``"default"`` loads the shipped file); ``None`` leaves the ``support`` check out (the fact-check
    as it was before it, kept for before/after figures).
    """
    out = []
    for ordinal, finding in enumerate(findings):
        grounding = ground_quote(finding.evidence, index, chunk, neighbours)
        checks = [check_grounding(finding, grounding, index)]
        if grounding.found and support_model is not None:
            checks.append(check_support(finding, support_model, index.heading_path(grounding.offset)))
        checks.append(check_values(finding, index, grounding.offset if grounding.found else None))
        arithmetic = check_arithmetic(finding, index)
        if arithmetic is not None:
            checks.append(arithmetic)
        tagged = check_tagged_figure(finding, index)
        if tagged is not None:
            checks.append(tagged)
        for extra in (check_redaction(finding), check_ocr_confidence(finding, grounding, index)):
            if extra is not None:
                checks.append(extra)
        cited: Grounding | None = None
        if verifier is not None and needs_verifier(finding, checks, weak_support):
            passage = verifier_passage(chunk, neighbours, finding.evidence, grounding.offset)
            got = verifier(finding, passage)
            if isinstance(got, VerifierOutcome):
                result, records = got.check, got.records
                if got.cited:  # the API's cited range: located in the document, it becomes the evidence
                    cited = ground_quote(got.cited, index, chunk, neighbours)
                    if cited.found:
                        section = index.heading_path(cited.offset)
                        where = f"page {cited.page}" + (f", § {section}" if section else "")
                        result = result.model_copy(update={"page": cited.page, "reason": f"{result.reason} ({where})"})
                        evidence = got.cited.strip()
                    else:
                        cited = None
            else:
                result, record = got if isinstance(got, tuple) else (got, None)
                records = [record] if record is not None else []
            checks.append(result)
            if calls is not None:
                for record in records:
                    calls.append(record.model_copy(update={"attempt": VERIFIER_ATTEMPT_BASE + 1 + len(calls)}))
        page = grounding.page if grounding.found and grounding.page else finding.page
        update: dict[str, object] = {"page": page}
        if cited is not None:  # Claude's own evidence: the cited range and its page
            update = {"page": cited.page or page, "evidence": evidence}
        out.append(
            CheckedFinding(
                finding=finding.model_copy(update=update),
                chunk_index=chunk.index,
                ordinal=ordinal,
                stated_page=finding.page,
                verdict=overall_verdict(checks),
                checks=checks,
            )
        )
    return out


@task(
    name="fact-check-findings",
    task_run_name=for_document("fact-check", lambda p: f"chunk {p['chunk'].index + 1}"),
    cache_policy=NO_CACHE,
)
def fact_check_findings(
    findings: list[Finding],
    chunk: Chunk,
    neighbours: list[Chunk],
    index: DocumentIndex,
    backend: str = "rules",
    database_url: str | None = None,
    run_id: str | None = None,
    policy: ResiliencePolicy | None = None,
) -> list[CheckedFinding]:
    """Prefect task: :func:`fact_check` for the findings of one reviewed chunk.

    It runs beside the review (submitted as soon as the chunk's review returns). With the model
    verifier on (:func:`_configured_verifier`: ``DOCREVIEW_VERIFIER_ENABLED``, by default on for
    model backends and off for ``rules``), selected findings also get the ``verifier`` check; its
    calls are stored in ``llm_calls`` (``database_url``, ``run_id``) like the review's own, and
    each holds a slot of the run's LLM concurrency limit (``policy``) like a review call.
    """
    return _fact_check_chunks([(findings, chunk, neighbours)], index, backend, database_url, run_id, policy)


@task(
    name="fact-check-document",
    cache_policy=NO_CACHE,
    task_run_name=for_document("fact-check", lambda p: f"{len(p['reviewed'])} chunks"),
)
def fact_check_document(
    reviewed: list[tuple[list[Finding], Chunk, list[Chunk]]],
    index: DocumentIndex,
    backend: str = "rules",
    database_url: str | None = None,
    run_id: str | None = None,
    policy: ResiliencePolicy | None = None,
) -> list[CheckedFinding]:
    """Prefect task: :func:`fact_check_findings` for every reviewed chunk of one document at once.

    ``reviewed`` holds ``(findings, chunk, neighbouring chunks)`` per chunk with findings. Used
    after the offline review (:func:`tasks.review.reviewer.review_chunks_offline`), which
    returns all of a document's chunks together; the checks, the verifier and the stored calls
    are those of :func:`fact_check_findings`, chunk by chunk.
    """
    return _fact_check_chunks(reviewed, index, backend, database_url, run_id, policy)


def _fact_check_chunks(
    reviewed: list[tuple[list[Finding], Chunk, list[Chunk]]],
    index: DocumentIndex,
    backend: str,
    database_url: str | None,
    run_id: str | None,
    policy: ResiliencePolicy | None = None,
) -> list[CheckedFinding]:
    from schemas.settings import Settings

    settings = Settings()
    model = configured_support_model(settings.support_threshold)
    verifier = _configured_verifier(backend, settings, policy)
    out: list[CheckedFinding] = []
    for findings, chunk, neighbours in reviewed:
        calls: list[LLMCallRecord] = []
        out += fact_check(
            findings,
            chunk,
            neighbours,
            index,
            verifier=verifier,
            support_model=model if model is not None else "rules",
            calls=calls,
            weak_support=settings.verifier_weak_support,
        )
        if calls and database_url and run_id:
            from tasks.store.persist import save_llm_calls, unit_of_work

            with unit_of_work(database_url) as session:
                save_llm_calls.fn(session, run_id, chunk.document_sha256, chunk.index, calls)
    return out


def _configured_verifier(backend: str, settings: Settings, policy: ResiliencePolicy | None = None) -> Verifier | None:
    """The verifier callable for ``backend`` under ``settings`` (None when it is off).

    The verifier calls the Anthropic API. Without ``ANTHROPIC_API_KEY`` it is off in the default
    (``auto``) mode — e.g. a Bedrock-only deployment — and, when forced on, gives a
    ``needs_review`` check saying it could not run. With a ``policy`` each call holds one of the
    run's LLM slots (:func:`tasks.review.resilience.llm_slot`): the verifier's calls go to the same
    API as the review's and count against the same ``llm_concurrency``, the operator's way of
    staying under the API's rate limits."""
    if not settings.verifier_on(backend):
        return None
    if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
        if settings.verifier_enabled is None:
            return None
        return lambda finding, passage: CheckResult(
            name="verifier",
            verdict=Verdict.needs_review,
            reason="verifier enabled but ANTHROPIC_API_KEY is not set; not run",
        )
    client = make_verifier_client(settings)
    prices = settings.llm_prices or None
    send = model_caller(client.messages.create, policy)  # 429/529/5xx retried as the review's calls are

    def verify_finding(finding: Finding, passage: str) -> VerifierOutcome:
        with llm_slot(policy) if policy is not None else nullcontext():
            return verify(
                finding,
                passage,
                client,
                settings.verifier_model,
                settings.verifier_max_tokens,
                prices=prices,
                send=send,
            )

    return verify_finding


# --------------------------------------------------------------------------------------------
# consistency across the findings of a document
# --------------------------------------------------------------------------------------------


"""``cue``: a pattern that must occur in the quote, in the value's sentence and within
:data:`CUE_WINDOW` characters before the value, for the value to state *this document's* term ("This Agreement, dated as of …");
quotes that recite another agreement (``WHEREAS``, ``that certain``) state no term."""


# --------------------------------------------------------------------------------------------
# evidence of absence
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# optional verifier model (Anthropic Citations)
# --------------------------------------------------------------------------------------------
