"""Sample contract PDFs with known ground truth, for ``make run`` and for tests.

:func:`generate_samples` writes a few realistic commercial contracts (master services, supply,
software license, distribution) as text-layer PDFs and returns, for each, a
:class:`SampleContract` holding the raw values printed in it (parties, dates, governing law,
liability cap, fees, term, renewal, notice periods) and the 1-based page on which each
clause's key sentence starts, keyed by :class:`schemas.taxonomy.ClauseType` value.

Everything is drawn from a seeded :class:`random.Random`, and the PDF creation date is fixed, so a
given ``(seed, count)`` always produces the same ground truth and byte-identical PDFs (for one
fpdf2 version). Text uses the core Helvetica font, so it is kept to latin-1 (straight quotes,
no em-dashes). Each key sentence starts its own paragraph, so its start page is exact. Every
third contract (index 0, 3, ...) has its liability-cap sentence deliberately started on the
last line of a page so that it, and usually the cap amount, continues on the next page.

Run ``python -m docreview_testing.samples OUT_DIR [--count N] [--seed S]`` to write samples plus
``ground_truth.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from pydantic import BaseModel, Field

from schemas.taxonomy import ClauseType

#: Default seed of :func:`generate_samples`.
SAMPLE_SEED = 20261129

#: Page-count bounds of every generated contract (inclusive).
MIN_PAGES = 4
MAX_PAGES = 8

#: Fixed PDF creation date so output bytes depend only on the seed.
_CREATION_DATE = datetime(2024, 1, 1, tzinfo=UTC)

_BODY_SIZE = 10  # pt
_LINE_H = 5.0  # mm per body line
_PARA_GAP = 2.0  # mm after each paragraph

# --------------------------------------------------------------------------------------------
# Ground truth model
# --------------------------------------------------------------------------------------------


class SampleContract(BaseModel):
    """Ground truth of one generated sample contract.

    All value fields hold the text exactly as printed in the PDF (e.g. ``"March 1, 2024"``,
    ``"$1,500,000"``, ``"ninety (90) days"``); after collapsing whitespace they are substrings
    of the pypdf-extracted text of the pages their clause spans.

    - ``clauses``: clause id (a :class:`~schemas.taxonomy.ClauseType` value) -> 1-based page on
      which the clause's key sentence starts. Several ids may share one sentence (the preamble
      carries ``parties``, ``agreement_date`` and ``effective_date``).
    - ``clause_end_pages``: same keys -> 1-based page on which that key sentence ends (equal to
      the start page unless the sentence crosses a page break).
    - ``clause_quotes``: same keys -> the key sentence as printed (no section number/caption).
    - ``page_crossing_clause``: a clause id whose key sentence starts on one page and ends on
      the next (the deliberately placed liability cap when there is one, else the first key
      sentence that crossed naturally), or ``None``.
    - ``payment_pages``: 1-based page of each entry of ``payment_amounts`` (same order).
    - ``pages``: number of pages of the PDF.
    - ``running_header``: the header line printed at the top of pages 2..N (each page also
      ends with a ``"Page N of M"`` footer); a value split by a page break has this noise
      (footer, then header) between its parts in the extracted text.
    """

    file_name: str
    title: str
    agreement_type: str
    parties: list[str]
    party_roles: list[str]
    agreement_date: str
    effective_date: str
    governing_law: str
    liability_cap: str
    payment_amounts: list[str]
    payment_pages: list[int]
    payment_terms: str
    term: str
    renewal_term: str
    renewal_notice: str
    termination_notice: str
    pages: int
    running_header: str
    clauses: dict[str, int]
    clause_end_pages: dict[str, int] = Field(default_factory=dict)
    clause_quotes: dict[str, str] = Field(default_factory=dict)
    page_crossing_clause: str | None = None


# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------

_COMPANY_STEMS = [
    "Acme Analytics",
    "Bluewater Logistics",
    "Cedar Ridge Software",
    "Granite Peak Manufacturing",
    "Harborview Health Systems",
    "Ironclad Security",
    "Juniper Data Systems",
    "Kestrel Aerospace",
    "Lakeshore Foods",
    "Meridian Robotics",
    "Northwind Traders",
    "Orchard Retail Group",
    "Pinecrest Pharmaceuticals",
    "Quantum Ledger",
    "Redwood Energy",
    "Summit Outdoor Supply",
    "Tidewater Marine",
    "Vantage Media",
    "Willow Creek Hospitality",
    "Sterling Fabrication",
    "Brightline Telecom",
    "Copperfield Components",
    "Evergreen Biologics",
    "Falcon Freight",
]
_SUFFIXES = [
    (", Inc.", "corporation"),
    (" LLC", "limited liability company"),
    (" Corporation", "corporation"),
    (" L.P.", "limited partnership"),
    (" Co.", "corporation"),
]
_STATES = [
    "Delaware",
    "New York",
    "California",
    "Texas",
    "Illinois",
    "Massachusetts",
    "Colorado",
    "Georgia",
    "Florida",
    "Ohio",
    "Pennsylvania",
    "New Jersey",
]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_SIGNATORIES = [
    ("Jane A. Whitfield", "Chief Executive Officer"),
    ("Robert T. Nakamura", "President"),
    ("Maria L. Ortega", "Chief Financial Officer"),
    ("David K. Osei", "General Counsel"),
    ("Susan P. Lindqvist", "Chief Operating Officer"),
    ("Thomas R. Avery", "Vice President, Sales"),
    ("Priya N. Raman", "Chief Technology Officer"),
    ("Michael J. Brennan", "Managing Director"),
]
_NUMBER_WORDS = {
    1: "one",
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    10: "ten",
    12: "twelve",
    15: "fifteen",
    18: "eighteen",
    24: "twenty-four",
    30: "thirty",
    36: "thirty-six",
    45: "forty-five",
    60: "sixty",
    90: "ninety",
    120: "one hundred twenty",
    180: "one hundred eighty",
}

#: Agreement types: key, title, (provider-side role, customer-side role).
_TYPES = [
    ("msa", "MASTER SERVICES AGREEMENT", ("Provider", "Customer")),
    ("supply", "SUPPLY AGREEMENT", ("Supplier", "Buyer")),
    ("license", "SOFTWARE LICENSE AGREEMENT", ("Licensor", "Licensee")),
    ("distribution", "DISTRIBUTION AGREEMENT", ("Supplier", "Distributor")),
]


def _words(n: int, unit: str | None = None) -> str:
    """``30, "days"`` -> ``"thirty (30) days"``; without ``unit`` -> ``"thirty (30)"``."""
    text = f"{_NUMBER_WORDS[n]} ({n})"
    return f"{text} {unit}" if unit else text


def _period(n: int, unit: str) -> str:
    """``3, "year"`` -> ``"three (3) years"`` (plural unless ``n == 1``)."""
    return _words(n, unit if n == 1 else unit + "s")


def _money(amount: float) -> str:
    """``1500000`` -> ``"$1,500,000"``; non-integers keep cents (``"$42.50"``)."""
    if float(amount).is_integer():
        return f"${int(amount):,}"
    return f"${amount:,.2f}"


def _date(rng: random.Random, year: int | None = None) -> tuple[int, int, int]:
    return (year or rng.randint(2021, 2025), rng.randint(1, 12), rng.randint(1, 28))


def _fmt_date(d: tuple[int, int, int]) -> str:
    return f"{_MONTHS[d[1] - 1]} {d[2]}, {d[0]}"


# --------------------------------------------------------------------------------------------
# Contract spec (all random choices of one contract)
# --------------------------------------------------------------------------------------------


class _Spec(BaseModel):
    index: int
    kind: str
    title: str
    roles: tuple[str, str]
    names: tuple[str, str]
    entity: tuple[str, str]
    inc_states: tuple[str, str]
    agreement_date: str
    effective_date: str
    governing_law: str
    cap: str
    cap_style: int
    fees: list[tuple[str, str]]  # (printed line with {amt}, amount text)
    payment_days: int
    term: str
    renewal: str
    renewal_days: int
    convenience_days: int
    insurance_amount: str
    audit_days: int
    minimum_units: int
    warranty_months: int
    optional: set[str]
    signatories: tuple[tuple[str, str], tuple[str, str]]
    cross_cap: bool


def _make_spec(rng: random.Random, index: int, stems: list[str]) -> _Spec:
    kind, title, roles = _TYPES[index % len(_TYPES)]
    a_suffix, a_entity = rng.choice(_SUFFIXES)
    b_suffix, b_entity = rng.choice(_SUFFIXES)
    names = (stems[0] + a_suffix, stems[1] + b_suffix)
    effective = _date(rng)
    if rng.random() < 0.5:
        agreement = effective
    else:  # signed a few weeks before it takes effect
        y, m, d = effective
        agreement = (y, m - 1, d) if m > 1 else (y - 1, 12, d)
    years = rng.choice([1, 2, 3, 5])
    term = _period(years, "year") if rng.random() < 0.7 else _period(rng.choice([24, 36]), "month")
    renewal = rng.choice(
        [
            f"successive {_words(1)} year periods",
            f"successive {_words(2)} year periods",
            f"successive {_words(12)} month periods",
            f"additional {_words(1)} year terms",
        ]
    )
    cap = _money(rng.choice([250_000, 500_000, 750_000, 1_000_000, 1_500_000, 2_000_000, 5_000_000]))
    if kind == "msa":
        fees = [
            (
                "Implementation fee: {amt}, payable upon execution of this Agreement",
                rng.choice([10_000, 15_000, 25_000, 40_000]),
            ),
            (
                "Monthly services fee: {amt} per month, invoiced monthly in advance",
                rng.choice([8_500, 12_000, 18_500, 25_000, 32_000]),
            ),
            ("Additional professional services: {amt} per hour", rng.choice([175, 225, 250, 310])),
        ]
    elif kind == "supply":
        fees = [
            (
                "Unit price: {amt} per unit of Product, FCA Supplier's facility",
                rng.choice([12.75, 42.50, 118.00, 7.20]),
            ),
            ("Tooling and setup charge: {amt}, payable once", rng.choice([20_000, 35_000, 60_000])),
        ]
    elif kind == "license":
        fees = [
            (
                "Annual license fee: {amt} per year, payable annually in advance",
                rng.choice([60_000, 120_000, 240_000, 95_000]),
            ),
            ("Annual support and maintenance fee: {amt} per year", rng.choice([12_000, 24_000, 36_000])),
            ("On-site training: {amt} per day", rng.choice([1_800, 2_400, 3_000])),
        ]
    else:
        fees = [
            (
                "Distributor price: {amt} per unit, being the list price less the applicable discount",
                rng.choice([19.95, 64.00, 240.00]),
            ),
            ("Annual marketing contribution: {amt} per Contract Year", rng.choice([50_000, 75_000, 100_000])),
        ]
    optional_pool = {
        "msa": ["post_termination_services", "no_solicit_of_employees", "uncapped_liability"],
        "supply": ["most_favored_nation", "liquidated_damages", "uncapped_liability"],
        "license": ["source_code_escrow", "uncapped_liability", "no_solicit_of_employees"],
        "distribution": ["non_compete", "no_solicit_of_customers", "uncapped_liability"],
    }[kind]
    optional = {c for c in optional_pool if rng.random() < 0.6}
    sig = rng.sample(_SIGNATORIES, 2)
    return _Spec(
        index=index,
        kind=kind,
        title=title,
        roles=roles,
        names=names,
        entity=(a_entity, b_entity),
        inc_states=(rng.choice(_STATES), rng.choice(_STATES)),
        agreement_date=_fmt_date(agreement),
        effective_date=_fmt_date(effective),
        governing_law=rng.choice(_STATES),
        cap=cap,
        cap_style=rng.randint(0, 2),
        fees=[(line, _money(amount)) for line, amount in fees],
        payment_days=rng.choice([30, 45, 60]),
        term=term,
        renewal=renewal,
        renewal_days=rng.choice([30, 60, 90, 120]),
        convenience_days=rng.choice([30, 60, 90, 180]),
        insurance_amount=_money(rng.choice([1_000_000, 2_000_000, 5_000_000])),
        audit_days=rng.choice([10, 15, 30]),
        minimum_units=rng.choice([5_000, 10_000, 25_000, 50_000]),
        warranty_months=rng.choice([6, 12, 18, 24]),
        optional=optional,
        signatories=(tuple(sig[0]), tuple(sig[1])),
        cross_cap=index % 3 == 0,
    )


# --------------------------------------------------------------------------------------------
# Filler prose (templates; {A}/{B} are the two roles)
# --------------------------------------------------------------------------------------------

_DEFINITIONS = [
    '"Affiliate" means any entity that directly or indirectly controls, is controlled by, or is under common control with a party, where "control" means ownership of more than fifty percent of the voting interests of such entity.',
    '"Business Day" means any day other than a Saturday, Sunday or a day on which commercial banks in the city of the notifying party are authorized or required by law to close.',
    '"Confidential Information" means all non-public information disclosed by or on behalf of a party, whether orally or in writing, that is designated as confidential or that reasonably should be understood to be confidential given the nature of the information and the circumstances of disclosure.',
    '"Documentation" means the user guides, specifications and other written materials made available by {A} that describe the functionality and use of the deliverables provided under this Agreement.',
    '"Intellectual Property Rights" means all patents, copyrights, trademarks, trade secrets, database rights, moral rights and other intellectual property rights of any kind, whether registered or unregistered, anywhere in the world.',
    '"Personal Data" means any information relating to an identified or identifiable natural person that is processed by either party in connection with this Agreement.',
    '"Order" means an ordering document, statement of work or purchase order executed by both parties that references this Agreement and describes the items to be provided and the applicable charges.',
    '"Losses" means all losses, damages, liabilities, deficiencies, judgments, interest, awards, penalties, fines, costs and expenses of whatever kind, including reasonable attorneys\' fees.',
    '"Contract Year" means each successive twelve-month period beginning on the Effective Date or an anniversary thereof.',
    '"Territory" means the geographic area identified in the applicable Order, or if none is identified, the United States of America.',
]

_FILLER: dict[str, list[tuple[str, str]]] = {
    "scope": [
        (
            "Orders",
            "Each Order shall be governed by the terms of this Agreement. In the event of any conflict between this Agreement and an Order, this Agreement shall prevail unless the Order expressly states that a specific provision of this Agreement is superseded. No preprinted terms on any purchase order or acknowledgment form shall have any force or effect.",
        ),
        (
            "Personnel",
            "{A} shall ensure that its personnel are appropriately qualified, trained and supervised. {A} shall remain responsible for the acts and omissions of its subcontractors as if they were its own, and shall require each subcontractor to comply with obligations at least as protective as those set out herein.",
        ),
        (
            "Cooperation",
            "{B} shall provide {A} with timely access to such information, facilities and personnel as {A} reasonably requests in order to perform its obligations. {A} shall not be liable for any delay or failure to the extent caused by {B}'s failure to provide such cooperation.",
        ),
        (
            "Changes",
            "Either party may request changes to the scope of an Order by written change request. No change shall be binding unless set out in a written amendment or change order signed by authorized representatives of both parties, which shall describe any adjustment to the charges and schedule.",
        ),
        (
            "Acceptance",
            "{B} shall have fifteen (15) Business Days after delivery to test each deliverable against the applicable specifications. If a deliverable fails to conform in any material respect, {B} may reject it by written notice describing the nonconformity in reasonable detail, and {A} shall correct and redeliver it.",
        ),
        (
            "Standards",
            "{A} shall perform its obligations in a professional and workmanlike manner consistent with generally accepted industry standards, and in compliance with all applicable laws, regulations and the reasonable policies of {B} communicated in writing in advance.",
        ),
    ],
    "fees": [
        (
            "Taxes",
            "All amounts payable hereunder are exclusive of sales, use, value added, withholding and similar taxes. {B} shall pay all such taxes other than taxes based on {A}'s net income, property or employees.",
        ),
        (
            "Late Payment",
            "Any undisputed amount not paid when due shall accrue interest at the lesser of one percent (1%) per month and the maximum rate permitted by applicable law, from the due date until paid in full.",
        ),
        (
            "Disputed Invoices",
            "If {B} disputes any invoice in good faith, it shall notify {A} in writing before the due date, specifying the disputed amount and the basis of the dispute, and shall pay the undisputed portion. The parties shall work diligently to resolve any such dispute.",
        ),
        (
            "Expenses",
            "{B} shall reimburse {A} for reasonable, pre-approved travel and out-of-pocket expenses incurred in performing its obligations, in accordance with {B}'s expense policy, upon submission of receipts or other reasonable documentation.",
        ),
        (
            "Price Adjustments",
            "The charges set out above shall remain fixed for the first Contract Year. Thereafter {A} may adjust the charges once per Contract Year upon written notice, provided that no such adjustment shall exceed the percentage change in the consumer price index for the preceding twelve months.",
        ),
    ],
    "term": [
        (
            "Termination for Cause",
            "Either party may terminate this Agreement upon written notice if the other party materially breaches this Agreement and fails to cure such breach within thirty (30) days after receiving written notice describing the breach in reasonable detail.",
        ),
        (
            "Insolvency",
            "Either party may terminate this Agreement immediately upon written notice if the other party becomes insolvent, makes a general assignment for the benefit of creditors, or becomes the subject of any voluntary or involuntary bankruptcy proceeding that is not dismissed within sixty days.",
        ),
        (
            "Effect of Termination",
            "Upon expiration or termination of this Agreement, all amounts accrued but unpaid shall become immediately due, and each party shall return or destroy the Confidential Information of the other party in its possession, except as required to be retained by law.",
        ),
        (
            "Survival",
            "Any provision of this Agreement that by its nature is intended to survive expiration or termination shall so survive, including provisions relating to payment obligations, confidentiality, indemnification, limitation of liability and governing law.",
        ),
    ],
    "confidentiality": [
        (
            "Obligations",
            "The receiving party shall use the Confidential Information of the disclosing party solely to perform its obligations or exercise its rights under this Agreement, and shall protect it using at least the same degree of care it uses to protect its own confidential information of like importance, but no less than reasonable care.",
        ),
        (
            "Exceptions",
            "Confidential Information does not include information that is or becomes publicly available through no fault of the receiving party, was lawfully known to the receiving party before disclosure, is lawfully received from a third party without restriction, or is independently developed without use of the disclosing party's information.",
        ),
        (
            "Compelled Disclosure",
            "The receiving party may disclose Confidential Information to the extent required by law or court order, provided that it gives the disclosing party prompt written notice, where legally permitted, and reasonable assistance in seeking a protective order.",
        ),
        (
            "Equitable Relief",
            "Each party acknowledges that unauthorized disclosure of Confidential Information may cause irreparable harm for which monetary damages would be an inadequate remedy, and that the disclosing party shall be entitled to seek injunctive relief in addition to any other remedies available.",
        ),
        (
            "Duration",
            "The obligations in this Section shall continue during the Term and for five (5) years thereafter, and with respect to trade secrets, for so long as such information remains a trade secret under applicable law.",
        ),
    ],
    "data": [
        (
            "Processing",
            "To the extent {A} processes Personal Data on behalf of {B}, {A} shall process such Personal Data only on the documented instructions of {B} and in accordance with all applicable data protection laws.",
        ),
        (
            "Security",
            "{A} shall implement and maintain appropriate technical and organizational measures designed to protect Personal Data against accidental or unlawful destruction, loss, alteration, unauthorized disclosure or access, including encryption of data in transit and at rest.",
        ),
        (
            "Security Incidents",
            "{A} shall notify {B} without undue delay, and in any event within seventy-two hours, after becoming aware of any security incident affecting Personal Data, and shall provide such information and cooperation as {B} reasonably requires.",
        ),
        (
            "Subprocessors",
            "{A} shall not engage any subprocessor to process Personal Data without providing {B} with prior written notice and an opportunity to object, and shall impose data protection obligations on each subprocessor no less protective than those set out in this Agreement.",
        ),
    ],
    "liability": [
        (
            "Exclusion of Damages",
            "EXCEPT FOR A PARTY'S BREACH OF ITS CONFIDENTIALITY OBLIGATIONS, NEITHER PARTY SHALL BE LIABLE TO THE OTHER FOR ANY INDIRECT, INCIDENTAL, SPECIAL, CONSEQUENTIAL OR PUNITIVE DAMAGES, OR FOR ANY LOSS OF PROFITS, REVENUE, DATA OR GOODWILL, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGES.",
        ),
        (
            "Disclaimer",
            "EXCEPT AS EXPRESSLY PROVIDED IN THIS AGREEMENT, NEITHER PARTY MAKES ANY WARRANTY OF ANY KIND, WHETHER EXPRESS, IMPLIED OR STATUTORY, AND EACH PARTY SPECIFICALLY DISCLAIMS ALL IMPLIED WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NON-INFRINGEMENT.",
        ),
        (
            "Allocation of Risk",
            "The parties agree that the limitations set out in this Section reflect an informed and voluntary allocation of the risks between them, that the charges reflect that allocation, and that such limitations shall apply notwithstanding the failure of the essential purpose of any limited remedy.",
        ),
        (
            "Mitigation",
            "Each party shall use commercially reasonable efforts to mitigate any Losses it may suffer or incur as a result of any event giving rise to a claim against the other party under this Agreement.",
        ),
    ],
    "indemnity": [
        (
            "Indemnification by {A}",
            "{A} shall defend, indemnify and hold harmless {B} and its Affiliates from and against all Losses arising out of any third-party claim alleging that the deliverables provided under this Agreement infringe or misappropriate any Intellectual Property Rights of such third party.",
        ),
        (
            "Indemnification by {B}",
            "{B} shall defend, indemnify and hold harmless {A} and its Affiliates from and against all Losses arising out of any third-party claim arising from {B}'s breach of applicable law or its use of the deliverables other than in accordance with this Agreement.",
        ),
        (
            "Procedure",
            "The indemnified party shall give the indemnifying party prompt written notice of the claim, sole control of its defense and settlement, and reasonable cooperation at the indemnifying party's expense, provided that no settlement imposing any obligation on the indemnified party shall be made without its consent.",
        ),
        (
            "Mitigation of Infringement",
            "If any deliverable becomes, or in {A}'s opinion is likely to become, the subject of an infringement claim, {A} may at its option procure the right for {B} to continue using it, modify it to be non-infringing, or replace it with a functionally equivalent item.",
        ),
    ],
    "assignment": [
        (
            "Successors",
            "Subject to the foregoing, this Agreement shall be binding upon and inure to the benefit of the parties and their respective permitted successors and assigns. Any purported assignment in violation of this Section shall be null and void.",
        ),
        (
            "Subcontracting",
            "{A} may subcontract any of its obligations to a qualified subcontractor, provided that {A} remains fully responsible for the performance of such obligations and for the acts and omissions of the subcontractor.",
        ),
    ],
    "insurance": [
        (
            "Certificates",
            "Upon request, {A} shall furnish {B} with certificates of insurance evidencing the required coverage, and shall provide at least thirty (30) days' prior written notice of any cancellation or material reduction of such coverage.",
        ),
        (
            "Carriers",
            "All required insurance shall be placed with insurers authorized to do business in the relevant jurisdiction and having an A.M. Best rating of A- VII or better, and shall name {B} as an additional insured where commercially available.",
        ),
    ],
    "audit": [
        (
            "Records",
            "{A} shall maintain complete and accurate books and records relating to the charges invoiced under this Agreement for at least three (3) years after the end of the Contract Year to which they relate.",
        ),
        (
            "Audit Costs",
            "Audits shall be conducted during normal business hours and in a manner that does not unreasonably interfere with {A}'s operations. {B} shall bear the costs of any audit unless it reveals an overcharge exceeding five percent (5%) for the audited period, in which case {A} shall reimburse the reasonable costs of the audit.",
        ),
    ],
    "law": [
        (
            "Jurisdiction",
            "Each party irrevocably submits to the exclusive jurisdiction of the state and federal courts located in that State for any action arising out of or relating to this Agreement, and waives any objection to venue in such courts.",
        ),
        (
            "Waiver of Jury Trial",
            "EACH PARTY HEREBY IRREVOCABLY WAIVES, TO THE FULLEST EXTENT PERMITTED BY APPLICABLE LAW, ANY RIGHT IT MAY HAVE TO A TRIAL BY JURY IN ANY PROCEEDING ARISING OUT OF OR RELATING TO THIS AGREEMENT.",
        ),
        (
            "Dispute Escalation",
            "Before commencing any proceeding, the parties shall attempt in good faith to resolve any dispute by escalating it to senior executives of each party, who shall meet within fifteen (15) Business Days after a written request by either party.",
        ),
    ],
    "misc": [
        (
            "Entire Agreement",
            "This Agreement, together with all Orders and exhibits, constitutes the entire agreement between the parties with respect to its subject matter and supersedes all prior and contemporaneous understandings, agreements, representations and warranties, whether written or oral.",
        ),
        (
            "Amendment and Waiver",
            "No amendment of this Agreement shall be effective unless in writing and signed by both parties. No failure or delay in exercising any right shall operate as a waiver thereof, nor shall any single or partial exercise preclude any further exercise of that right.",
        ),
        (
            "Severability",
            "If any provision of this Agreement is held invalid or unenforceable, that provision shall be enforced to the maximum extent permissible and the remaining provisions shall continue in full force and effect.",
        ),
        (
            "Notices",
            "All notices under this Agreement shall be in writing and shall be deemed given when delivered personally, one Business Day after deposit with a nationally recognized overnight courier, or when sent by email with confirmation of receipt, to the addresses set out in the applicable Order.",
        ),
        (
            "Force Majeure",
            "Neither party shall be liable for any failure or delay in performance, other than payment obligations, to the extent caused by events beyond its reasonable control, including acts of God, flood, fire, epidemic, war, terrorism, labor disputes or governmental action.",
        ),
        (
            "Independent Contractors",
            "The parties are independent contractors. Nothing in this Agreement shall be construed to create a partnership, joint venture, agency or employment relationship between the parties.",
        ),
        (
            "Counterparts",
            "This Agreement may be executed in counterparts, each of which shall be deemed an original and all of which together shall constitute one instrument. Signatures delivered by electronic means shall be deemed original signatures.",
        ),
        (
            "Publicity",
            "Neither party shall issue any press release or public announcement regarding this Agreement or use the other party's name or logos without the other party's prior written consent.",
        ),
    ],
}


# --------------------------------------------------------------------------------------------
# Key clause sentences per section
# --------------------------------------------------------------------------------------------

#: A key paragraph: (caption, sentence, clause ids carried by the sentence).
_Key = tuple[str, str, tuple[str, ...]]


def _section_keys(s: _Spec) -> tuple[list[tuple[str, str, list[_Key]]], str]:
    """Sections as (heading, filler pool, key paragraphs) for spec ``s``, and the fees intro."""
    A, B = s.roles
    opt = s.optional
    if s.kind == "msa":
        sec2 = (
            "SERVICES",
            [
                (
                    "Ownership of Deliverables",
                    f"All deliverables, work product and materials created by {A} specifically for {B} under this Agreement shall be owned exclusively by {B}, and {A} hereby irrevocably assigns to {B} all right, title and interest, including all Intellectual Property Rights, in and to such deliverables.",
                    ("ip_ownership_assignment",),
                ),
            ],
        )
    elif s.kind == "supply":
        sec2 = (
            "SUPPLY OF PRODUCTS",
            [
                (
                    "Minimum Purchase",
                    f"During each Contract Year, {B} shall purchase from {A} not less than {s.minimum_units:,} units of the Products, and any shortfall shall be invoiced at the then-current unit price at the end of such Contract Year.",
                    ("minimum_commitment",),
                ),
                (
                    "Product Warranty",
                    f"{A} warrants that the Products shall conform to the specifications and be free from defects in materials and workmanship for a period of {_period(s.warranty_months, 'month')} from the date of delivery.",
                    ("warranty_duration",),
                ),
            ],
        )
        if "most_favored_nation" in opt:
            sec2[1].append(
                (
                    "Most Favored Customer",
                    f"If {A} sells any Product to any other customer on terms more favorable than those offered to {B} for similar quantities, {A} shall promptly offer such more favorable terms to {B} and refund any difference.",
                    ("most_favored_nation",),
                )
            )
        if "liquidated_damages" in opt:
            sec2[1].append(
                (
                    "Late Delivery",
                    f"If {A} fails to deliver any shipment by the agreed delivery date, {A} shall pay {B}, as liquidated damages and not as a penalty, an amount equal to two percent (2%) of the price of the delayed Products for each week of delay, up to a maximum of ten percent (10%).",
                    ("liquidated_damages",),
                )
            )
    elif s.kind == "license":
        sec2 = (
            "LICENSE GRANT",
            [
                (
                    "License",
                    f"Subject to the terms and conditions of this Agreement, {A} hereby grants to {B} a non-exclusive, non-transferable, non-sublicensable license during the Term to install and use the Software in object code form solely for {B}'s internal business purposes.",
                    ("license_grant", "non_transferable_license"),
                ),
                (
                    "Software Warranty",
                    f"{A} warrants that the Software will perform substantially in accordance with the Documentation for a period of {_period(s.warranty_months, 'month')} following delivery.",
                    ("warranty_duration",),
                ),
            ],
        )
        if "source_code_escrow" in opt:
            sec2[1].append(
                (
                    "Source Code Escrow",
                    f"{A} shall deposit the source code of the Software, together with build instructions, with a mutually agreed escrow agent and shall update the deposit with each major release, and such source code shall be released to {B} upon {A}'s insolvency or cessation of support.",
                    ("source_code_escrow",),
                )
            )
    else:
        sec2 = (
            "APPOINTMENT",
            [
                (
                    "Exclusive Appointment",
                    f"{A} hereby appoints {B} as its exclusive distributor of the Products in the Territory, and {A} shall not appoint any other distributor, agent or reseller for the Products in the Territory during the Term.",
                    ("exclusivity",),
                ),
                (
                    "Minimum Purchase",
                    f"{B} shall purchase Products having an aggregate net invoice value of not less than {_money(s.minimum_units * 40)} in each Contract Year.",
                    ("minimum_commitment",),
                ),
            ],
        )
        if "non_compete" in opt:
            sec2[1].append(
                (
                    "Competing Products",
                    f"During the Term and for one (1) year thereafter, {B} shall not manufacture, market, sell or distribute in the Territory any product that competes with the Products.",
                    ("non_compete",),
                )
            )
        if "no_solicit_of_customers" in opt:
            sec2[1].append(
                (
                    "Customers",
                    f"During the Term, {A} shall not directly solicit any customer in the Territory first introduced to {A} by {B} for the sale of the Products.",
                    ("no_solicit_of_customers",),
                )
            )

    fees_intro = f"{B} shall pay {A} the following charges:"
    payment = f"All invoices shall be due and payable within {_words(s.payment_days, 'days')} of the date of invoice, in United States dollars, by wire transfer to the account designated by {A}."

    term_keys: list[_Key] = [
        (
            "Term",
            f'This Agreement shall commence on the Effective Date and shall continue in effect for an initial term of {s.term} (the "Initial Term"), unless earlier terminated in accordance with this Section.',
            ("expiration_date",),
        ),
        (
            "Renewal",
            f'Upon expiration of the Initial Term, this Agreement shall automatically renew for {s.renewal} (each, a "Renewal Term") unless either party gives the other written notice of non-renewal at least {_words(s.renewal_days, "days")} before the end of the then-current term.',
            ("renewal_term", "notice_period_to_terminate_renewal"),
        ),
        (
            "Termination for Convenience",
            f"Either party may terminate this Agreement for convenience, without cause, upon {_words(s.convenience_days, 'days')} prior written notice to the other party.",
            ("termination_for_convenience",),
        ),
    ]
    if "post_termination_services" in opt:
        term_keys.append(
            (
                "Transition Assistance",
                f"Upon expiration or termination of this Agreement for any reason, {A} shall, at {B}'s request, continue to provide the Services and reasonable transition assistance for a period of up to six (6) months at the rates then in effect.",
                ("post_termination_services",),
            )
        )

    if s.cap_style == 0:
        cap = f"In no event shall either party's aggregate liability arising out of or related to this Agreement, whether in contract, tort (including negligence) or under any other theory of liability, exceed {s.cap}."
    elif s.cap_style == 1:
        cap = f"In no event shall either party's aggregate liability arising out of or related to this Agreement, whether in contract, tort (including negligence), strict liability or otherwise, exceed the greater of (a) {s.cap} or (b) the total amounts paid or payable by {B} under this Agreement during the twelve (12) months preceding the event giving rise to the claim."
    else:
        cap = f"Except for the obligations set out in the Section entitled Indemnification, in no event shall either party's aggregate liability arising out of or relating to this Agreement, under any legal or equitable theory, exceed {s.cap} in the aggregate for all claims."
    liability_keys: list[_Key] = [("Cap on Liability", cap, ("cap_on_liability",))]
    if "uncapped_liability" in opt:
        liability_keys.append(
            (
                "Exclusions",
                "The limitation of liability set out above shall not apply to a party's liability for fraud, gross negligence or willful misconduct, or to its indemnification obligations, for which liability shall be unlimited.",
                ("uncapped_liability",),
            )
        )

    misc_keys: list[_Key] = [
        (
            "No Third-Party Beneficiaries",
            "Nothing in this Agreement, express or implied, is intended to or shall confer upon any person other than the parties and their respective permitted successors and assigns any legal or equitable right, benefit or remedy of any nature.",
            ("third_party_beneficiary",),
        ),
    ]
    if "no_solicit_of_employees" in opt:
        misc_keys.append(
            (
                "Non-Solicitation",
                "During the Term and for twelve (12) months thereafter, neither party shall directly or indirectly solicit for employment any employee of the other party who was involved in the performance of this Agreement, except through general solicitations not targeted at such employees.",
                ("no_solicit_of_employees",),
            )
        )

    return [
        ("DEFINITIONS", "definitions", []),
        (sec2[0], "scope", sec2[1]),
        ("FEES AND PAYMENT", "fees", [("Payment Terms", payment, ())]),
        ("TERM AND TERMINATION", "term", term_keys),
        ("CONFIDENTIALITY", "confidentiality", []),
        ("DATA PROTECTION", "data", []),
        ("LIMITATION OF LIABILITY", "liability", liability_keys),
        ("INDEMNIFICATION", "indemnity", []),
        (
            "ASSIGNMENT",
            "assignment",
            [
                (
                    "Assignment",
                    "Neither party may assign or transfer this Agreement, in whole or in part, whether by operation of law or otherwise, without the prior written consent of the other party, which consent shall not be unreasonably withheld.",
                    ("anti_assignment",),
                ),
                (
                    "Change of Control",
                    "Any merger, consolidation, change of control or sale of all or substantially all of the assets or voting securities of a party shall be deemed an assignment requiring consent under this Section, and the non-assigning party may terminate this Agreement upon written notice within sixty (60) days after learning of such change of control.",
                    ("change_of_control",),
                ),
            ],
        ),
        (
            "INSURANCE",
            "insurance",
            [
                (
                    "Required Coverage",
                    f"During the Term, {A} shall maintain, at its own expense, commercial general liability insurance with limits of not less than {s.insurance_amount} per occurrence, together with professional liability and workers' compensation insurance as required by law.",
                    ("insurance",),
                ),
            ],
        ),
        (
            "AUDIT RIGHTS",
            "audit",
            [
                (
                    "Audit",
                    f"{B} or its independent auditor may, upon {_words(s.audit_days, 'days')} prior written notice and not more than once in any calendar year, inspect and audit the books and records of {A} relating to this Agreement to verify compliance with its terms.",
                    ("audit_rights",),
                ),
            ],
        ),
        (
            "GOVERNING LAW",
            "law",
            [
                (
                    "Governing Law",
                    f"This Agreement shall be governed by and construed in accordance with the laws of the State of {s.governing_law}, without giving effect to any choice or conflict of law provision or rule that would cause the application of the laws of any other jurisdiction.",
                    ("governing_law",),
                ),
            ],
        ),
        ("MISCELLANEOUS", "misc", misc_keys),
    ], fees_intro


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


class _ContractPDF(FPDF):
    """Letter-size page with a running header (after page 1) and a "Page N of M" footer."""

    def __init__(self, header_text: str) -> None:
        super().__init__(format="letter", unit="mm")
        self.header_text = header_text
        self.set_margins(25, 22, 25)
        self.set_auto_page_break(True, margin=22)
        self.set_creation_date(_CREATION_DATE)
        self.set_creator("docreview sample generator")
        self.set_producer("docreview")

    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.set_text_color(110)
            self.set_y(10)
            self.cell(0, 5, self.header_text, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            self.set_text_color(0)
            self.set_y(22)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.set_text_color(110)
        self.cell(0, 6, f"Page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0)


class _Writer:
    """Writes headings and paragraphs, tracking the pages each paragraph starts and ends on."""

    def __init__(self, pdf: _ContractPDF) -> None:
        self.pdf = pdf
        self.width = pdf.epw

    def _body_font(self) -> None:
        self.pdf.set_font("Helvetica", "", _BODY_SIZE)

    def lines(self, text: str) -> int:
        """Number of body lines ``text`` wraps to (markdown as rendered)."""
        self._body_font()
        out = self.pdf.multi_cell(self.width, _LINE_H, text, markdown=True, dry_run=True, output="LINES")
        return len(out)

    def remaining(self) -> float:
        """Vertical space (mm) left above the page-break trigger on the current page."""
        return self.pdf.page_break_trigger - self.pdf.get_y()

    def heading(self, text: str) -> None:
        """Bold section heading; moves to a new page unless it fits with two body lines."""
        if self.remaining() < 8 + 3 * _LINE_H:
            self.pdf.add_page()
        self.pdf.ln(2)
        self.pdf.set_font("Helvetica", "B", 11)
        self.pdf.cell(0, 7, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.pdf.ln(1)

    def para(self, text: str, indent: float = 0.0, align: str = "J") -> tuple[int, int]:
        """Write a justified paragraph; return its (start page, end page), 1-based."""
        self._body_font()
        start = self.pdf.page + (1 if self.pdf.will_page_break(_LINE_H) else 0)
        if indent:
            self.pdf.set_x(self.pdf.l_margin + indent)
        self.pdf.multi_cell(
            self.width - indent,
            _LINE_H,
            text,
            align=align,
            markdown=True,
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
        )
        end = self.pdf.page
        self.pdf.ln(_PARA_GAP)
        return start, end

    def pad_to_last_line(self, fillers: list[str], max_gap: float = 4 * _LINE_H) -> list[int]:
        """Choose which ``fillers`` to write so that about one body line is left on the page.

        Returns the indices (ascending) of the in-order subset of ``fillers`` that best fills the
        room above the page's last line, leaving at most ``max_gap`` mm for
        :meth:`gap_to_last_line` to close; raises :class:`_Retry` when no subset does (the
        caller then tries another layout). Writes nothing.
        """
        target = _LINE_H + 0.5
        room = self.remaining()
        if room < target:
            raise _Retry
        heights = [self.lines(t) * _LINE_H + _PARA_GAP for t in fillers]
        best: tuple[float, list[int]] = (0.0, [])
        for mask in range(1 << len(fillers)):
            chosen = [i for i in range(len(fillers)) if mask >> i & 1]
            h = sum(heights[i] for i in chosen)
            if best[0] < h <= room - target:
                best = (h, chosen)
        if room - target - best[0] > max_gap:
            raise _Retry
        return best[1]

    def gap_to_last_line(self) -> None:
        """Add vertical space so exactly one body line is left on the page (or raise _Retry)."""
        room = self.remaining()
        target = _LINE_H + 0.5
        if room < target or room - target > 4 * _LINE_H + 1:
            raise _Retry
        self.pdf.ln(room - target)


class _Retry(Exception):
    """The current layout cannot place the page-crossing clause; try another layout seed."""


def _article(word: str) -> str:
    return "an" if word[0] in "AEIOU" else "a"


def _fill(template: str, roles: tuple[str, str]) -> str:
    return template.replace("{A}", roles[0]).replace("{B}", roles[1])


def _running_header(spec: _Spec) -> str:
    return f"{spec.title.title()} - {spec.names[0]} / {spec.names[1]} - Confidential"


def _render(spec: _Spec, extra: int, layout_seed: str) -> tuple[bytes, dict]:
    """Render ``spec`` with ``extra`` additional filler paragraphs; return (pdf bytes, facts)."""
    rng = random.Random(layout_seed)
    A, B = spec.roles
    header = _running_header(spec)
    pdf = _ContractPDF(header)
    pdf.set_title(spec.title.title())
    pdf.set_author(spec.names[0])
    pdf.alias_nb_pages()
    pdf.add_page()
    w = _Writer(pdf)

    clauses: dict[str, int] = {}
    ends: dict[str, int] = {}
    quotes: dict[str, str] = {}

    def record(ids: tuple[str, ...], pages: tuple[int, int], quote: str) -> None:
        for cid in ids:
            ClauseType(cid)  # validate the id
            clauses[cid], ends[cid], quotes[cid] = pages[0], pages[1], quote

    # Title
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, spec.title, align="C", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(6)
    record(("document_name",), (1, 1), spec.title)

    # Preamble
    a_desc = f'{spec.names[0]}, {_article(spec.inc_states[0])} {spec.inc_states[0]} {spec.entity[0]} ("{A}")'
    b_desc = f'{spec.names[1]}, {_article(spec.inc_states[1])} {spec.inc_states[1]} {spec.entity[1]} ("{B}")'
    kind_name = spec.title.title()
    if spec.agreement_date == spec.effective_date:
        preamble = (
            f'This {kind_name} (the "Agreement") is entered into as of {spec.effective_date} '
            f'(the "Effective Date") by and between {a_desc}, and {b_desc}.'
        )
    else:
        preamble = (
            f'This {kind_name} (the "Agreement") is made on {spec.agreement_date} and is '
            f'effective as of {spec.effective_date} (the "Effective Date") by and between '
            f"{a_desc}, and {b_desc}."
        )
    record(("parties", "agreement_date", "effective_date"), w.para(preamble), preamble)

    recitals = [
        f"WHEREAS, {A} is engaged in the business of providing the products and services described herein and has the expertise and resources necessary to provide them;",
        f"WHEREAS, {B} wishes to obtain such products and services from {A} on the terms and subject to the conditions set out in this Agreement;",
        "NOW, THEREFORE, in consideration of the mutual covenants and agreements set forth herein, and for other good and valuable consideration, the receipt and sufficiency of which are hereby acknowledged, the parties agree as follows:",
    ]
    for r in recitals:
        w.para(r)

    sections, fees_intro = _section_keys(spec)
    # Filler budget per section: a random base plus ``extra`` spread round-robin.
    n_sec = len(sections)
    capacity = [len(_DEFINITIONS) - 1 if pool == "definitions" else len(_FILLER[pool]) for _, pool, _ in sections]
    density = rng.uniform(0.2, 0.85)  # drives the page count
    budget = [sum(rng.random() < density for _ in range(c)) for c in capacity]
    budget[0] = max(budget[0], 2)  # always a few definitions
    order = list(range(n_sec))
    rng.shuffle(order)
    moved = 0
    step = 1 if extra > 0 else -1
    while moved < abs(extra):
        changed = False
        for i in order:
            if moved < abs(extra) and 0 <= budget[i] + step <= capacity[i]:
                budget[i] += step
                moved += 1
                changed = True
        if not changed:
            break
    exhausted = moved < abs(extra)

    pools = {k: list(v) for k, v in _FILLER.items()}
    for pool in pools.values():
        rng.shuffle(pool)
    defs = [_fill(d, spec.roles) for d in _DEFINITIONS]
    rng.shuffle(defs)

    def take_filler(pool_name: str) -> tuple[str, str] | None:
        """Next unused filler (caption, text) of the section's own pool, or None if used up."""
        if not pools[pool_name]:
            return None
        cap, text = pools[pool_name].pop(0)
        return _fill(cap, spec.roles), _fill(text, spec.roles)

    payment_amounts: list[str] = []
    payment_pages: list[int] = []
    crossing: str | None = None

    for s_no, (heading, pool_name, keys) in enumerate(sections, start=1):
        w.heading(f"{s_no}. {heading}")
        sub = 0

        def numbered(caption: str, text: str, s_no: int = s_no) -> str:
            nonlocal sub
            sub += 1
            return f"**{s_no}.{sub} {caption}.** {text}"

        if pool_name == "definitions":
            w.para(
                "In this Agreement, the following capitalized terms have the meanings set out below. Other capitalized terms are defined where they first appear."
            )
            for d in defs[: min(len(defs), budget[0] + 1)]:
                w.para(f"{s_no}.{sub + 1} {d}")
                sub += 1
            continue

        # Interleave key paragraphs with fillers at seeded positions (keys keep their order).
        items: list[tuple[str, object]] = [("key", k) for k in keys]
        for _ in range(budget[s_no - 1]):
            items.insert(rng.randint(0, len(items)), ("filler", None))
        if pool_name == "fees":
            items.insert(0, ("fees", None))

        for kind, payload in items:
            if kind == "filler":
                filler = take_filler(pool_name)
                if filler is not None:  # the page-crossing padding may have used it already
                    w.para(numbered(*filler))
            elif kind == "fees":
                w.para(numbered("Charges", fees_intro))
                for letter, (line, amount) in zip("abcdefgh", spec.fees):
                    start, _ = w.para(f"({letter}) " + line.replace("{amt}", amount) + ";", indent=8, align="L")
                    payment_amounts.append(amount)
                    payment_pages.append(start)
            else:
                caption, sentence, ids = payload  # type: ignore[misc]
                if spec.cross_cap and "cap_on_liability" in ids:
                    # Start the cap sentence on the last line of a page (padding with this
                    # section's own unused filler), so it continues on the next page.
                    spare = [(_fill(c, spec.roles), _fill(t, spec.roles)) for c, t in pools[pool_name][:8]]
                    texts = [f"**{s_no}.{sub + 1} {c}.** {t}" for c, t in spare]
                    chosen = w.pad_to_last_line(texts)
                    for j in chosen:
                        w.para(numbered(*spare[j]))
                    for j in sorted(chosen, reverse=True):
                        del pools[pool_name][j]
                    w.gap_to_last_line()
                text = numbered(caption, sentence)
                if spec.cross_cap and "cap_on_liability" in ids and w.lines(text) < 2:
                    raise RuntimeError("liability cap sentence too short to cross a page")
                pages = w.para(text)
                if ids:
                    record(ids, pages, sentence)
                if spec.cross_cap and "cap_on_liability" in ids:
                    if pages[1] != pages[0] + 1:
                        raise _Retry
                    crossing = "cap_on_liability"

    # Signature block (kept together on one page)
    if w.remaining() < 70:
        pdf.add_page()
    w.para(
        "IN WITNESS WHEREOF, the parties have caused this Agreement to be executed by their duly authorized representatives as of the Effective Date."
    )
    pdf.ln(6)
    col = w.width / 2
    x0 = pdf.l_margin
    y = pdf.get_y()
    for i, (name, _role, (signer, title)) in enumerate(zip(spec.names, spec.roles, spec.signatories)):
        pdf.set_xy(x0 + i * col, y)
        pdf.set_font("Helvetica", "B", _BODY_SIZE)
        pdf.cell(col - 5, 6, name.upper(), new_x=XPos.LEFT, new_y=YPos.NEXT)
        pdf.set_font("Helvetica", "", _BODY_SIZE)
        pdf.ln(8)
        pdf.set_x(x0 + i * col)
        for label_text in (
            "By: ______________________________",
            f"Name: {signer}",
            f"Title: {title}",
            "Date: ____________________",
        ):
            pdf.set_x(x0 + i * col)
            pdf.cell(col - 5, 7, label_text, new_x=XPos.LEFT, new_y=YPos.NEXT)

    if crossing is None:
        crossing = next((c for c in clauses if ends[c] == clauses[c] + 1), None)

    facts = {
        "pages": pdf.page,
        "clauses": clauses,
        "clause_end_pages": ends,
        "clause_quotes": quotes,
        "payment_amounts": payment_amounts,
        "payment_pages": payment_pages,
        "page_crossing_clause": crossing,
    }
    if exhausted:
        facts["exhausted"] = True
    return bytes(pdf.output()), facts


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _fit_pages(spec: _Spec, layout_seed: str) -> tuple[bytes, dict] | None:
    """Render with one layout seed, adding/removing filler until the page count is in bounds.

    Returns ``None`` when this layout cannot satisfy the bounds or the page-crossing placement.
    """
    extra = 0
    for _ in range(40):
        try:
            data, facts = _render(spec, extra, layout_seed)
        except _Retry:
            return None
        exhausted = facts.pop("exhausted", False)
        if facts["pages"] < MIN_PAGES and not exhausted:
            extra += 2
        elif facts["pages"] > MAX_PAGES and not exhausted:
            extra -= 2
        else:
            break
    if not MIN_PAGES <= facts["pages"] <= MAX_PAGES:
        return None
    return data, facts


