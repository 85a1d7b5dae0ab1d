"""Confidential-treatment redactions in filed contracts: a value that is hidden is neither missing nor a value.

A contract filed with the SEC as an exhibit may leave out information that is not material and
would likely cause competitive harm if disclosed (Regulation S-K Item 601(b)(10)(iv), 17 CFR
229.601(b)(10)(iv)), or information a confidential-treatment request covers (Exchange Act Rule 24b-2,
17 CFR 240.24b-2; Securities Act Rule 406). The omission is marked in the filed text, most often by
asterisks in brackets. A finding whose quote or stated value holds such a mark cannot be verified from
the filed copy, and a value it leaves out is not "missing" either: the ``redaction`` check makes the
finding ``needs_review`` (:func:`check_redaction`), and a playbook rule whose evidence value is
redacted is ``unknown`` (:mod:`tasks.check.playbook`). :mod:`tasks.check.values` reads each mark as a
value of its own kind (``Kind.redacted``) with the kind of value the slot holds, when the words around
it say so (``$[***]`` money, ``[*] years`` a duration, ``[***]%`` a percentage).

Forms read as redactions (:data:`REDACTION`), with what the shared CUAD corpus holds
(``/work/shared/data/cuad/txt``, 340 contracts; 103 carry at least one mark, 82 of them in brackets,
21 only bare asterisks; occurrences / contracts):

- asterisks in brackets, any count, spaced or not, optionally between ellipses: ``[***]`` 10339 / 48,
  ``[*****]`` 2328 / 8, ``[…***…]`` 1339 / 4, ``[*]`` 1188 / 11, ``[ * ]`` 763 / 4, ``[...***...]``
  345 / 3, ``[* * *]`` 128 / 2, ``[**]`` 37 / 4, ``[****]`` 10 / 1, ``[* ]`` 10 / 1, ``[ * * * ]``
  9 / 1, ``[ ** ]`` 5 / 1, ``[ *∗ ]`` 2 / 1 (U+2217 is read as an asterisk);
- 3 to 20 asterisks with no brackets, spaced or not (1869 / 32): ``***`` 1479 / 16 ("shall give a
  *** discount"), ``*****`` 265 / 9 ("at the rate of ***** percent (*****%)"), ``****`` 74 / 3,
  ``* * *`` 43 / 2 ("Sponsor shall pay * * * to drkoop.com"), ``* * * *``, ``* * * * *``,
  ``******``, ``********`` 8 in all. A few are lines of their own that only separate parts of a
  contract (``*****`` before the signature page); read as marks too, they matter only when a quote
  holds one. Longer runs are rules, not marks;
- words in brackets: ``[Redacted]`` 5 / 1, ``[REDACTED]`` 1 / 1, ``[Confidential Treatment
  Requested]`` 2 / 1 (any case; ``[CONFIDENTIAL TREATMENT REQUESTED]`` occurs in none), and an
  omission note opened by asterisks, ``[*** 2 pages omitted.]`` 1 / 1.

Not redactions:

- ``[●]``, ``[•]``, ``[$●]``, ``[●%]`` (135 / 4) and ``[____]`` (21 / 7): blanks of a draft or a
  form, left to be filled in. Nothing was withheld from the filing; the value simply is not there
  yet, and the value checks treat it as any value they cannot read (``needs_review``);
- ``[Intentionally omitted]``, ``[GRAPHIC OMITTED]``: a deleted section or a picture, no value;
- the legend "Confidential Treatment Requested" in running text (a page stamp or the exhibit's
  cover note, 408 / 16): it announces redactions, it is none itself;
- ``*`` and ``**`` outside brackets: footnote marks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.findings import CheckResult, Finding, Verdict

#: What a playbook result and the ``redaction`` check say about a redacted value.
REDACTED_REASON = "value redacted in the filed copy"

_STAR = r"[*\u2217]"  # U+2217 ASTERISK OPERATOR stands in for "*" in some filings
_ELLIPSIS = r"(?:\.{2,}|…)"
#: One redaction mark, see the module docstring for the forms.
REDACTION = re.compile(
    rf"\[\s*{_ELLIPSIS}?\s*{_STAR}(?:\s*{_STAR})*\s*{_ELLIPSIS}?\s*\]"  # [***], [ * ], […***…], [* * *]
    rf"|\[\s*{_STAR}{{3,}}[^\[\]\n]{{0,40}}?\bomitted\b\.?\s*\]"  # [*** 2 pages omitted.]
    r"|\[\s*(?:redacted|confidential\s+treatment\s+requested)\s*\]"  # [REDACTED], [Confidential Treatment Requested]
    rf"|(?<![*\u2217\w])(?:{_STAR}{{3,20}}|{_STAR}(?:[ \t]+{_STAR}){{2,19}})(?![*\u2217])",  # ***, *****, * * *
    re.I,
)

#: A stated value that only says it is redacted ("redacted", "[redacted]", "confidential (redacted)").
_SAYS_REDACTED = re.compile(r"\W*(?:confidential\W+)?(?:redacted|omitted)\W*", re.I)


@dataclass(frozen=True)
class Mark:
    """One redaction mark in a text: ``raw`` as written, ``start``/``end`` its character offsets."""

    raw: str
    start: int
    end: int


def find_redactions(text: str) -> list[Mark]:
    """Every redaction mark (:data:`REDACTION`) in ``text``, in order; ``[]`` when there is none.

    Offsets index ``text`` as given (no normalisation). ``[●]`` and ``[____]`` blanks are no marks.
    """
    return [Mark(m.group(0), m.start(), m.end()) for m in REDACTION.finditer(text)]


def is_redacted(value: str) -> bool:
    """True when a stated value holds a redaction mark (``"$[***]"``, ``"[*] years"``) or only says
    it is redacted (``"redacted"``, ``"[Redacted]"``)."""
    return bool(REDACTION.search(value) or _SAYS_REDACTED.fullmatch(value))


def _excerpt(text: str, mark: Mark, width: int = 40) -> str:
    """The mark with up to ``width`` characters before it, cut at a space, on one line."""
    lo = max(0, mark.start - width)
    if lo:
        space = text.find(" ", lo, mark.start)
        lo = space + 1 if space >= 0 else lo
    return " ".join(text[lo : mark.end].split())


def check_redaction(finding: Finding) -> CheckResult | None:
    """The ``redaction`` check of one finding, or ``None`` when neither its quote nor its stated
    values hold a redaction mark.

    A stated value that is redacted (:func:`is_redacted`) or a mark in the quote makes the check
    ``needs_review`` with the reason :data:`REDACTED_REASON`, quoting the mark: the filed copy does
    not show the value, so the finding is never ``verified`` on it, and never ``contradicted``
    for lacking it (``values`` leaves redacted values to this check). A model verifier reads the
    same filed copy, so its answer does not settle it (:func:`tasks.check.verdicts.overall_verdict`).
    """
    quote = finding.evidence
    marks = find_redactions(quote)
    where = f"{marks[0].raw!r} in {_excerpt(quote, marks[0])!r}" if marks else ""
    if len(marks) > 1:
        where += f", and {len(marks) - 1} more mark(s) in the quote"
    reasons = []
    for item in finding.values:
        if is_redacted(item.value):
            own = find_redactions(item.value)
            shown = where or (repr(own[0].raw) if own else repr(item.value))
            reasons.append(f"{item.name}={item.value!r}: {REDACTED_REASON} ({shown})")
    if marks and not reasons:
        reasons.append(f"{REDACTED_REASON}: {where}")
    if not reasons:
        return None
    return CheckResult(name="redaction", verdict=Verdict.needs_review, reason="; ".join(reasons))
