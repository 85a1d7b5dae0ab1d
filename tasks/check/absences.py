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

**Only where a contract is expected** (:func:`contract_expected`): an SEC form reviewed under the contract
profile (a Schedule 13D, a Form S-8), an exhibit that is no commercial agreement (a joint filing agreement
under Exchange Act Rule 13d-1(k)(1), a power of attorney, a Sarbanes-Oxley certification, an auditor's consent,
a list of subsidiaries) and a partial copy (fewer pages than the document states: a one-page scan whose foot
reads "Page 1 of 6") raise no alarm: their absences are recorded as information, each reason starting
:data:`NOT_EXPECTED` and saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.documents import DocumentKind, ExtractedDocument
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


def find_absences(
    checked: list[CheckedFinding], chunk_indexes: list[int], not_expected: str | None = None
) -> list[Absence]:
    """Absences of :data:`ABSENCE_CATEGORIES` among ``checked`` after reviewing ``chunk_indexes``.

    A category counts as present when any finding has it (whatever its verdict: a doubtful
    finding goes to the review queue on its own). No chunks examined → no absence claimed.
    Whether an absence alarms is not decided here (:func:`absence_policy`, and the playbook in the report).
    ``not_expected`` (:func:`contract_expected`'s reason) makes each absence's reason
    ``"not expected here: <why>"`` (:data:`NOT_EXPECTED`): information, never an alarm.
    """
    if not chunk_indexes:
        return []
    present = {cf.finding.clause_type for cf in checked}
    chunks = sorted(set(chunk_indexes))
    found = f"no {{}} finding in {len(chunks)} examined chunk(s)"
    return [
        Absence(
            clause_type=cat,
            chunks=chunks,
            reason=f"{NOT_EXPECTED}{not_expected}; {found.format(cat.value)}"
            if not_expected
            else found.format(cat.value),
        )
        for cat in ABSENCE_CATEGORIES
        if cat not in present
    ]


#: How an absence's reason starts when its document is no contract whose clauses are expected
#: (:func:`contract_expected`): the report lists it as information, never as a missing clause.
NOT_EXPECTED = "not expected here: "

#: Characters of a document's first page(s) read for what kind of document it is.
HEAD_CHARS = 1500

#: Documents reviewed under the contract profile that are no commercial agreement, by what their first lines
#: say, with why a missing clause means nothing in them.
NOT_A_CONTRACT: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bjoint\s+filing\s+agreement\b|\brule\s+13d-1\s*\(k\)", re.I),
        "a joint filing agreement (Exchange Act Rule 13d-1(k)(1): the filers agree to file one Schedule 13D or "
        "13G together), not a commercial contract",
    ),
    (
        re.compile(r"\A\W*(?:\S+\s+){0,12}?(?:limited\s+|special\s+|durable\s+)?power\s+of\s+attorney\b", re.I),
        "a power of attorney, not a commercial contract",
    ),
    (
        re.compile(r"\bcertifications?\b[^.]{0,200}\b(?:section\s+(?:302|906)|sarbanes|rule\s+13a-14)", re.I),
        "a certification under the Sarbanes-Oxley Act (Sections 302 and 906), not a contract",
    ),
    (
        re.compile(
            r"\bconsent\s+of\s+(?:independent\s+)?(?:registered\s+public\s+accounting\s+firm|auditors?|accountants?)\b",
            re.I,
        ),
        "an auditor's consent, not a contract",
    ),
    (
        re.compile(r"\A\W*(?:\S+\s+){0,6}?(?:list\s+of\s+)?subsidiaries\s+of\b", re.I),
        "a list of subsidiaries, not a contract",
    ),
    (
        re.compile(
            r"securities\s+and\s+exchange\s+commission[\s\S]{0,400}?\b(?:SCHEDULE\s+(?:13D|13G|14A|14C|TO)|"
            r"FORM\s+(?:S-1|S-3|S-4|S-8|F-1|F-3|20-F|40-F|6-K|11-K|DEF\s+14A|N-CSR|N-Q))\b",
            re.I,
        ),
        "an SEC form (its cover page names it), not a contract",
    ),
]
_STATED_PAGES = re.compile(r"\bpage\s+\d{1,4}\s+(?:of|/)\s+(\d{1,4})\b", re.I)

#: Characters from the start of a document read for an agreement's heading and preamble.
AGREEMENT_HEAD_CHARS = 3000