def _build(spec: _Spec, seed: int) -> tuple[bytes, SampleContract]:
    """Render ``spec`` and derive its ground truth, trying further layout seeds as needed.

    The page count follows a seeded filler density; contracts that must carry the
    page-crossing liability cap try further layout seeds until the cap can be placed on a
    page's last line.
    """
    for variant in range(100):
        result = _fit_pages(spec, f"{seed}:{spec.index}:layout:{variant}")
        if result is not None:
            data, facts = result
            break
    else:
        raise RuntimeError(f"could not lay out sample {spec.index}")
    sample = SampleContract(
        file_name=f"sample_{spec.index + 1:02d}_{_slug(spec.title)}.pdf",
        title=spec.title,
        agreement_type=spec.kind,
        parties=list(spec.names),
        party_roles=list(spec.roles),
        agreement_date=spec.agreement_date,
        effective_date=spec.effective_date,
        governing_law=spec.governing_law,
        liability_cap=spec.cap,
        payment_terms=_words(spec.payment_days, "days"),
        term=spec.term,
        renewal_term=spec.renewal,
        renewal_notice=_words(spec.renewal_days, "days"),
        termination_notice=_words(spec.convenience_days, "days"),
        running_header=_running_header(spec),
        **facts,
    )
    return data, sample


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def generate_samples(out_dir: Path, count: int = 4, seed: int = SAMPLE_SEED) -> list[SampleContract]:
    """Write ``count`` sample contract PDFs into ``out_dir`` and return their ground truth.

    ``out_dir`` is created if missing; files are named ``sample_NN_<title>.pdf`` (NN from 01)
    and existing files of the same name are overwritten. Agreement types cycle through master
    services, supply, software license and distribution; parties, dates, states, amounts,
    terms, optional clauses and filler prose vary with ``seed``. Each PDF has 4-8 Letter pages.
    The same ``(seed, count)`` gives the same ground truth and the same PDF bytes.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"docreview-samples:{seed}")
    stems = list(_COMPANY_STEMS)
    rng.shuffle(stems)
    samples: list[SampleContract] = []
    for i in range(count):
        pair = [stems[(2 * i) % len(stems)], stems[(2 * i + 1) % len(stems)]]
        spec = _make_spec(random.Random(f"{seed}:{i}:spec"), i, pair)
        data, sample = _build(spec, seed)
        (out_dir / sample.file_name).write_bytes(data)
        samples.append(sample)
    return samples


def generate_revision(
    out_dir: Path, index: int, count: int = 4, seed: int = SAMPLE_SEED, suffix: str = "_v2", **changes: str
) -> SampleContract:
    """Write a new version of sample ``index`` (0-based) of ``generate_samples(…, count, seed)``: the
    same contract with ``changes`` applied to its terms (``cap="$500,000"``: the liability cap, as
    printed; ``term``, ``renewal``, ``governing_law``, ``effective_date``, ``agreement_date``), as
    ``<the sample's name><suffix>.pdf`` — what a counter-party's second draft looks like. Returns its
    ground truth. Raises ``ValueError`` for a field that cannot be changed."""
    allowed = {"cap", "term", "renewal", "governing_law", "effective_date", "agreement_date"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))} (one of {', '.join(sorted(allowed))})")
    rng = random.Random(f"docreview-samples:{seed}")
    stems = list(_COMPANY_STEMS)
    rng.shuffle(stems)
    pair = [stems[(2 * index) % len(stems)], stems[(2 * index + 1) % len(stems)]]
    spec = _make_spec(random.Random(f"{seed}:{index}:spec"), index, pair).model_copy(update=changes)
    data, sample = _build(spec, seed)
    name = sample.file_name.removesuffix(".pdf") + suffix + ".pdf"
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / name).write_bytes(data)
    return sample.model_copy(update={"file_name": name})


def generate_other_formats(out_dir: Path, samples: list[SampleContract], seed: int = SAMPLE_SEED) -> list[Path]:
    """Write the sample contracts in the other forms a compliance team receives, next to the PDFs:

    - ``sample_NN_<title>_scan_page1.png``: the first page of the first sample as an office scanner
      gives it (200 dpi greyscale, a little skew and speckle; :mod:`docreview_testing.scans`), a page
      image read by OCR;
    - ``sample_NN_<title>_draft.docx``: the text of the second sample (the first when there is one) as
      a Word draft under negotiation (:func:`docreview_testing.docx_maker.make_contract_docx`): automatic
      numbering, a fee table, a comment, and tracked changes, one of which raises the liability cap from
      $1,000,000 to $5,000,000.

    Deterministic for ``(seed, samples)``; returns the paths written (none for no samples).
    """
    import pypdfium2 as pdfium

    from docreview_testing.docx_maker import make_contract_docx
    from docreview_testing.scans import scan_pages, write_scan_png

    out_dir = Path(out_dir)
    if not samples:
        return []
    written = []
    first = out_dir / samples[0].file_name
    (image,) = scan_pages(first, [0], seed=seed)
    written.append(write_scan_png(image, out_dir / f"{first.stem}_scan_page1.png"))
    source = out_dir / samples[min(1, len(samples) - 1)].file_name
    pdf = pdfium.PdfDocument(str(source))
    try:
        pages = []
        for i in range(len(pdf)):
            textpage = pdf[i].get_textpage()
            pages.append(textpage.get_text_range().replace("\r\n", "\n"))
            textpage.close()
    finally:
        pdf.close()
    header = _running_header_of(pages)
    lines = [line.strip() for page in pages for line in page.split("\n") if line.strip() and line.strip() != header]
    text = _paragraphs(lines)
    draft = out_dir / f"{source.stem}_draft.docx"
    make_contract_docx(text, draft)
    written.append(draft)
    return written


_NUMBERED = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?\s|WHEREAS|NOW, THEREFORE|IN WITNESS)")


def _paragraphs(lines: list[str]) -> str:
    """Lines of a PDF page's text joined into paragraphs separated by blank lines: a paragraph ends
    after a line ending in ``.``, ``:`` or ``;`` and before a numbered or all-capitals line; a page
    number line is dropped."""
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if re.fullmatch(r"(?:Page\s+)?\d{1,3}(?:\s+of\s+\d{1,3})?", line):
            continue
        if current and (_NUMBERED.match(line) or line.isupper()):
            out.append(" ".join(current))
            current = []
        current.append(line)
        if line.endswith((".", ":", ";")) or line.isupper():
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return "\n\n".join(out)


def _running_header_of(pages: list[str]) -> str:
    """The first line every page of a sample starts with (its running header), or ``""``."""
    firsts = {p.strip().split("\n", 1)[0].strip() for p in pages[1:] if p.strip()}
    return firsts.pop() if len(firsts) == 1 else ""


def write_ground_truth(samples: list[SampleContract], path: Path) -> Path:
    """Write ``samples`` as a JSON list of :class:`SampleContract` objects to ``path``.

    Parent directories are created; returns ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = [s.model_dump(mode="json") for s in samples]
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def load_ground_truth(path: Path) -> list[SampleContract]:
    """Read a file written by :func:`write_ground_truth` back into :class:`SampleContract` objects."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [SampleContract.model_validate(item) for item in data]


# --------------------------------------------------------------------------------------------
# Mixed-size workload (benchmarks)
# --------------------------------------------------------------------------------------------

#: Page-count range of a *short* workload document (inclusive).
SHORT_PAGES = (1, 3)
#: Page-count range of a *long* workload document (inclusive).
LONG_PAGES = (30, 36)


class WorkloadDocument(BaseModel):
    """One PDF of :func:`generate_workload`: file name, page count and size class."""

    file_name: str
    pages: int
    long: bool


def _render_sized(spec: _Spec, target_pages: int, layout_seed: str) -> bytes:
    """Render ``spec`` as a contract of exactly ``target_pages`` Letter pages.

    Writes the title, the preamble, then the sections of :func:`_section_keys` over and over
    (key clauses first, then the section's filler prose; later rounds are headed ``Schedule N``
    and carry the round number so their text differs), stopping on the target page as soon as
    the next paragraph would not fit. No ground truth is kept: this is load, not an answer key.
    """
    rng = random.Random(layout_seed)
    pdf = _ContractPDF(_running_header(spec))
    pdf.set_title(spec.title.title())
    pdf.alias_nb_pages()
    pdf.add_page()
    w = _Writer(pdf)
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, spec.title, align="C", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(6)
    A, B = spec.roles
    w.para(
        f'This {spec.title.title()} (the "Agreement") is entered into as of {spec.effective_date} (the '
        f'"Effective Date") by and between {spec.names[0]} ("{A}") and {spec.names[1]} ("{B}").'
    )
    sections, fees_intro = _section_keys(spec)

    def fits(text: str | None, height: float = 0.0) -> bool:
        if pdf.page < target_pages:
            return True  # only the last page needs measuring (a dry run costs as much as writing)
        return (w.lines(text) * _LINE_H + _PARA_GAP if text else height) <= w.remaining()

    round_no = 0
    while True:
        round_no += 1
        for s_no, (heading, pool_name, keys) in enumerate(sections, start=1):
            title = f"{s_no}. {heading}" if round_no == 1 else f"SCHEDULE {round_no - 1}.{s_no} - {heading}"
            if not fits(None, 8 + 3 * _LINE_H + 2 * _LINE_H):
                return bytes(pdf.output())
            w.heading(title)
            pool = [_fill(t, spec.roles) for _, t in _FILLER.get(pool_name, [])] or [
                _fill(d, spec.roles) for d in _DEFINITIONS
            ]
            rng.shuffle(pool)
            texts = [sentence for _, sentence, _ in keys] + pool[: rng.randint(1, 3)]
            if pool_name == "fees":
                texts.insert(
                    0, fees_intro + " " + "; ".join(line.replace("{amt}", amount) for line, amount in spec.fees)
                )
            for sub, text in enumerate(texts, start=1):
                if round_no > 1:
                    text = f"{text} This paragraph applies to Schedule {round_no - 1}."
                body = f"{s_no}.{sub} {text}"
                if not fits(body):
                    return bytes(pdf.output())
                w.para(body)
            if pdf.page > target_pages:  # pragma: no cover - fits() prevents it
                raise RuntimeError("workload document overran its page target")


def generate_workload(
    out_dir: Path, count: int = 200, long_share: float = 0.2, seed: int = SAMPLE_SEED
) -> list[WorkloadDocument]:
    """Write ``count`` contract PDFs of mixed size into ``out_dir`` (a benchmark workload).

    ``round(count * long_share)`` documents are *long* (:data:`LONG_PAGES`, 30-36 pages), spread
    evenly through the file order; the rest are *short* (:data:`SHORT_PAGES`, 1-3 pages). Texts
    come from the same clause and filler templates as :func:`generate_samples`, so the router
    and the rules extractor find real decision points. Files are ``load_NNNN_<s|l>.pdf``; the
    same ``(count, long_share, seed)`` gives the same bytes. Returns one
    :class:`WorkloadDocument` per file. Raises ``ValueError`` for a negative ``count`` or a
    ``long_share`` outside ``[0, 1]``.
    """
    if count < 0 or not 0.0 <= long_share <= 1.0:
        raise ValueError("count must be >= 0 and long_share within [0, 1]")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_long = round(count * long_share)
    long_at = {round((k + 0.5) * count / n_long) for k in range(n_long)} if n_long else set()
    stems = list(_COMPANY_STEMS)
    random.Random(f"docreview-workload:{seed}").shuffle(stems)
    made: list[WorkloadDocument] = []
    for i in range(count):
        rng = random.Random(f"{seed}:{i}:workload")
        spec = _make_spec(rng, i, [stems[(2 * i) % len(stems)], stems[(2 * i + 1) % len(stems)]])
        is_long = i in long_at
        pages = rng.randint(*(LONG_PAGES if is_long else SHORT_PAGES))
        name = f"load_{i + 1:04d}_{'l' if is_long else 's'}.pdf"
        (out_dir / name).write_bytes(_render_sized(spec, pages, f"{seed}:{i}:layout"))
        made.append(WorkloadDocument(file_name=name, pages=pages, long=is_long))
    return made


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m docreview_testing.samples OUT_DIR [--count N] [--seed S]``; writes PDFs + ground_truth.json."""
    parser = argparse.ArgumentParser(description="Generate sample contract PDFs with ground truth.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--count", type=int, default=4)
    parser.add_argument("--seed", type=int, default=SAMPLE_SEED)
    args = parser.parse_args(argv)
    samples = generate_samples(args.out_dir, args.count, args.seed)
    gt = write_ground_truth(samples, args.out_dir / "ground_truth.json")
    for s in samples:
        print(f"{s.file_name}: {s.pages} pages, {len(s.clauses)} clauses")
    print(f"ground truth: {gt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
