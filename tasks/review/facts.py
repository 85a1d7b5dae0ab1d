"""A filing's inline XBRL facts as ground truth: the facts of the filing's own period and its key
figures (the ``xbrl`` check of a stated figure is :mod:`tasks.check.xbrl`).

The facts (:class:`schemas.documents.XbrlFact`, read by :mod:`tasks.ingest.ixbrl`) are the filer's own
tagged values, with their period and unit. The *filing period* is ``dei:DocumentPeriodEndDate`` and the
fiscal period focus (``FY`` or ``Q1``–``Q4``): duration facts of that length ending on that date
(within :data:`END_SLACK_DAYS`) and instant facts on it, for the entity as a whole (no dimensions).

Concepts per key figure (:data:`CONCEPTS`) are US-GAAP taxonomy elements filers use for the line
(FASB US GAAP Financial Reporting Taxonomy; the first one tagged in a filing wins, in this order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from schemas.documents import ExtractedDocument, XbrlFact
from schemas.filings import OUTFLOWS, KeyFigure, KeyFigureName

K = KeyFigureName

#: US-GAAP elements per key figure, most common first.
CONCEPTS: dict[KeyFigureName, tuple[str, ...]] = {
    K.revenue: (
        "us-gaap:Revenues",
        "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
        "us-gaap:RevenueFromContractWithCustomerIncludingAssessedTax",
        "us-gaap:SalesRevenueNet",
    ),
    K.cost_of_revenue: ("us-gaap:CostOfRevenue", "us-gaap:CostOfGoodsAndServicesSold", "us-gaap:CostOfGoodsSold"),
    K.operating_income: ("us-gaap:OperatingIncomeLoss",),
    K.net_income: ("us-gaap:NetIncomeLoss", "us-gaap:ProfitLoss"),
    K.eps_diluted: ("us-gaap:EarningsPerShareDiluted",),
    K.operating_cash_flow: (
        "us-gaap:NetCashProvidedByUsedInOperatingActivities",
        "us-gaap:NetCashProvidedByUsedInOperatingActivitiesContinuingOperations",
    ),
    K.capital_expenditure: (
        "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",
        "us-gaap:PaymentsToAcquireProductiveAssets",
    ),
    K.dividends_paid: ("us-gaap:PaymentsOfDividends", "us-gaap:PaymentsOfDividendsCommonStock"),
    K.cash: ("us-gaap:CashAndCashEquivalentsAtCarryingValue",),
    K.inventories: ("us-gaap:InventoryNet",),
    K.property_plant_equipment_net: ("us-gaap:PropertyPlantAndEquipmentNet",),
    K.total_current_assets: ("us-gaap:AssetsCurrent",),
    K.total_assets: ("us-gaap:Assets",),
    K.accounts_payable: ("us-gaap:AccountsPayableCurrent",),
    K.total_current_liabilities: ("us-gaap:LiabilitiesCurrent",),
    K.total_debt: ("us-gaap:LongTermDebt", "us-gaap:DebtInstrumentCarryingAmount"),
    K.long_term_debt: ("us-gaap:LongTermDebtNoncurrent",),
}
_NAME_OF = {concept: name for name, concepts in CONCEPTS.items() for concept in concepts}

#: A period's end may differ from dei:DocumentPeriodEndDate by a few days (52/53-week fiscal years
#: tag the Saturday or Sunday nearest the month end).
END_SLACK_DAYS = 7
#: Duration of a fiscal year and of a quarter, in days (inclusive bounds).
YEAR_DAYS = (350, 380)
QUARTER_DAYS = (80, 100)


@dataclass(frozen=True)
class FilingPeriod:
    """The filing's own period: its end date and the length of its duration facts (days, inclusive bounds)."""

    end: date
    days: tuple[int, int]

    def holds(self, fact: XbrlFact) -> bool:
        """True for a fact of this period: an instant on its end, or a duration of its length ending there."""
        end = _day(fact.period_end)
        if end is None or abs((end - self.end).days) > END_SLACK_DAYS:
            return False
        if fact.instant:
            return True
        start = _day(fact.period_start)
        return start is not None and self.days[0] <= (end - start).days + 1 <= self.days[1]


def _day(iso: str | None) -> date | None:
    try:
        return date.fromisoformat(iso) if iso else None
    except ValueError:
        return None


