"""A contract's structure as zones, and the findings that cannot come from a zone.

A contract reads: a cover or title, a preamble naming the parties and the date ("This Agreement is
entered into … by and between …"), recitals ("WHEREAS …"), the operative sections (from the first
numbered section, or from "NOW, THEREFORE, … agree as follows"), a signature block ("IN WITNESS
WHEREOF …") and then exhibits and schedules. Operative categories of CUAD (a cap on liability, a
non-compete, an exclusivity, …) are agreed in the operative sections and the exhibits, never in the
title, the preamble, the recitals or the signature block; Parties, Document Name and the dates are read
there. A finding of an operative category whose quote lies wholly in the title, preamble, recitals or
signature block is dropped (:func:`drop_findings_outside_operative_zones`): the 4-page amendment whose
title, recitals and "IN WITNESS WHEREOF" came back as eight Non-Compete findings.

The zones are found conservatively, so that a document without the usual landmarks loses nothing: the
front zone (title, preamble, recitals) ends at the first numbered section heading, the "agree as
follows" sentence or the first "ARTICLE"/"Section 1" line, whichever comes first, and only exists when
that landmark lies within the first :data:`MAX_FRONT_SHARE` of the text; the signature block runs from
the last "IN WITNESS WHEREOF" for at most :data:`SIGNATURE_CHARS` characters or to the next exhibit or
schedule heading, and only when it starts in the last :data:`SIGNATURE_TAIL_SHARE` of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.findings import CheckedFinding
from schemas.taxonomy import ClauseType, is_contract_clause
from tasks.check.index import DocumentIndex, locate
from tasks.runnames import for_document

#: CUAD categories a contract states in its title, preamble or signature block: kept wherever they are.
FRONT_MATTER_CATEGORIES = frozenset(
    {
        ClauseType.document_name,
        ClauseType.parties,
        ClauseType.agreement_date,
        ClauseType.effective_date,
        ClauseType.expiration_date,
    }
)

#: The front zone exists only when the operative text starts within this share of the document.
MAX_FRONT_SHARE = 0.35
#: The signature block exists only when "IN WITNESS WHEREOF" lies in this last share of the document.
SIGNATURE_TAIL_SHARE = 0.5
#: Longest signature block (characters): names, titles and dates of the signatories.
SIGNATURE_CHARS = 2500

_OPERATIVE_START = re.compile(
    r"agree\s+as\s+follows|hereby\s+agree[s]?\s*(?:as\s+follows)?\s*:|"
    r"^[ \t]*(?:ARTICLE|Article)\s+(?:1|I|ONE)\b|^[ \t]*(?:SECTION|Section)\s+1\b|"
    r"^[ \t]*1\.(?:1\.?)?[ \t]+[A-Z]",
    re.M,
)
_WITNESS = re.compile(r"IN\s+WITNESS\s+WHEREOF", re.I)
_EXHIBIT_HEADING = re.compile(r"^[ \t]*(?:EXHIBIT|Exhibit|SCHEDULE|Schedule|ANNEX|Annex|APPENDIX|Appendix)\s+\S+", re.M)


@dataclass(frozen=True)
class Zones:
    """Document offsets (``[start, end)`` in the document text) of the zones where operative clauses
    are not agreed: ``front`` (title, preamble, recitals; None when not found) and ``signature`` (the
    signature block; None when not found)."""

    front: tuple[int, int] | None
    signature: tuple[int, int] | None

    def zone_at(self, start: int, end: int) -> str | None:
        """``"front"`` or ``"signature"`` when ``[start, end)`` lies wholly in that zone, else None."""
        for name, span in (("front", self.front), ("signature", self.signature)):
            if span is not None and span[0] <= start and end <= span[1]:
                return name
        return None


def find_zones(text: str) -> Zones:
    """The :class:`Zones` of a contract's ``text`` (see the module docstring for the rules)."""
    n = len(text)
    if n == 0:
        return Zones(None, None)
    front = None
    m = _OPERATIVE_START.search(text)
    if m is not None and m.start() <= MAX_FRONT_SHARE * n:
        end = m.end() if m.group(0).lower().startswith(("agree", "hereby")) else m.start()
        front = (0, end)
    signature = None
    witnesses = list(_WITNESS.finditer(text))
    if witnesses and witnesses[-1].start() >= (1 - SIGNATURE_TAIL_SHARE) * n:
        start = witnesses[-1].start()
        stop = min(n, start + SIGNATURE_CHARS)
        exhibit = _EXHIBIT_HEADING.search(text, start + 1, stop)
        signature = (start, exhibit.start() if exhibit else stop)
    return Zones(front, signature)


def _category(cf: CheckedFinding) -> ClauseType | None:
    value = cf.finding.clause_type.value
    return ClauseType(value) if is_contract_clause(value) else None


def drop_findings_outside_operative_zones(
    checked: list[CheckedFinding], index: DocumentIndex
) -> tuple[list[CheckedFinding], int]:
    """``(kept findings, number dropped)``: a contract finding of an operative category (not in
    :data:`FRONT_MATTER_CATEGORIES`) is dropped when its quote, located as the grounding found it
    (:func:`tasks.check.index.locate`), lies wholly in the front zone or the signature block of
    :func:`find_zones`. Findings of filings, of front-matter categories, and findings whose quote is
    not found are kept."""
    zones = find_zones(index.text)
    if zones.front is None and zones.signature is None:
        return checked, 0
    kept, dropped = [], 0
    for cf in checked:
        category = _category(cf)
        if category is None or category is ClauseType.other or category in FRONT_MATTER_CATEGORIES:
            kept.append(cf)
            continue
        start = locate(cf, index)
        if start is None:
            kept.append(cf)
            continue
        end = start + len(cf.finding.evidence)
        if zones.zone_at(start, end) is not None:
            dropped += 1
            continue
        kept.append(cf)
    return kept, dropped


@task(name="drop-out-of-zone-findings", task_run_name=for_document("zones"), cache_policy=NO_CACHE)
def drop_out_of_zone_findings_in_document(checked: list[CheckedFinding], index: DocumentIndex) -> list[CheckedFinding]:
    """Prefect task: :func:`drop_findings_outside_operative_zones`, logging how many were dropped."""
    from prefect import get_run_logger

    kept, dropped = drop_findings_outside_operative_zones(checked, index)
    if dropped:
        get_run_logger().info(
            "%d finding(s) of operative categories dropped: their quotes lie in the title, preamble, "
            "recitals or signature block",
            dropped,
        )
    return kept
