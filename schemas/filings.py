"""The filing review profile: document kinds, the filing taxonomy, key figures and changes.

A document is reviewed under one of two profiles (:class:`Profile`): ``contract`` (the CUAD
taxonomy of :mod:`schemas.taxonomy`) or ``filing`` (an SEC filing: :class:`FilingTopic`). The
filing taxonomy follows what a compliance reviewer reads a filing for, named after the SEC's
own form items:

- Form 10-K / 10-Q items (Regulation S-K): Item 1A Risk Factors, Item 1C Cybersecurity
  (S-K Item 106, for fiscal years ending on or after 15 December 2023), Item 3 Legal
  Proceedings (S-K Item 103), Item 5 Market for Registrant's Common Equity (dividends; S-K Item
  703, issuer purchases of equity securities), Item 7 MD&A, Item 8 Financial Statements, Item 9A Controls and
  Procedures (S-K Item 308: material weakness, ineffective internal control), Item 13 Certain
  Relationships and Related Transactions (S-K Item 404);
- Form 8-K items: 1.01 Entry into a Material Definitive Agreement, 2.01 Completion of Acquisition
  or Disposition of Assets, 4.01 Changes in Registrant's
  Certifying Accountant, 4.02 Non-Reliance on Previously Issued Financial Statements,
  5.02 Departure/Election/Appointment of Directors or Certain Officers;
- auditing standards: PCAOB AS 2415 (going concern), AS 3101 (the auditor's report).

The enum *value* is a stable snake_case identifier used in schemas, rows and reports.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from schemas.findings import Finding


class Profile(str, Enum):
    """The review profile of a document: its taxonomy, prompt, schema and offline rules."""

    contract = "contract"
    filing = "filing"


class FilingForm(str, Enum):
    """The SEC form of a filing (``document_type`` in reports); ``other`` for a filing whose
    form is not one of these."""

    form_10k = "10-K"
    form_10q = "10-Q"
    form_8k = "8-K"
    earnings_release = "earnings release"
    other = "other"


#: ``document_type`` of a document reviewed under the contract profile.
CONTRACT_TYPE = "contract"


class FilingTopic(str, Enum):
    """A filing finding's category (the filing profile's taxonomy), or ``other``."""

    going_concern = "going_concern"
    material_weakness = "material_weakness"
    restatement = "restatement"
    auditor_change = "auditor_change"
    auditor_opinion = "auditor_opinion"
    legal_proceedings = "legal_proceedings"
    regulatory_investigation = "regulatory_investigation"
    cybersecurity = "cybersecurity"
    related_party_transactions = "related_party_transactions"
    debt_covenants = "debt_covenants"
    impairment = "impairment"
    subsequent_events = "subsequent_events"
    executive_change = "executive_change"
    material_agreement = "material_agreement"
    acquisition_disposition = "acquisition_disposition"
    dividends_and_repurchases = "dividends_and_repurchases"
    risk_factor = "risk_factor"
    key_figure = "key_figure"
    other = "other"


#: Display label of each filing topic, with the SEC item it comes from where there is one.
FILING_LABELS: dict[FilingTopic, str] = {
    FilingTopic.going_concern: "Going Concern Doubt",
    FilingTopic.material_weakness: "Material Weakness / Ineffective Internal Control (Item 9A)",
    FilingTopic.restatement: "Restatement / Non-Reliance (8-K Item 4.02)",
    FilingTopic.auditor_change: "Auditor Change (8-K Item 4.01)",
    FilingTopic.auditor_opinion: "Auditor's Opinion",
    FilingTopic.legal_proceedings: "Legal Proceedings (Item 3)",
    FilingTopic.regulatory_investigation: "Regulatory Investigation",
    FilingTopic.cybersecurity: "Cybersecurity (Item 1C) / Incident",
    FilingTopic.related_party_transactions: "Related-Party Transactions (Item 13)",
    FilingTopic.debt_covenants: "Debt Covenants",
    FilingTopic.impairment: "Impairment",
    FilingTopic.subsequent_events: "Subsequent Events",
    FilingTopic.executive_change: "Executive Change (8-K Item 5.02)",
    FilingTopic.material_agreement: "Material Agreement (8-K Item 1.01)",
    FilingTopic.acquisition_disposition: "Acquisition or Disposition (8-K Item 2.01)",
    FilingTopic.dividends_and_repurchases: "Dividends and Share Repurchases (Item 5)",
    FilingTopic.risk_factor: "Risk Factor (Item 1A)",
    FilingTopic.key_figure: "Key Financial Figure",
    FilingTopic.other: "Other",
}

#: Topics whose presence carries the most risk for a compliance reviewer.
HIGH_RISK_TOPICS: frozenset[FilingTopic] = frozenset(
    {
        FilingTopic.going_concern,
        FilingTopic.material_weakness,
        FilingTopic.restatement,
        FilingTopic.auditor_change,
        FilingTopic.regulatory_investigation,
    }
)


class KeyFigureName(str, Enum):
    """A key financial figure read from a primary financial statement (Item 8)."""

    revenue = "revenue"
    cost_of_revenue = "cost_of_revenue"
    operating_income = "operating_income"
    net_income = "net_income"
    eps_diluted = "eps_diluted"
    operating_cash_flow = "operating_cash_flow"
    capital_expenditure = "capital_expenditure"
    dividends_paid = "dividends_paid"
    cash = "cash"
    inventories = "inventories"
    property_plant_equipment_net = "property_plant_equipment_net"
    total_current_assets = "total_current_assets"
    total_assets = "total_assets"
    accounts_payable = "accounts_payable"
    total_current_liabilities = "total_current_liabilities"
    total_debt = "total_debt"
    long_term_debt = "long_term_debt"


#: Key figures that are payments (cash flow statement outflows): stated as the positive amount paid, whatever
#: sign a statement's parentheses or a filer's tag gives them (:attr:`KeyFigure.flow`).
OUTFLOWS = frozenset({KeyFigureName.capital_expenditure, KeyFigureName.dividends_paid})


class FilingFinding(Finding):
    """A finding of a filing: :class:`schemas.findings.Finding` with a :class:`FilingTopic`
    category. ``page`` is 1-based; ``evidence`` is verbatim from the filing; ``values`` hold the
    stated amounts, dates, names and Items exactly as written in the evidence."""

    model_config = ConfigDict(extra="forbid")

    # Narrower than Finding's ClauseType on purpose: the filing review's schema lists filing topics only
    clause_type: FilingTopic = Field(description="Filing topic of the passage (see the topic list).")  # type: ignore[assignment]


class FilingReviewToolInput(BaseModel):
    """Input of the ``record_findings`` tool (or the structured reply) for one passage of a filing."""

    model_config = ConfigDict(extra="forbid")

    findings: list[FilingFinding] = Field(
        default_factory=list,
        description="All findings in the passage; an empty list when the passage has none.",
    )


class DocumentKind(BaseModel):
    """How a document was classified at ingest.

    ``profile``: the review profile used; ``document_type``: ``"contract"`` or a
    :class:`FilingForm` value; ``reason``: what decided it (the cover-page phrase found, the run's
    override, or why a document that looked like a filing is reviewed as a contract);
    ``company``: the registrant's name from the cover page (None when not found); ``period``: the
    fiscal period the filing reports on, ISO date ``YYYY-MM-DD`` of its end (None when not found);
    ``file_number``: the registrant's SEC Commission file number from the cover page (e.g.
    ``"1-3285"``; one per registrant, so it identifies the company across filings; None when absent);
    ``amendment``: the cover page reads "FORM 10-K/A" or "FORM 10-Q/A" (an amendment of the filing of
    the same form and period, Exchange Act Rule 12b-15).
    """

    profile: Profile
    document_type: str
    reason: str
    company: str | None = None
    period: str | None = None
    file_number: str | None = None
    amendment: bool = False


#: Units a key figure's amount is stated in by a PDF statement's heading, with their power of ten: the
#: statement says "(in millions)" and shows 26,974; the figure is 26974 in "USD millions".
STATED_SCALES = {"thousands": 3, "millions": 6, "billions": 9}

#: Words of a large amount's order of magnitude in :func:`format_amount`'s reading aid.
_MAGNITUDES = ((12, "trillion"), (9, "billion"), (6, "million"))


def format_amount(value: Decimal | None, unit: str, stated: str = "") -> str:
    """A figure as every surface shows it (the HTML report, report.json's ``shown``, Prefect artifacts, events,
    the changes since the previous filing): the exact ``value`` with its digits grouped, then the ``unit`` it
    really is in, never rescaled: ``"16,177,000 USD (16.2 million)"`` (an XBRL fact's value after its
    ``scale``), ``"26,974 USD millions"`` (a statement that states "in millions"), ``"-1,234.5 EUR"``,
    ``"1.74 USD per share"``. An amount in a bare currency of a million or more gets a reading aid in
    brackets, its order of magnitude to three significant digits; the exact digits come first.

    ``value`` None (a fact whose ``scale`` or displayed text cannot be read) shows the amount ``stated``, as
    displayed in the filing, with the unit and no conversion: ``"98.3 USD (as displayed; not converted)"``."""
    if value is None:
        return f"{stated or '?'} {unit} (as displayed; not converted)".strip()
    digits = format(value.normalize() if value == value.to_integral_value() else value, ",f")
    text = f"{digits} {unit}".strip()
    if " " not in unit and "/" not in unit and unit != "shares" and abs(value) >= 10**6:
        power, word = next((p, w) for p, w in _MAGNITUDES if abs(value) >= Decimal(10) ** p)
        short = value.scaleb(-power)
        if abs(short) < 1000:  # three significant digits, half up: 16.2, 98.3, 2.65, 5
            short = short.quantize(Decimal(1).scaleb(short.adjusted() - 2), rounding=ROUND_HALF_UP)
        aid = format(short.normalize(), "f") if abs(short) < 1000 else format(short.to_integral_value(), ",f")
        text += f" ({aid} {word})"
    return text


class KeyFigure(BaseModel):
    """One key figure of a filing, stored with its exact value and the unit that value is in.

    - ``value``: the exact amount (:class:`decimal.Decimal`; a string in JSON, ``"16177000"``) in ``unit``;
      None when the filing's amount cannot be read as a number of that unit (an XBRL fact with an unknown
      ``scale``, or a number in parentheses inside the fact): ``raw`` is then shown as displayed, with
      ``note`` saying why, never converted;
    - ``unit``: an XBRL fact's own unit, its ``scale`` applied (``"USD"``, ``"EUR"``; per-share amounts
      ``"USD per share"``), or a PDF statement's stated one (``"USD millions"`` for a statement "in
      millions", ``"USD thousands"``, ``"USD"`` when none is stated);
    - ``raw``: the amount as displayed (``"16,177"``, ``"(1,577)"``); ``line``: the statement line it was
      read from (verbatim) or the XBRL concept; ``statement``: income, balance sheet, cash flow, earnings
      table or ``XBRL``;
    - ``period``: the column's year (``"2018"``) or the XBRL context (``"2024-01-01..2024-09-30"``, an
      instant ``"2024-09-30"``); ``period_label`` the period in words (``"nine months ended 2024-09-30"``,
      ``"successor period 2023-07-23 to 2023-09-30"``, ``"as of 2024-09-30"``, ``"fiscal year 2018"``);
    - ``current``: the figure of the filing's own period, one per name, the one compared with the previous
      filing; an income figure of another period the filing also tags (year to date, a predecessor's or
      successor's period) is not current;
    - ``flow``: ``"outflow"`` for capital expenditure and dividends paid, stated as the positive amount paid
      whatever sign the statement's parentheses or the filer's tag gave it (``note`` says when it was
      tagged negative);
    - ``page``: the 1-based text unit it was read from (a PDF's page; an HTML filing's page part: the report
      gives its locator).

    ``shown`` (:func:`format_amount`) and ``title`` (``"net loss"`` for a negative net income) are how every
    surface shows it."""

    name: KeyFigureName
    value: Decimal | None
    raw: str
    unit: str
    period: str | None
    statement: str
    line: str
    page: int
    period_label: str | None = None
    current: bool = True
    flow: Literal["outflow"] | None = None
    note: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown(self) -> str:
        """The figure as every surface shows it (:func:`format_amount`), with ``(outflow: paid)`` for an
        outflow."""
        text = format_amount(self.value, self.unit, self.raw)
        return f"{text} paid (outflow)" if self.flow == "outflow" and self.value is not None else text

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title(self) -> str:
        """The figure's name in words: ``"revenue"``, ``"net loss"`` (net income below zero),
        ``"capital expenditure"``."""
        if self.name is KeyFigureName.net_income and self.value is not None and self.value < 0:
            return "net loss"
        return self.name.value.replace("_", " ")


class RedFlag(BaseModel):
    """A red flag of a filing with its evidence: ``flag`` (``going_concern``, ``material_weakness``,
    ``auditor_change``, ``non_reliance``, ``cybersecurity_incident``, ``covenant_breach``), ``reason`` (what it
    means for a reviewer and its rule's source), ``evidence`` (the sentence or Item heading, verbatim) and
    the 1-based ``page`` (unit) it is on."""

    flag: str
    reason: str
    evidence: str
    page: int


class FilingSummary(BaseModel):
    """What a filing's later review and the comparison with the previous filing need.

    ``sections``: ``[[first page, "Item 7. Management's Discussion …"], …]`` in page order (the
    Item heading each page range falls under); ``risk_headings``: the risk-factor headings of
    Item 1A (normalised whitespace); ``risk_heading_pages``: the 1-based page (unit) of each heading, in
    the same order (empty in a summary stored before pages were recorded); ``flags``: ``{"going_concern": bool, "material_weakness":
    bool, "auditor": str | None}``; ``key_figures``: the current-period figures, one per name;
    ``red_flags``: each red flag with its evidence and page (:class:`RedFlag`).
    """

    sections: list[tuple[int, str]] = Field(default_factory=list)
    risk_headings: list[str] = Field(default_factory=list)
    risk_heading_pages: list[int] = Field(default_factory=list)
    flags: dict[str, bool | str | None] = Field(default_factory=dict)
    key_figures: list[KeyFigure] = Field(default_factory=list)
    red_flags: list[RedFlag] = Field(default_factory=list)
    fact_problems: list[str] = Field(
        default_factory=list,
        description="Inline XBRL facts of the filing period not used, each 'concept: reason' (at most 20).",
    )

    def section_at(self, page: int) -> str | None:
        """The Item heading the 1-based ``page`` falls under; None before the first heading."""
        found = None
        for first, title in self.sections:
            if first > page:
                break
            found = title
        return found


class FilingChange(BaseModel):
    """One change since the previous filing of the same company and form.

    ``kind``: ``risk_factor_added``, ``risk_factor_removed``, ``risk_factors_not_compared``,
    ``figure_changed``, ``figure_not_compared``, ``flag_appeared``, ``flag_disappeared`` or
    ``auditor_changed``; ``subject``: the heading, figure name or flag; ``before``/``after``: the
    previous and current value (text); ``change``: the relative change of a figure (``0.12`` = +12 %),
    else None; ``high_risk``: a going-concern doubt or material weakness that appeared, or a change of
    auditor; ``basis``: for a figure, the periods compared (``"12 months ended 2021 → 12 months ended
    2022"``) or, for ``figure_not_compared``, why the two figures are not one measure
    (:func:`tasks.observe.changes.figure_basis`); ``page``: where the evidence is — an added risk
    factor's heading in this filing, a removed one's in the previous filing (1-based page or unit),
    else None.
    """

    kind: str
    subject: str
    before: str | None = None
    after: str | None = None
    change: float | None = None
    high_risk: bool = False
    basis: str | None = None
    page: int | None = None


def topic_label(value: str) -> str:
    """Display label of a filing topic value (``"going_concern"`` → ``"Going Concern Doubt"``);
    raises ``ValueError`` for a value that is not a :class:`FilingTopic`."""
    return FILING_LABELS[FilingTopic(value)]