def filing_period(document: ExtractedDocument) -> FilingPeriod | None:
    """The filing period from the cover facts (``dei``), or None without ``DocumentPeriodEndDate``.
    ``DocumentFiscalPeriodFocus`` ``Q1``–``Q4`` (or a 10-Q) means a quarter, else a fiscal year."""
    end = _day(document.dei.get("DocumentPeriodEndDate"))
    if end is None:
        return None
    focus = document.dei.get("DocumentFiscalPeriodFocus", "").upper()
    quarter = focus.startswith("Q") or document.dei.get("DocumentType", "").upper().startswith("10-Q")
    return FilingPeriod(end, QUARTER_DAYS if quarter else YEAR_DAYS)


def period_label(fact: XbrlFact) -> str:
    """``"2022-01-31..2023-01-29"`` for a duration, ``"2023-01-29"`` for an instant."""
    return fact.period_end or "" if fact.instant else f"{fact.period_start}..{fact.period_end}"


def period_facts(document: ExtractedDocument) -> list[XbrlFact]:
    """The numeric facts of the filing period for the entity as a whole (no dimensions), in document order."""
    period = filing_period(document)
    if period is None:
        return []
    return [
        f for f in document.facts if f.value is not None and f.problem is None and not f.dimensions and period.holds(f)
    ]


def fact_problems(document: ExtractedDocument) -> list[tuple[KeyFigureName | None, str]]:
    """The facts of the entity as a whole (no dimensions) that are not used because of a ``problem``
    (:class:`schemas.documents.XbrlFact`), which may be of the filing period (their period holds it, or
    is unknown): ``[(the key figure the concept gives or None, "us-gaap:Revenues: duplicate facts
    disagree (26,974, 27,000): not used")]``, one per concept and problem, in document order."""
    period = filing_period(document)
    out: list[tuple[KeyFigureName | None, str]] = []
    seen: set[tuple[str, str]] = set()
    for f in document.facts:
        if not f.problem or f.dimensions or (f.concept, f.problem) in seen:
            continue
        if f.period_end is not None and period is not None and not period.holds(f):
            continue
        seen.add((f.concept, f.problem))
        out.append((_NAME_OF.get(f.concept), f"{f.concept}: {f.problem}"))
    return out


#: Key figures read for every period a filing tags them for, besides its own (year to date, a
#: predecessor's and a successor's period): the income figures as filed.
INCOME_AS_FILED = (K.revenue, K.net_income)

#: Words of the standard durations, by their length in months (days / 30.44, rounded).
_SPAN_WORDS = {3: "three months", 6: "six months", 9: "nine months", 12: "year"}
#: A member of a context's only dimension naming a predecessor or successor entity (e.g.
#: ``dei:LegalEntityAxis`` = ``ex:PredecessorMember``): the entity's figure for that period.
_ROLE_MEMBER = re.compile(r"(predecessor|successor)", re.I)
#: A monetary unit: an ISO 4217 code as XBRL's ``iso4217`` measure gives it; per share: ``USD/shares``.
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_PER_SHARE = re.compile(r"^([A-Z]{3})/shares$")


def _months(fact: XbrlFact) -> int | None:
    start, end = _day(fact.period_start), _day(fact.period_end)
    if fact.instant or start is None or end is None:
        return None
    return max(1, round(((end - start).days + 1) / 30.44))


def _role(fact: XbrlFact) -> str | None:
    """``"predecessor"`` or ``"successor"`` when the fact's only dimension's member says so, else None."""
    if len(fact.dimensions) != 1:
        return None
    m = _ROLE_MEMBER.search(next(iter(fact.dimensions.values())))
    return m.group(1).lower() if m else None


def period_words(fact: XbrlFact, roles: dict[str, str] | None = None) -> str:
    """A fact's period in words: ``"as of 2024-09-30"`` (an instant), ``"three months ended 2024-06-29"``,
    ``"six months …"``, ``"nine months ended 2024-09-30"``, ``"year ended 2023-01-29"``, ``"successor period
    2023-07-23 to 2023-09-30"``, ``"predecessor period 2023-07-01 to 2023-07-22"`` or ``"period 2023-02-14 to
    2023-09-30"``. ``roles`` (:func:`period_roles`) names the predecessor's and successor's periods by their
    ``"start..end"``; a context whose dimension member says so is named so too."""
    if fact.instant:
        return f"as of {fact.period_end}"
    span = f"{fact.period_start}..{fact.period_end}"
    role = _role(fact) or (roles or {}).get(span)
    if role:
        return f"{role} period {fact.period_start} to {fact.period_end}"
    months = _months(fact)
    start, end = _day(fact.period_start), _day(fact.period_end)
    if months in _SPAN_WORDS and start is not None and end is not None:
        standard = {3: (80, 100), 6: (170, 190), 9: (260, 285), 12: YEAR_DAYS}[months]
        if standard[0] <= (end - start).days + 1 <= standard[1]:
            return f"{_SPAN_WORDS[months]} ended {fact.period_end}"
    return f"period {fact.period_start} to {fact.period_end}"


