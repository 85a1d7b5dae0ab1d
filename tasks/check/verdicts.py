"""One verdict from a finding's checks: the order of verdicts and how a model verifier settles a doubt.

Shared by the per-chunk fact-check (:mod:`tasks.check.factcheck`) and the checks that revisit a
finding later, over a whole document (:mod:`tasks.check.support`, :mod:`tasks.check.consistency`).
"""

from __future__ import annotations

from schemas.findings import CheckResult, Verdict

#: Verdicts from best to worst; a finding's verdict is the worst of its checks'.
VERDICT_SEVERITY = {Verdict.verified: 0, Verdict.needs_review: 1, Verdict.unsupported: 2, Verdict.contradicted: 3}

#: Reasons of ``support`` checks that no verifier answer settles: they are read off the quote itself.
RULE_REASONS = ("quote is a heading only", "quote negates the clause")

#: Start of the reason of a ``support`` check whose finding the fact-check dismissed
#: (:func:`tasks.check.support.dismiss`); the reason it was dismissed for follows.
DISMISSED_REASON = "dismissed by the fact-check: "


def rule_reason(reason: str) -> bool:
    """Whether a ``support`` check's ``reason`` is one of :data:`RULE_REASONS`, dismissed or not."""
    return reason.removeprefix(DISMISSED_REASON).startswith(RULE_REASONS)


#: Checks whose ``needs_review`` no verifier answer settles: a value redacted in the filed copy
#: (``redaction``, :mod:`tasks.check.redactions`) and a quote resting on words the OCR read with low
#: confidence (``ocr_confidence``, :func:`tasks.check.factcheck.check_ocr_confidence`). The model
#: verifier reads the same filed, OCR'd text, so it cannot see the hidden value or the true word.
UNSETTLED_CHECKS = frozenset({"redaction", "ocr_confidence"})


def overall_verdict(checks: list[CheckResult]) -> Verdict:
    """Worst verdict among ``checks`` (verified when there are none).

    A ``verifier`` check with verdict ``verified`` settles ``needs_review`` checks: when every
    other non-verified check is ``needs_review`` (and none is a heading-only or negation
    ``support`` result, :data:`RULE_REASONS`, nor a ``needs_review`` check of
    :data:`UNSETTLED_CHECKS`), the result is ``verified``.
    """
    worst = max((c.verdict for c in checks), key=VERDICT_SEVERITY.__getitem__, default=Verdict.verified)
    settled_by_verifier = worst is Verdict.needs_review and any(
        c.name == "verifier" and c.verdict is Verdict.verified for c in checks
    )
    unsettled = any(
        (c.name == "support" and rule_reason(c.reason))
        or (c.name in UNSETTLED_CHECKS and c.verdict is Verdict.needs_review)
        for c in checks
    )
    if settled_by_verifier and not unsettled:
        return Verdict.verified
    return worst