#: What a written agreement is called in its heading or preamble ("SUPPLY AGREEMENT", "this Lease").
_AGREEMENT_KINDS = (
    r"agreement|contract|lease|licen[cs]e|amendment|addendum|memorandum\s+of\s+(?:understanding|agreement)|"
    r"terms\s+(?:and|&)\s+conditions|terms\s+of\s+(?:service|use|sale)|statement\s+of\s+work|order\s+form|"
    r"purchase\s+order|deed|indenture|letter\s+of\s+intent|term\s+sheet|guarant(?:y|ee)|joint\s+venture|"
    r"engagement\s+letter"
)

#: The three signs of a written agreement (any one is enough): a heading line that names one (at most ten
#: words before the name, the line short; not a reference number, "Agreement No. 010099-061" on a page of an
#: appendix), a preamble or operative words that bind parties, a signature block.
AGREEMENT_SIGNS: dict[str, re.Pattern[str]] = {
    "agreement heading": re.compile(
        rf"^[^\S\n]*(?:\S+[^\S\n]+){{0,10}}?(?:{_AGREEMENT_KINDS})\b(?!\s*(?:no\.|number\b|#))[^\n]{{0,80}}$",
        re.I | re.M,
    ),
    "preamble naming parties": re.compile(
        rf"\bthis\s+(?:[\w-]+\s+){{0,5}}?(?:{_AGREEMENT_KINDS})\b|\bby\s+and\s+(?:between|among)\b|"
        r"\bentered\s+into\b|\bthe\s+parties\s+(?:hereto|agree)\b|\bit\s+is\s+(?:hereby\s+)?agreed\b|"
        r"\b(?:hereby|mutually)\s+agrees?\b|\bagree\s+as\s+follows\b|\bbetween\b[^.]{1,300}?\(\s*(?:the\s+)?[\"“]",
        re.I,
    ),
    "signature block": re.compile(
        r"\bin\s+witness\s+where(?:of|for)\b|^\s*by\s*:|/s/|^\s*(?:name|title)\s*:|"
        r"\bauthori[sz]ed\s+(?:signatory|representative)\b|\bsignature\s*:",
        re.I | re.M,
    ),
}

#: Why a document with none of :data:`AGREEMENT_SIGNS` is not judged as an agreement.
NOT_AN_AGREEMENT = (
    "not an agreement (no agreement heading, no preamble naming parties and no signature block): a memo, "
    "a manual, a letter or a test file is read, but no clause is expected of it"
)


def agreement_signs(document: ExtractedDocument) -> list[str]:
    """Which of :data:`AGREEMENT_SIGNS` ``document`` shows: the heading and the preamble in its first
    :data:`AGREEMENT_HEAD_CHARS` characters (units joined by new lines: a Word document's first paragraphs
    are units of their own), the signature block anywhere. Every one of CUAD's 340 contracts shows at least
    one (``tests/test_absences.py``)."""
    head, size = [], 0
    for p in document.pages:
        head.append(p.text)
        size += len(p.text) + 1
        if size >= AGREEMENT_HEAD_CHARS:
            break
    first = "\n".join(head)[:AGREEMENT_HEAD_CHARS]
    signs = [name for name, rx in AGREEMENT_SIGNS.items() if name != "signature block" and rx.search(first)]
    if any(AGREEMENT_SIGNS["signature block"].search(p.text) for p in document.pages):
        signs.append("signature block")
    return signs


def contract_expected(document: ExtractedDocument) -> str | None:
    """None when ``document`` (reviewed under the contract profile) is a contract whose missing clauses mean
    something; else why not, in a reviewer's words:

    - its first lines (:data:`HEAD_CHARS`) say it is no commercial agreement (:data:`NOT_A_CONTRACT`: a joint
      filing agreement, a power of attorney, a certification, an auditor's consent, a list of subsidiaries, an
      SEC form's cover page);
    - it is a partial copy: a page's text or running lines state more pages than were read ("Page 1 of 6"
      on the only page of a scan): ``"a partial copy: 1 of the 6 pages it states ('Page 1 of 6')"``. A DOCX
      has no pages and states none;
    - it shows no sign of an agreement (:func:`agreement_signs`): :data:`NOT_AN_AGREEMENT`."""
    head = "\n".join(p.text for p in document.pages[:3])[:HEAD_CHARS]
    for rx, why in NOT_A_CONTRACT:
        if rx.search(head):
            return why
    stated = [
        (int(m.group(1)), m.group(0))
        for p in document.pages
        for line in [*p.running, *p.text.splitlines()[-3:]]
        for m in _STATED_PAGES.finditer(line)
    ]
    if stated and document.kind != DocumentKind.docx:
        total, said = max(stated)
        if total > len(document.pages):
            return f"a partial copy: {len(document.pages)} of the {total} pages it states ({said!r})"
    if not agreement_signs(document):
        return NOT_AN_AGREEMENT
    return None