def period_roles(document: ExtractedDocument, period: FilingPeriod) -> dict[str, str]:
    """``{"start..end": "successor" | "predecessor"}``: the periods of a filing split in two, as a filer presents
    them after a business combination or a fresh start (the predecessor's up to the day before, the
    successor's from the day of it): a
    duration ending at the filing's period end that is no standard length (three, six, nine months, a year)
    is the successor's when some duration of the filing ends the day before it starts; each such duration
    is the predecessor's. Durations whose context's dimension member names the role are left to
    :func:`_role`."""
    durations = {
        (f.period_start, f.period_end)
        for f in document.facts
        if not f.instant and f.period_start and f.period_end and not f.dimensions
    }
    ends: dict[date, set[tuple[str, str]]] = {}
    for start, end in durations:
        day = _day(end)
        if day is not None:
            ends.setdefault(day, set()).add((start, end))
    roles: dict[str, str] = {}
    for start, end in durations:
        s, e = _day(start), _day(end)
        if s is None or e is None or abs((e - period.end).days) > END_SLACK_DAYS:
            continue
        days = (e - s).days + 1
        if any(lo <= days <= hi for lo, hi in ((80, 100), (170, 190), (260, 285), YEAR_DAYS)):
            continue
        before = ends.get(s - timedelta(days=1), set())
        if before:
            roles[f"{start}..{end}"] = "successor"
            for b_start, b_end in before:
                roles[f"{b_start}..{b_end}"] = "predecessor"
    return roles


def _amount_unit(name: KeyFigureName, unit: str | None) -> str | None:
    """The unit a fact of ``name`` is shown in: its currency (``"USD"``, ``"EUR"``) for an amount, ``"USD per
    share"`` for diluted EPS (``USD/shares``); None for a unit that is not that figure's (shares, a ratio)."""
    if unit is None:
        return None
    if name is K.eps_diluted:
        m = _PER_SHARE.match(unit)
        return f"{m.group(1)} per share" if m else None
    return unit if _CURRENCY.match(unit) else None


def key_figures_from_facts(document: ExtractedDocument) -> list[KeyFigure]:
    """The key figures a filing tags, as filed (:class:`schemas.filings.KeyFigure`), in :data:`CONCEPTS`
    order: per name, the fact of the filing's own period (:func:`filing_period`; else, as a 10-Q's cash flow
    statement is tagged, its year to date; ``current``) and, for the
    income figures (:data:`INCOME_AS_FILED`), every other entity-wide duration of the same concept ending at
    the period end (year to date: "nine months ended …") or belonging to a predecessor or successor
    (:func:`period_roles`); a successor's period ending at the period end is the current one when the filing
    tags no figure for its standard period (a company that began, or was acquired, during it).

    ``value`` is the fact's exact value with its ``scale`` and ``sign`` applied, in the fact's own unit
    (``"USD"``, ``"EUR"``; ``"USD per share"``): never rescaled, never converted. An outflow (capital
    expenditure, dividends paid) is the positive amount paid (``note`` says when the filer tagged it
    negative). A fact of the filing period whose displayed amount cannot be read (an unknown ``scale``, a
    number in parentheses inside the fact) gives a figure with ``value`` None, its text as displayed and its
    problem in ``note`` — unless a readable fact gives the figure. ``period`` is the context
    (:func:`period_label`), ``period_label`` the period in words (:func:`period_words`), ``statement``
    ``"XBRL"``, ``line`` the concept, ``page`` the unit holding it."""
    period = filing_period(document)
    if period is None:
        return []
    roles = period_roles(document, period)
    out: list[KeyFigure] = []
    for name, concepts in CONCEPTS.items():
        candidates = [
            f
            for f in document.facts
            if f.concept in concepts
            and _amount_unit(name, f.unit) is not None
            and (not f.dimensions or _role(f) is not None)
            and f.period_end is not None
        ]
        good = [f for f in candidates if f.value is not None and f.problem is None]
        own = sorted((f for f in good if not f.dimensions and period.holds(f)), key=_preference)
        if not own:  # a 10-Q's cash flow statement: tagged for the year to date only
            own = sorted((f for f in good if not f.dimensions and _to_date(f, period)), key=_preference)
        figures: list[XbrlFact] = own[:1]
        if name in INCOME_AS_FILED:
            figures += _other_periods(good, own[0] if own else None, period, roles)
        unread = [
            f for f in candidates if f.value is None and f.problem and f.text and not f.dimensions and period.holds(f)
        ]
        if not figures and unread:
            figures = unread[:1]
        for k, fact in enumerate(figures):
            current = k == 0 and (
                bool(own) or fact.value is None or (_role_of(fact, roles) == "successor" and _ends_at(fact, period))
            )
            out.append(_figure(name, fact, roles, current))
    return out


