"""One finding per clause: findings of one category within one clause merge into the strongest.

A clause is the numbered section (:attr:`DocumentIndex.heading_offsets`) its quote sits in; before
the first numbered heading, or in a document without any, it is the paragraph (text between blank
lines, a page break not counting as one). Identical passages (same :func:`match_form` evidence) of
one category repeated across a document are one finding first: the first of them, noting the other
pages. In a filing, a legal proceeding is told in a paragraph of its own (or several): its
``legal_proceedings`` findings within one paragraph (:func:`tasks.review.filing.paragraph_starts`)
are one, the first verified sentence, not one per sentence; its ``risk_factor`` findings within one
risk factor of Item 1A (:func:`tasks.review.filing.risk_factor_blocks`) are one, the one quoting the
heading when there is one.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections import Counter

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.filings import topic_label
from schemas.findings import CheckedFinding, CheckResult, Verdict
from schemas.taxonomy import is_contract_clause, label
from tasks.check.index import DocumentIndex, headings_in, locate  # noqa: F401 - headings_in also imported from here
from tasks.check.support import reason_score
from tasks.check.verdicts import VERDICT_SEVERITY
from tasks.review.filing import paragraph_starts, risk_factor_blocks
from tasks.runnames import for_document
from tasks.textnorm import match_form

#: Name of the check that records a merge on the kept finding (verdict ``verified``: it changes no
#: overall verdict).
MERGE_CHECK = "merge"

_BLANK_LINE = re.compile(r"\n(?:[ \t]*\n)+")

#: A clause: ``("section", heading index)`` or ``("paragraph", start offset)``, and how it reads.
ClauseKey = tuple[str, int]

#: Filing topics merged one per paragraph of the filing (a legal proceeding's paragraph), keeping the first.
PARAGRAPH_TOPICS = frozenset({"legal_proceedings"})
#: The filing topic merged one per risk factor of Item 1A, keeping the finding that quotes its heading.
RISK_FACTOR = "risk_factor"


def _paragraph_starts(index: DocumentIndex) -> list[int]:
    """Offsets where a paragraph starts: 0 and the end of each blank-line run that is no page break."""
    starts = [0]
    for m in _BLANK_LINE.finditer(index.text):
        k = bisect.bisect_left(index.page_starts, m.start())
        if k < len(index.page_starts) and index.page_starts[k] <= m.end():
            continue  # the page separator: a paragraph running on over the page break
        starts.append(m.end())
    return starts


def clause_of(offset: int, index: DocumentIndex, paragraphs: list[int]) -> tuple[ClauseKey, str]:
    """The clause enclosing document ``offset`` and its name (``"§ 12.3"``, ``"the paragraph on page 2"``, ``"the paragraph at § 4. Fees, paragraph 2"`` in a DOCX)."""
    i = bisect.bisect_right(index.heading_offsets, offset) - 1
    if i >= 0:
        return ("section", i), f"§ {index.heading_numbers[i]}"
    start = paragraphs[bisect.bisect_right(paragraphs, offset) - 1]
    return ("paragraph", start), f"the paragraph {index.on(max(bisect.bisect_right(index.page_starts, start), 1))}"


def support_score(cf: CheckedFinding) -> float | None:
    """The ``support`` check's score, else the one its reason states (``"(support 0.43"``), else None."""
    s = next((c for c in cf.checks if c.name == "support"), None)
    if s is None:
        return None
    if s.score is not None:
        return s.score
    return reason_score(s.reason)


def strength(cf: CheckedFinding) -> tuple[int, float, int]:
    """Sort key, strongest first: best verdict, highest support score, longest grounded quote."""
    score = support_score(cf)
    grounding = next((c for c in cf.checks if c.name == "grounding"), None)
    grounded = grounding is not None and grounding.verdict is not Verdict.unsupported
    length = len(match_form(cf.finding.evidence)[0]) if grounded else 0
    return VERDICT_SEVERITY[cf.verdict], -(score if score is not None else -1.0), -length


def _pages(pages: list[int]) -> str:
    return ("page " if len(pages) == 1 else "pages ") + ", ".join(str(p) for p in pages)


def category_label(value: str) -> str:
    """A finding category's label: the CUAD label of a contract clause, else the filing topic's."""
    try:
        return label(value)
    except (ValueError, KeyError):
        return topic_label(value)


