"""Absences: expected clause categories with no finding in a fully reviewed document.

Not finding a clause is only sometimes bad news. Whether an absence is an *alarm* (a risk a reviewer
must confirm) or *information* (usually the favourable or neutral position) is stated per category in
:data:`ABSENCE_POLICY`, from CUAD v1's category definitions (``CUAD_v1_README.txt``, The Atticus Project,
CC BY 4.0) and the default rule of contract law the absence leaves in place:

=============================  =======  ==================================================================
Category (CUAD definition)     Alarm?   Why
=============================  =======  ==================================================================
Cap On Liability ("a cap on    yes      Without a cap, a party's damages for breach are limited only by
liability upon the breach of            law: liability is uncapped.
a party's obligation")
Governing Law ("which state/   yes      Without a choice of law, which law governs — and where disputes are
country's law governs")                 heard — is left to conflict-of-laws rules: forum uncertain.
Uncapped Liability ("is a      no       Its absence means no carve-out makes liability uncapped: the
party's liability uncapped")            favourable position.
Termination For Convenience    no       Its absence binds both parties for the term (termination for
("terminate … without cause")           cause still applies); a party that needs an exit says so in a
                                        playbook rule (``expect: present``).
Change Of Control ("right to   no       Its absence lets the contract survive a merger or sale unchanged;
terminate … or consent …                whether the counterparty needs a say is a position a playbook
if such party undergoes a               states.
change of control")
Non-Compete ("a restriction    no       Its absence means no restriction on competing: the favourable
on the ability of a party to            position.
compete")
Exclusivity ("an exclusive     no       Its absence means no exclusive-dealing commitment: the favourable
dealing commitment")                    position.
=============================  =======  ==================================================================

Any absence is an alarm as well when a playbook rule expects the clause (the report decides that with
the document's playbook results: :func:`tasks.observe.report.absence_alarms`).
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.findings import CheckedFinding, Verdict
from schemas.taxonomy import ClauseType
from schemas.taxonomy import ClauseType as C


@dataclass(frozen=True)
class AbsencePolicy:
    """What the absence of one category means: ``alarm`` (the absence is itself a risk) and ``why``
    (one sentence a reviewer reads, e.g. ``"no cap on liability: liability is uncapped"``)."""

    alarm: bool
    why: str


#: Per category looked for: whether its absence alarms, and why (see the module docstring's table).
ABSENCE_POLICY: dict[ClauseType, AbsencePolicy] = {
    C.cap_on_liability: AbsencePolicy(True, "no cap on liability: a party's liability for breach is uncapped"),
    C.governing_law: AbsencePolicy(
        True, "no governing-law clause: the law that governs and the forum are left uncertain"
    ),
    C.uncapped_liability: AbsencePolicy(
        False, "no uncapped-liability carve-out: liability stays within any cap (favourable)"
    ),
    C.termination_for_convenience: AbsencePolicy(
        False, "no termination without cause: both parties are bound for the term (an exit right is a playbook call)"
    ),
    C.change_of_control: AbsencePolicy(
        False, "no change-of-control right: the contract survives a merger or sale unchanged"
    ),
    C.non_compete: AbsencePolicy(False, "no non-compete: no restriction on competing (favourable)"),
    C.exclusivity: AbsencePolicy(False, "no exclusivity: no exclusive-dealing commitment (favourable)"),
}

#: Categories whose absence from a reviewed document is recorded (and can be decided as ``A<n>``).
ABSENCE_CATEGORIES: tuple[ClauseType, ...] = tuple(ABSENCE_POLICY)


def absence_policy(clause_type: ClauseType | str) -> AbsencePolicy:
    """The :data:`ABSENCE_POLICY` entry of ``clause_type``; a category not listed there is information
    (``alarm=False``) with a generic reason. Raises ``ValueError`` for a string that is no category."""
    cat = ClauseType(clause_type)
    return ABSENCE_POLICY.get(cat, AbsencePolicy(False, f"no {cat.value.replace('_', ' ')} clause found"))


@dataclass
class Absence:
    """A looked-for category (:data:`ABSENCE_CATEGORIES`) with no finding in a reviewed document.

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
    Whether an absence alarms is not decided here (:func:`absence_policy`, and the playbook in the report).
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
