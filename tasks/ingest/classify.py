"""Classify a document at ingest: a contract or an SEC filing, and the filing's form.

The decision reads the first pages' text (the cover page of a filing) for the phrases the SEC's
forms print there (General Instructions of Forms 10-K, 10-Q and 8-K, Securities Exchange Act of
1934, Section 13 or 15(d)):

- Form 10-K: "FORM 10-K" and "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)";
- Form 10-Q: "FORM 10-Q" and "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)";
- Form 8-K: "FORM 8-K" and "CURRENT REPORT", or its Item headings ("Item 5.02", "Item 9.01");
- an earnings release (usually Exhibit 99.1 to an 8-K, also published alone): "reports … results"
  or "FOR IMMEDIATE RELEASE" with per-share earnings ("EPS", "earnings per share") on the first pages.

A document naming the SEC ("SECURITIES AND EXCHANGE COMMISSION") whose form is none of these,
or an exhibit filed alone, is reviewed under the contract profile and the reason says so; a
run may force either profile (``--profile``).
"""

from __future__ import annotations

import re

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import ExtractedDocument
from schemas.filings import CONTRACT_TYPE, DocumentKind, FilingForm, Profile
from tasks.runnames import for_document

#: Characters of the document's start read for the cover page.
COVER_CHARS = 6000

_I = re.IGNORECASE
_SEC = re.compile(r"SECURITIES\s+AND\s+EXCHANGE\s+COMMISSION", _I)
_FORMS: list[tuple[FilingForm, re.Pattern[str], re.Pattern[str]]] = [
    (
        FilingForm.form_10k,
        re.compile(r"\bFORM\s+10-?K\b", _I),
        re.compile(r"ANNUAL\s+REPORT\s+PURSUANT\s+TO\s+SECTION\s+13(?:\s+OR\s+15\s*\(d\))?", _I),
    ),
    (
        FilingForm.form_10q,
        re.compile(r"\bFORM\s+10-?Q\b", _I),
        re.compile(r"QUARTERLY\s+REPORT\s+PURSUANT\s+TO\s+SECTION\s+13\s+OR\s+15\s*\(d\)", _I),
    ),
    (FilingForm.form_8k, re.compile(r"\bFORM\s+8-?K\b", _I), re.compile(r"CURRENT\s+REPORT", _I)),
]
#: A Form 10-K/A or 10-Q/A cover page (Exchange Act Rule 12b-15: an amendment names its form with "/A").
_AMENDED = re.compile(r"\bFORM\s+10-?[KQ]\s*/\s*A\b", _I)
_8K_ITEM = re.compile(r"^\s*Item\s+[1-9]\.0\d\b", _I | re.M)
_RELEASE = re.compile(
    r"\b(?:reports?|announces?)\b[^•.]{0,100}?\bresults\b|FOR\s+IMMEDIATE\s+RELEASE|"
    r"\b(?:first|second|third|fourth)[- ]quarter\b[^\n]{0,60}\b(?:results|sales|earnings)\b",
    _I,
)
_EPS = re.compile(r"\bEPS\b|earnings\s+per\s+(?:diluted\s+)?share", _I)
_EXHIBIT = re.compile(r"^\s*EXHIBIT\s+\d+(?:\.\d+)?\b", _I | re.M)
_REGISTRANT = re.compile(r"([^\n]{3,120})\n\s*\(Exact\s+name\s+of\s+(?:the\s+)?registrant", _I)
_NAMED_BEFORE = re.compile(r"Commission\s+file\s+number[^\n]*\n(?:[\d-]+\s+)?([A-Z0-9][A-Z0-9&.,' -]{2,60})\n", _I)
_RELEASE_NAME = re.compile(r"^\s*([A-Z][\w&.,' -]{1,60}?)\s+(?:reports?|announces?)\b", re.M | _I)
_FILE_NUMBER = re.compile(r"Commission\s+File\s+(?:No\.|Number)\s*:?\s*\n?\s*(\d{1,4}-\d{3,6})", _I)
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_DATE = re.compile(r"\b(" + "|".join(m.capitalize() for m in _MONTHS) + r")\s+(\d{1,2})\s*,?\s+(\d{4})", _I)
_PERIOD = re.compile(
    r"(?:fiscal\s+year\s+ended|quarterly\s+period\s+ended|period\s+ended|"
    r"Date\s+of\s+(?:R|r)eport[^:\n]*:?)\s*\n?\s*([A-Za-z]+\s+\d{1,2}\s*,?\s+\d{4})",
    _I,
)

