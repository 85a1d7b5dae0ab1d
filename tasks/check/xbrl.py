"""The ``xbrl`` check: a figure a filing finding states, tested against the filing's inline XBRL facts
(:mod:`tasks.review.facts`): the filer's own tagged values, with their period and unit."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from schemas.documents import XbrlFact
from schemas.filings import KeyFigureName, format_amount
from schemas.findings import CheckResult, Verdict
from tasks.review.facts import CONCEPTS, period_label

_SCALE = {"thousands": Decimal(1000), "millions": Decimal(10**6), "billions": Decimal(10**9)}
_AMOUNT = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?")
_UNIT_WORD = re.compile(r"\bUSD (thousands|millions|billions)\b|\bin (thousands|millions|billions)\b", re.I)


def stated_amounts(raw: str, summary: str) -> list[Decimal]:
    """The amount a finding states, in units (``"26,974"`` with ``"USD millions"`` in its summary →
    26,974,000,000; a per-share amount as written); both signs, since statements show outflows in
    parentheses. Empty when no amount can be read."""
    m = _AMOUNT.search(raw)
    if not m:
        return []
    digits = re.sub(r"[^\d.]", "", m.group(0))
    try:
        value = Decimal(digits)
    except InvalidOperation:
        return []
    unit = _UNIT_WORD.search(summary)
    if unit and "per share" not in summary:
        value *= _SCALE[(unit.group(1) or unit.group(2)).lower()]
    return [value, -value]


def check_xbrl(
    evidence: str,
    summary: str,
    raw: str,
    name: KeyFigureName | None,
    document_facts: list[XbrlFact],
    all_facts: list[XbrlFact],
) -> CheckResult | None:
    """The ``xbrl`` check of a stated figure against the filing's facts, or None when no fact speaks to it.

    ``document_facts`` are :func:`period_facts`; ``all_facts`` every fact. ``verified`` when a fact of the
    filing period (of the figure's concepts when ``name`` is known, else any) has the stated value:
    "matches XBRL fact us-gaap:NetIncomeLoss for 2023-10-01..2024-09-28"; ``contradicted`` when the
    figure's concept is tagged for the filing period with another value, naming the fact and, when the
    stated value is that concept's figure for another period, that period.
    """
    amounts = stated_amounts(raw, summary)
    if not amounts:
        return None
    wanted = set(CONCEPTS.get(name, ())) if name is not None else None
    mine = [f for f in document_facts if wanted is None or f.concept in wanted]
    for fact in mine:
        if fact.value is not None and Decimal(fact.value) in amounts:
            return CheckResult(
                name="xbrl",
                verdict=Verdict.verified,
                reason=f"matches XBRL fact {fact.concept} for {period_label(fact)}",
            )
    if wanted is None or not mine:
        return None
    fact = mine[0]
    other = next(
        (
            f
            for f in all_facts
            if f.concept == fact.concept and not f.dimensions and f.value is not None and Decimal(f.value) in amounts
        ),
        None,
    )
    where = f" (the stated figure is its value for {period_label(other)})" if other is not None else ""
    # the fact's value after its scale, in its own unit, through the one formatter (never its displayed digits
    # with the unit: "4,558 USD" for a fact tagged in millions is a million times off)
    shown = format_amount(Decimal(fact.value) if fact.value is not None else None, fact.unit or "", fact.text)
    return CheckResult(
        name="xbrl",
        verdict=Verdict.contradicted,
        reason=f"XBRL fact {fact.concept} for {period_label(fact)} is {shown}{where}",
    )
