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

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from schemas.documents import ExtractedDocument, XbrlFact
from schemas.filings import KeyFigure, KeyFigureName

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
    K.capital_expenditure: ("us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",),
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

_SCALE = {"thousands": Decimal(1000), "millions": Decimal(10**6), "billions": Decimal(10**9)}


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


def key_figures_from_facts(document: ExtractedDocument) -> list[KeyFigure]:
    """One :class:`KeyFigure` per name that the filing tags for its own period (:func:`period_facts`):
    ``value`` in USD millions (per share for EPS), ``raw`` the fact's displayed text, ``period`` its
    :func:`period_label`, ``statement`` ``"XBRL"``, ``line`` the concept, ``page`` the unit holding it."""
    found: dict[KeyFigureName, XbrlFact] = {}
    ranked = sorted(period_facts(document), key=lambda f: _rank(f.concept))
    for fact in ranked:
        name = _NAME_OF.get(fact.concept)
        if name is not None and name not in found and fact.unit in ("USD", "USD/shares"):
            found[name] = fact
    out = []
    for name in CONCEPTS:
        tagged = found.get(name)
        if tagged is None or tagged.value is None:
            continue
        fact, value = tagged, Decimal(tagged.value)
        per_share = name is K.eps_diluted
        out.append(
            KeyFigure(
                name=name,
                value=float(value if per_share else value / _SCALE["millions"]),
                raw=fact.text or fact.value,
                unit="USD per share" if per_share else "USD millions",
                period=period_label(fact),
                statement="XBRL",
                line=fact.concept,
                page=fact.unit_number or 1,
            )
        )
    return out


def _rank(concept: str) -> int:
    name = _NAME_OF.get(concept)
    return CONCEPTS[name].index(concept) if name is not None else 99