#: An earnings release's own period: "net income for the fiscal quarter ended November 2, 2024" (the
#: latest date of such phrases not about a comparative period). Not used for an 8-K (its date of report).
_RELEASE_PERIOD = re.compile(
    r"(?:fiscal\s+year|(?:fiscal\s+)?quarter|period|three\s+months|twelve\s+months)\s+ended\s*,?\s*"
    r"([A-Za-z]+\s+\d{1,2}\s*,?\s+\d{4})",
    _I,
)
#: Words before "period ended" that name the comparative period, not the filing's own ("net sales of
#: $303.5 million for the prior year 13-week fiscal quarter ended October 28, 2023").
_COMPARATIVE = re.compile(r"\b(?:prior|previous|preceding|last|comparable)\b[^.;]*$", _I)


def iso_date(text: str) -> str | None:
    """``"December 31, 2018"`` → ``"2018-12-31"``; None when ``text`` holds no such date."""
    m = _DATE.search(text)
    if not m:
        return None
    return f"{int(m.group(3)):04d}-{_MONTHS.index(m.group(1).lower()) + 1:02d}-{int(m.group(2)):02d}"


def company_name(cover: str, form: FilingForm | None) -> str | None:
    """The registrant's name from a cover page (the line above "(Exact name of registrant …)", or
    the upper-case line after the Commission file number), or an earnings release's first
    "<Name> reports/announces …" line; None when none is found. Whitespace is normalised."""
    m = _REGISTRANT.search(cover) or _NAMED_BEFORE.search(cover)
    if m is None and form is FilingForm.earnings_release:
        m = _RELEASE_NAME.search(cover[:1500])
    if m is None:
        return None
    name = re.sub(r"\s+", " ", re.split(r"_{3,}", m.group(1))[-1]).strip(" ,.")
    if m.re is _REGISTRANT and (len(name) < 3 or re.search(r"file\s+number|\d{3}-\d", name, _I)):
        other = _NAMED_BEFORE.search(cover)
        name = re.sub(r"\s+", " ", other.group(1)).strip(" ,.") if other else ""
    return name or None


def filing_company_key(kind: DocumentKind) -> str:
    """The key that groups one registrant's filings: ``"SEC file 1-3285"`` when the cover page
    gives the Commission file number (one per registrant; leading zeros dropped, so ``001-03285`` and
    ``1-3285`` match), else :func:`company_key` of the name."""
    if not kind.file_number:
        return company_key(kind.company)
    return "SEC file " + "-".join(part.lstrip("0") or "0" for part in kind.file_number.split("-"))


def company_key(name: str | None) -> str:
    """A company name reduced for matching one company's filings: upper case, punctuation and
    legal suffixes (Inc., Co., Corp., Company, plc, The) removed; ``""`` for None.
    ``"BEST BUY CO., INC."`` and ``"Best Buy Co Inc"`` both give ``"BEST BUY"``."""
    words = re.sub(r"[^A-Z0-9& ]+", " ", (name or "").upper()).split()
    suffixes = {"INC", "CO", "CORP", "CORPORATION", "COMPANY", "PLC", "THE", "LTD", "LLC", "NV", "SA", "AG"}
    return " ".join(w for w in words if w not in suffixes)