def merge_clause_findings(checked: list[CheckedFinding], index: DocumentIndex) -> list[CheckedFinding]:
    """Merge one document's findings of one category within one clause into one.

    ``checked``: the document's checked findings (any order; ``finding.page`` is the corrected page);
    ``index``: its :class:`DocumentIndex`. First, findings of one category whose evidence has the same
    :func:`match_form` are one: the first of them. Then the remaining findings of one category whose
    quote (:func:`locate`) sits in one clause (:func:`clause_of`) are one: the strongest
    (:func:`strength`; the earliest on a tie). A finding whose quote is not found is a clause of its own,
    and so is a filing finding (:func:`is_contract_clause`): a statement's key figures, or a filing's Items,
    share a "clause" and are still distinct — except the topics of :data:`PARAGRAPH_TOPICS` (a legal
    proceeding): those within one paragraph of the filing (:func:`tasks.review.filing.paragraph_starts`)
    are one, the earliest of the best verdict (the sentence that names the proceeding); and
    ``risk_factor`` findings within one risk factor of Item 1A
    (:func:`tasks.review.filing.risk_factor_blocks`: from its heading to the next) are one, the one
    whose quote starts at the heading, else the strongest (a model's finding quoting the paragraph).

    Returns a list of :class:`CheckedFinding`, at most ``len(checked)`` long, in input order of the
    kept findings. A kept finding that absorbed others is a new object with its checks plus a
    ``merge`` check (verdict ``verified``, so its verdict is unchanged) whose reason says how many
    findings merged and where (``"merged 2 findings of Cap On Liability in § 12.3"``), the other
    pages of an identical passage, and the verdicts of the findings set aside when not verified;
    every other finding is returned as it was. Pure: ``checked`` is not modified.
    """
    first_of: dict[tuple[str, str], int] = {}
    copies: dict[int, list[int]] = {}
    for i, cf in enumerate(checked):
        q = match_form(cf.finding.evidence)[0]
        key = (cf.finding.clause_type.value, q)
        if q and key in first_of:
            copies[first_of[key]].append(i)
            continue
        first_of[key] = i
        copies[i] = []
    paragraphs = _paragraph_starts(index)
    filing_paragraphs: list[int] | None = None
    blocks: list[tuple[int, int]] | None = None
    groups: dict[tuple[str, ClauseKey] | int, list[int]] = {}
    where: dict[tuple[str, ClauseKey] | int, str] = {}
    first: dict[tuple[str, ClauseKey] | int, bool] = {}  # keep the earliest, not the strongest
    offsets: dict[int, int] = {}
    headings: dict[tuple[str, ClauseKey] | int, int] = {}  # a risk factor's heading offset
    k = -1
    for i in copies:
        cf = checked[i]
        value = cf.finding.clause_type.value
        contract = is_contract_clause(value)
        offset = locate(cf, index) if contract or value in PARAGRAPH_TOPICS or value == RISK_FACTOR else None
        if offset is not None and value == RISK_FACTOR:
            if blocks is None:
                blocks = risk_factor_blocks(index.text, index.page_starts, index.emphasis)
            k = bisect.bisect_right([a for a, _ in blocks], offset) - 1
            offset = offset if k >= 0 and offset < blocks[k][1] else None  # outside every risk factor: alone
        if offset is None:  # not found, or a filing topic: each statement line or Item stands alone
            groups[i] = [i]
            continue
        offsets[i] = offset
        if contract:
            clause, name = clause_of(offset, index, paragraphs)
        elif value == RISK_FACTOR:
            assert blocks is not None
            start = blocks[k][0]
            clause = ("risk factor", start)
            name = f"the risk factor {index.on(max(bisect.bisect_right(index.page_starts, start), 1))}"
            headings[(value, clause)] = start
        else:
            if filing_paragraphs is None:
                filing_paragraphs = paragraph_starts(index.text, index.page_starts)
            start = filing_paragraphs[bisect.bisect_right(filing_paragraphs, offset) - 1]
            clause = ("paragraph", start)
            name = f"the paragraph {index.on(max(bisect.bisect_right(index.page_starts, start), 1))}"
        gkey = (value, clause)
        groups.setdefault(gkey, []).append(i)
        where.setdefault(gkey, name)
        first[gkey] = not contract
    kept: dict[int, CheckedFinding] = {}
    for group, members in groups.items():
        if group in headings:  # the finding quoting the heading, else the strongest
            best = min(members, key=lambda i: (offsets[i] != headings[group], strength(checked[i]), i))
        elif first.get(group):
            best = min(members, key=lambda i: (VERDICT_SEVERITY[checked[i].verdict], offsets[i], i))
        else:
            best = min(members, key=lambda i: (strength(checked[i]), i))
        absorbed = [j for i in members for j in [i, *copies[i]] if j != best]
        cf = checked[best]
        if not absorbed:
            kept[best] = cf
            continue
        what = f"merged {len(absorbed) + 1} findings of {category_label(cf.finding.clause_type.value)}"
        if len(members) > 1 and group in where:
            what += f" in {where[group]}"
        same = sorted({checked[j].finding.page for j in copies[best]} - {cf.finding.page})
        if same:
            what += f"; the same passage also on {_pages(same)}"
        elif len(members) == 1:
            what += ": the same passage quoted more than once"
        aside = Counter(checked[j].verdict.value for j in absorbed if checked[j].verdict is not Verdict.verified)
        if aside:
            what += "; set aside: " + ", ".join(f"{n} {v}" for v, n in sorted(aside.items()))
        note = CheckResult(name=MERGE_CHECK, verdict=Verdict.verified, reason=what)
        kept[best] = dataclasses.replace(cf, checks=[*cf.checks, note])
    return [kept[i] for i in sorted(kept)]


@task(name="merge-clause-findings", task_run_name=for_document("merge-clause-findings"), cache_policy=NO_CACHE)
def merge_clause_findings_in_document(checked: list[CheckedFinding], index: DocumentIndex) -> list[CheckedFinding]:
    """Prefect task: :func:`merge_clause_findings` over all checked findings of one document."""
    return merge_clause_findings(checked, index)