def _role_of(fact: XbrlFact, roles: dict[str, str]) -> str | None:
    """``"predecessor"``, ``"successor"`` (by the fact's dimension, :func:`_role`, or its period,
    :func:`period_roles`) or None."""
    return _role(fact) or roles.get(f"{fact.period_start}..{fact.period_end}")


def _to_date(fact: XbrlFact, period: FilingPeriod) -> bool:
    """A duration of six or nine months ending at the period end: a 10-Q's year to date."""
    start, end = _day(fact.period_start), _day(fact.period_end)
    if fact.instant or start is None or end is None or not _ends_at(fact, period):
        return False
    return any(lo <= (end - start).days + 1 <= hi for lo, hi in ((170, 190), (260, 285)))


def _ends_at(fact: XbrlFact, period: FilingPeriod) -> bool:
    end = _day(fact.period_end)
    return end is not None and abs((end - period.end).days) <= END_SLACK_DAYS


def _other_periods(
    good: list[XbrlFact], own: XbrlFact | None, period: FilingPeriod, roles: dict[str, str]
) -> list[XbrlFact]:
    """An income figure's facts of the filing's other periods (see :func:`key_figures_from_facts`): of the
    concept (and unit) of its own period's fact, else of its best-ranked concept tagged, durations ending at
    the period end (year to date) and the predecessor's and successor's periods within the filing's year (not
    a prior year's comparatives); the successor's first, then by length. One fact per period."""
    concept = own.concept if own else min((f.concept for f in good), key=_rank, default=None)
    seen = {(own.period_start, own.period_end)} if own else set()
    out = []
    for f in sorted((f for f in good if f.concept == concept), key=_preference):
        span, end = (f.period_start, f.period_end), _day(f.period_end)
        if span in seen or f.instant or end is None or (own is not None and f.unit != own.unit):
            continue
        role = _role_of(f, roles)
        this_year = (period.end - end).days < YEAR_DAYS[0]
        if (role is None and not f.dimensions and _ends_at(f, period)) or (role is not None and this_year):
            seen.add(span)
            out.append(f)
    out.sort(key=lambda f: (_role_of(f, roles) != "successor", _months(f) or 0, f.period_start or ""))
    return out


def _preference(fact: XbrlFact) -> tuple[int, int, str]:
    """Sort key of a figure's candidate facts: its concept's rank, a USD fact before another currency's, in
    document order after that."""
    return _rank(fact.concept), 0 if (fact.unit or "").startswith("USD") else 1, fact.context_id


def _figure(name: KeyFigureName, fact: XbrlFact, roles: dict[str, str], current: bool) -> KeyFigure:
    """The :class:`KeyFigure` of one fact (see :func:`key_figures_from_facts`)."""
    value = Decimal(fact.value) if fact.value is not None else None
    note = fact.problem if value is None else None
    flow = "outflow" if name in OUTFLOWS else None
    if flow and value is not None and value < 0:
        note = f'tagged negative ({fact.text} with sign="-"): a payment, shown as the positive amount paid'
        value = -value
    return KeyFigure(
        name=name,
        value=value,
        raw=fact.text or fact.value or "",
        unit=_amount_unit(name, fact.unit) or fact.unit or "",
        period=period_label(fact),
        period_label=period_words(fact, roles),
        statement="XBRL",
        line=fact.concept,
        page=fact.unit_number or 1,
        current=current,
        flow=flow,
        note=note,
    )


def _rank(concept: str) -> int:
    name = _NAME_OF.get(concept)
    return CONCEPTS[name].index(concept) if name is not None else 99