def classify_text(text: str, override: str | None = None) -> DocumentKind:
    """Classify a document from the start of its text (``text``: the whole text or at least its
    first :data:`COVER_CHARS` characters).

    ``override``: ``"contract"`` or ``"filing"`` forces the profile (the form is still read from
    the text; a forced filing whose form is not recognised is ``other``); None or ``"auto"``
    decides from the text. Raises ``ValueError`` for another ``override``. The returned
    :class:`DocumentKind` always carries the reason of the decision.
    """
    if override not in (None, "auto", "contract", "filing"):
        raise ValueError(f"unknown profile {override!r} (choose auto, contract or filing)")
    cover = text[:COVER_CHARS]
    form, why = _form_of(cover)
    company = company_name(cover, form)
    period = None
    if form is not None:
        if form is FilingForm.earnings_release:  # the latest period it reports (tables may list the oldest first)
            own = [
                iso_date(m.group(1))
                for m in _RELEASE_PERIOD.finditer(cover)
                if not _COMPARATIVE.search(cover[max(0, m.start() - 40) : m.start()])
            ]
            period = max((d for d in own if d), default=None) or iso_date(cover)
        else:
            m = _PERIOD.search(cover)
            period = iso_date(m.group(1)) if m else iso_date(cover)
    if override == "contract":
        return DocumentKind(
            profile=Profile.contract,
            document_type=CONTRACT_TYPE,
            reason="profile set for the run (--profile contract)"
            + (f"; the text reads as {form.value} ({why})" if form else ""),
        )
    number = _FILE_NUMBER.search(cover)
    file_number = number.group(1) if number else None
    if override == "filing":
        return DocumentKind(
            profile=Profile.filing,
            document_type=(form or FilingForm.other).value,
            reason="profile set for the run (--profile filing)"
            + (f"; {why}" if form else "; no SEC form recognised on the cover page"),
            company=company,
            period=period,
            file_number=file_number,
        )
    if form is not None:
        amended = form in (FilingForm.form_10k, FilingForm.form_10q) and _AMENDED.search(cover) is not None
        return DocumentKind(
            profile=Profile.filing,
            document_type=form.value,
            reason=why + ("; an amendment (Form " + form.value + "/A)" if amended else ""),
            company=company,
            period=period,
            file_number=file_number,
            amendment=amended,
        )
    if _SEC.search(cover):
        return DocumentKind(
            profile=Profile.contract,
            document_type=CONTRACT_TYPE,
            reason="names the Securities and Exchange Commission but no form the filing profile "
            "knows (10-K, 10-Q, 8-K, earnings release) is recognised on its cover page: "
            "reviewed under the contract profile",
        )
    if _EXHIBIT.search(cover[:600]):
        return DocumentKind(
            profile=Profile.contract,
            document_type=CONTRACT_TYPE,
            reason="an exhibit filed on its own (no SEC form cover page): reviewed under the contract profile",
        )
    return DocumentKind(
        profile=Profile.contract,
        document_type=CONTRACT_TYPE,
        reason="no SEC form cover page or earnings-release heading: reviewed under the contract profile",
    )


def _form_of(cover: str) -> tuple[FilingForm | None, str]:
    """The form the cover page names and the phrases that decided it; ``(None, "")`` for none."""
    for form, name_rx, report_rx in _FORMS:
        name, report = name_rx.search(cover), report_rx.search(cover)
        if name and report:
            return form, f"cover page reads {name.group(0)!r} and {_squash(report.group(0))!r}"
        if form is FilingForm.form_8k and name and _8K_ITEM.search(cover):
            return form, f"cover page reads {name.group(0)!r} and has Form 8-K Item headings"
    release = _RELEASE.search(cover[:2500])
    if release and _EPS.search(cover):
        return FilingForm.earnings_release, (
            f"first page reads {_squash(release.group(0))!r} and reports earnings per share"
        )
    return None, ""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@task(name="classify-document", task_run_name=for_document("classify"), cache_policy=NO_CACHE)
def classify_document(document: ExtractedDocument, override: str | None = None) -> DocumentKind:
    """Prefect task: :func:`classify_text` of an extracted document's first pages (a document
    without any text is a contract whose reason says so; extraction fails such files first). An
    EDGAR exhibit of type ``EX-10.*`` (a material contract) is a contract whatever its first page
    reads, unless the run forces a profile."""
    head = "\n\n".join(p.text for p in document.pages[:4])
    part = (document.edgar.get("type") or "").upper()
    if override in (None, "auto") and part.startswith("EX-10"):
        found = classify_text(head, "contract") if head.strip() else None
        return DocumentKind(
            profile=Profile.contract,
            document_type=CONTRACT_TYPE,
            reason=f"EDGAR exhibit {part} (a material contract, Regulation S-K Item 601(b)(10)): "
            "reviewed under the contract profile",
            company=found.company if found else None,
        )
    if not head.strip():
        return DocumentKind(
            profile=Profile.contract,
            document_type=CONTRACT_TYPE,
            reason="no text on the first pages to classify: reviewed under the contract profile",
        )
    return classify_text(head, override)
