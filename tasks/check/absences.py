"""Absences: expected clause categories with no finding in a fully reviewed document."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.findings import CheckedFinding, Verdict
from schemas.taxonomy import ClauseType
from schemas.taxonomy import ClauseType as C

#: High-risk CUAD categories whose absence from a reviewed document is itself a finding to review.
ABSENCE_CATEGORIES: tuple[ClauseType, ...] = (
    C.cap_on_liability,
    C.uncapped_liability,
    C.termination_for_convenience,
    C.change_of_control,
    C.non_compete,
    C.exclusivity,
)


@dataclass
class Absence:
    """A high-risk category with no finding in a reviewed document.

    ``chunks`` are the indexes of the chunks examined (every chunk reviewed without error);
    ``verdict`` is always ``needs_review``: absence is a claim a reviewer confirms.
    """

    clause_type: ClauseType
    chunks: list[int]
    verdict: Verdict = Verdict.needs_review
    reason: str = ""


def find_absences(checked: list[CheckedFinding], chunk_indexes: list[int]) -> list[Absence]:
    """Absences of :data:`ABSENCE_CATEGORIES` among ``checked`` after reviewing ``chunk_indexes``.

    A category counts as present when any finding has it (whatever its verdict: a doubtful
    finding goes to the review queue on its own). No chunks examined → no absence claimed.
    """
    if not chunk_indexes:
        return []
    present = {cf.finding.clause_type for cf in checked}
    chunks = sorted(set(chunk_indexes))
    return [
        Absence(clause_type=cat, chunks=chunks, reason=f"no {cat.value} finding in {len(chunks)} examined chunk(s)")
        for cat in ABSENCE_CATEGORIES
        if cat not in present
    ]
