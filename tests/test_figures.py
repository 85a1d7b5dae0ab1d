"""Every number a reviewer sees is the document's: a key figure is stored with its exact value and the unit it
is really in (an XBRL fact's value after ``scale`` and ``sign``, a statement's stated unit) and every surface
shows it through one function (:func:`schemas.filings.format_amount`); income figures as filed, with their
periods in words (quarter, year to date, predecessor and successor); bad facts shown as stated.

The filings are generated (:mod:`docreview_testing.filings`): the held-back cases rebuilt in code. Expected
values are computed here from the generated markup with lxml, not by the code under test."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import html as lhtml

from docreview_testing.filings import (
    Q3_CONTEXTS,
    IxFact,
    quarterly_values,
    write_bad_facts_10q,
    write_ixbrl_10q,
    write_quarterly_10q,
    write_successor_10q,
)
from schemas.documents import DocumentKind, ExtractedDocument, IngestOutcome, SourceObject
from schemas.filings import FilingSummary, KeyFigure, KeyFigureName, format_amount
from schemas.settings import Limits
from tasks.ingest.extract import extract_document
from tasks.observe.report import render_html
from tasks.review.facts import key_figures_from_facts
from tasks.review.filing import summarize_document

K = KeyFigureName


def read(path: Path) -> ExtractedDocument:
    source = SourceObject(uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size)
    outcome = extract_document.fn(IngestOutcome(source=source, sha256="0" * 64, kind=DocumentKind.html), Limits())
    assert outcome.ok and outcome.document is not None, outcome.reason
    return outcome.document


def ix_values(path: Path) -> dict[tuple[str, str], list[Decimal]]:
    """``{(concept, "start..end" or instant): [values]}`` of the entity-wide ``ix:nonFraction`` facts of an
    HTML filing, read here with lxml: the displayed number, times 10^scale, negated for ``sign="-"``; facts
    whose text or scale is no number are left out."""
    root = lhtml.fromstring(path.read_bytes())
    periods: dict[str, str] = {}
    for ctx in root.iter("xbrli:context"):
        if ctx.find(".//xbrldi:explicitmember") is not None:
            continue
        start, end, instant = (ctx.find(f".//xbrli:{t}") for t in ("startdate", "enddate", "instant"))
        periods[ctx.get("id")] = (
            instant.text.strip() if instant is not None else f"{start.text.strip()}..{end.text.strip()}"
        )
    out: dict[tuple[str, str], list[Decimal]] = {}
    for el in root.iter("ix:nonfraction"):
        text = "".join(el.itertext()).replace(",", "").strip()
        scale = (el.get("scale") or "0").strip()
        if (
            el.get("contextref") not in periods
            or not re.fullmatch(r"\d+(\.\d+)?", text)
            or not scale.lstrip("-").isdigit()
        ):
            continue
        value = Decimal(text).scaleb(int(scale)) * (-1 if el.get("sign") == "-" else 1)
        out.setdefault((el.get("name"), periods[el.get("contextref")]), []).append(value)
    return out


def _report(documents: list[dict]) -> dict:
    run = {
        "id": "r",
        "source": "s",
        "backend": "rules",
        "model": "m",
        "offline": True,
        "endpoint": None,
        "playbook": None,
        "started_at": None,
        "finished_at": None,
        "metrics": {},
    }
    base = {"status": "reviewed", "findings": [], "absences": [], "counts": {}, "kind": "html", "pages": 3}
    return {"run": run, "documents": [{**base, **d} for d in documents]}


def html_figure_rows(page: str) -> dict[str, list[tuple[str, str, str, str]]]:
    """``{document file name: [(name, value cell, period cell, where cell)]}`` of a rendered report's key-figure
    tables, read back with lxml."""
    root = lhtml.fromstring(page)
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    for section in root.iter("section"):
        if "doc" not in (section.get("class") or "").split():
            continue
        name = section.findtext("h2")
        for row in section.iter("tr"):
            if row.get("class") == "figure":
                cells = [" ".join(c.text_content().split()) for c in row.findall("td")]
                value = " ".join((row.find("td[@class='value']").text or "").split())
                out.setdefault(name, []).append((cells[0], value, cells[2], cells[3]))
    return out


def _number(shown: str) -> Decimal:
    """The exact amount a shown figure starts with: ``"-16,177,000 USD (16.2 million)"`` → -16177000."""
    m = re.match(r"(-?[\d,]+(?:\.\d+)?) ", shown)
    assert m, shown
    return Decimal(m.group(1).replace(",", ""))


# --------------------------------------------------------------------------- the one formatter


def test_a_figure_is_shown_exactly_in_its_own_unit() -> None:
    assert format_amount(Decimal("16177000"), "USD") == "16,177,000 USD (16.2 million)"
    assert format_amount(Decimal("98300000000"), "USD") == "98,300,000,000 USD (98.3 billion)"
    assert format_amount(Decimal("26974"), "USD millions") == "26,974 USD millions"  # a statement "in millions"
    assert format_amount(Decimal("-2645000"), "USD") == "-2,645,000 USD (-2.65 million)"
    assert format_amount(Decimal("1.74"), "USD per share") == "1.74 USD per share"
    assert format_amount(Decimal("7412000000"), "EUR") == "7,412,000,000 EUR (7.41 billion)"  # never converted
    assert format_amount(None, "USD", "52,118") == "52,118 USD (as displayed; not converted)"


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    displayed=st.integers(min_value=1, max_value=99_999_999),
    cents=st.sampled_from(["", ".5", ".25"]),
    scale=st.sampled_from([0, 3, 6, 9]),
    sign=st.sampled_from([None, "-"]),
    concept=st.sampled_from(
        ["us-gaap:Revenues", "us-gaap:NetIncomeLoss", "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment"]
    ),
)
def test_html_and_json_show_the_fact_alike_over_scales_and_signs(
    tmp_path: Path, displayed: int, cents: str, scale: int, sign: str | None, concept: str
) -> None:
    shown = f"{displayed:,}{cents}"
    context = "ytd" if "Payments" in concept else "q"
    fact = IxFact(concept, context, shown, scale=str(scale), decimals=str(-scale), sign=sign)
    path = write_ixbrl_10q(
        tmp_path / f"x{scale}.htm",
        "Example Corp",
        "2024-09-28",
        Q3_CONTEXTS,
        [("STATEMENTS", [], [("Line $", [fact])])],
    )
    (figure,) = [f for f in key_figures_from_facts(read(path)) if f.current]
    expected = Decimal(f"{displayed}{cents}").scaleb(scale) * (-1 if sign == "-" else 1)  # the fact, by hand
    if figure.flow == "outflow":
        expected = abs(expected)  # a payment: the amount paid, whatever sign it was tagged with
        assert (figure.note is not None) == (sign == "-")
    as_json = figure.model_dump(mode="json")
    assert Decimal(as_json["value"]) == expected and as_json["unit"] == "USD"
    page = render_html(_report([{"file_name": "x.htm", "key_figures": [dict(as_json, locator="page 2")]}]))
    ((name, value, period, where),) = html_figure_rows(page)["x.htm"]
    assert value == as_json["shown"] and _number(value) == expected  # the HTML shows the JSON's value, exactly
    assert value.split(" ")[1] == "USD"  # ... in the unit the value is in, never rescaled
    assert period == as_json["period_label"] and where == "page 2 (XBRL)"
    assert name == ("net loss" if concept.endswith("NetIncomeLoss") and sign == "-" else as_json["title"])


# --------------------------------------------------------------------------- the held-back cases, generated


@pytest.mark.parametrize("scale", [0, 3, 6, 9])
def test_a_10q_in_any_scale_gives_the_facts_values_in_dollars(tmp_path: Path, scale: int) -> None:
    path = write_quarterly_10q(tmp_path / f"q{scale}.htm", scale)
    facts = ix_values(path)
    assert facts[("us-gaap:Revenues", "2024-06-30..2024-09-28")] == [quarterly_values(scale)["us-gaap:Revenues"]["q"]]
    summary = summarize_document.fn(read(path), "10-Q")
    by = {(f.name, f.period_label): f for f in summary.key_figures}
    revenue = by[(K.revenue, "three months ended 2024-09-28")]
    assert revenue.current and revenue.unit == "USD" and revenue.value == Decimal(16177).scaleb(scale)
    assert by[(K.revenue, "nine months ended 2024-09-28")].value == Decimal(47309).scaleb(scale)  # year to date
    assert not by[(K.revenue, "nine months ended 2024-09-28")].current
    debt = by[(K.total_debt, "as of 2024-09-28")]
    assert debt.value == Decimal("98300000000") and debt.shown == "98,300,000,000 USD (98.3 billion)"  # scale="9"
    capex = by[(K.capital_expenditure, "nine months ended 2024-09-28")]  # a 10-Q's cash flow: year to date
    assert (
        capex.value == Decimal(1234).scaleb(scale)
        and capex.flow == "outflow"
        and capex.shown.endswith("paid (outflow)")
    )
    for f in summary.key_figures:  # every figure is its fact, exactly
        assert f.statement == "XBRL" and f.value in facts[(f.line, f.period)]


def test_a_successor_period_10q_shows_its_net_loss_with_the_period_in_words(tmp_path: Path) -> None:
    summary = summarize_document.fn(read(write_successor_10q(tmp_path / "s.htm")), "10-Q")
    income = [
        (f.title, f.shown, f.period_label, f.current)
        for f in summary.key_figures
        if f.name in (K.revenue, K.net_income)
    ]
    assert (
        "net loss",
        "-2,645,000 USD (2.65 million)".replace("(2", "(-2"),
        "successor period 2023-07-23 to 2023-09-30",
        True,
    ) in income
    assert ("net loss", "-388,000 USD", "predecessor period 2023-07-01 to 2023-07-22", False) in income
    assert (
        "net loss",
        "-1,907,000 USD (-1.91 million)",
        "predecessor period 2023-01-01 to 2023-07-22",
        False,
    ) in income
    assert ("revenue", "4,310,000 USD (4.31 million)", "successor period 2023-07-23 to 2023-09-30", True) in income
    assert len(income) == 6


def test_bad_facts_are_shown_as_stated_with_their_unit_never_converted(tmp_path: Path) -> None:
    summary = summarize_document.fn(read(write_bad_facts_10q(tmp_path / "b.htm")), "10-Q")
    by = {f.name: f for f in summary.key_figures}
    revenue = by[K.revenue]  # scale="x"
    assert (
        revenue.value is None
        and revenue.raw == "52,118"
        and revenue.shown == "52,118 USD (as displayed; not converted)"
    )
    assert revenue.note is not None and "scale 'x' is not a power of ten" in revenue.note
    loss = by[K.net_income]  # "(1,250)" inside the fact, no sign="-"
    assert loss.value is None and loss.shown.startswith("(1,250) USD") and "parentheses" in (loss.note or "")
    assert by[K.cash].unit == "EUR" and by[K.cash].value == Decimal("7412000000")  # a euro amount stays in euros
    capex = by[K.capital_expenditure]  # tagged sign="-": an outflow, stated as the amount paid, and said so
    assert capex.value == Decimal("912000") and capex.flow == "outflow" and "sign" in (capex.note or "")
    assert any(p.startswith("us-gaap:Revenues: scale 'x'") for p in summary.fact_problems)


def test_a_statement_figure_keeps_the_statement_unit_and_says_its_period() -> None:
    from tasks.review.filing import key_figures

    page = (
        "Consolidated Statements of Cash Flows\n(In millions)\nNine Months Ended September 30, 2024 2023\n"
        "Net cash provided by operating activities $ 5,140 $ 4,998\nPurchases of property and equipment (1,234) (1,100)\n"
        + "\n".join(f"Other line {i} {i},000 {i},100" for i in range(1, 8))
    )
    (ocf, capex) = key_figures([(7, page)])
    assert (capex.value, capex.unit, capex.flow) == (Decimal(1234), "USD millions", "outflow")
    assert (
        capex.shown == "1,234 USD millions paid (outflow)"
        and capex.period_label == "nine months ended September 30, 2024"
    )
    assert ocf.shown == "5,140 USD millions"


def test_a_summary_stored_before_exact_values_still_reads() -> None:
    old = {
        "name": "revenue",
        "value": 16.177,
        "raw": "16,177",
        "unit": "USD millions",
        "period": "2024",
        "statement": "XBRL",
        "line": "us-gaap:Revenues",
        "page": 3,
    }
    (figure,) = FilingSummary.model_validate({"key_figures": [old]}).key_figures
    assert figure.value == Decimal("16.177") and figure.shown == "16.177 USD millions"  # value and unit agree
    assert KeyFigure.model_validate(figure.model_dump(mode="json")) == figure


def _statement(title: str, heading: str = "") -> str:
    """An income statement page of ten figure lines, its scale line ``heading`` (none when empty)."""
    rows = "\n".join(f"Other line {i} {i},000 {i},100" for i in range(1, 9))
    return f"{title}\n{heading}\nYears ended December 31\n2015 2014\nNet sales $ 30,274 $ 31,821\n{rows}\nNet income $ 4,833 $ 4,956\n"


def test_a_statement_without_its_scale_takes_the_filings_stated_scale_and_says_where() -> None:
    """3M's 2015 10-K: the income statement's text layer has no "(Millions)" heading; the filing says
    "(Dollars in millions …)" beside its other tables. The figure is never shown in plain dollars."""
    from tasks.review.filing import key_figures

    pages = [
        (15, "Selected Financial Data\n(Dollars in millions, except per share amounts)\n2015 2014\nNet sales 30,274"),
        (50, _statement("Consolidated Statement of Income")),
    ]
    revenue = next(k for k in key_figures(pages) if k.name is K.revenue)
    assert (revenue.value, revenue.unit, revenue.shown) == (Decimal(30274), "USD millions", "30,274 USD millions")
    assert revenue.note == (
        "scale as the filing states it on page 15 ('(Dollars in millions, except per share amounts)'): "
        "this statement's heading states none"
    )


def test_a_filing_that_states_no_scale_shows_so_never_plain_dollars() -> None:
    from tasks.review.filing import SCALE_NOT_STATED, key_figures

    (revenue, *_) = key_figures([(50, _statement("Consolidated Statement of Income"))])
    assert revenue.unit == SCALE_NOT_STATED and revenue.shown == "30,274 USD (scale not stated)"
    assert "states no scale" in (revenue.note or "")


@pytest.mark.parametrize(
    "title, heading",
    [
        (
            "MGM\nRESORTS\nINTERNATIONAL\nAND\nSUBSIDIARIES\nCONSOLIDATED\nSTATEMENTS\nOF\nINCOME",
            "(In thousands, except per share data)",
        ),
        (
            "Consolidated Statements of Income",
            "$ and shares in millions, except per share amounts Revenue $ 1,000 $ 900",
        ),
    ],
)
def test_a_scale_set_after_a_title_of_one_word_a_line_or_run_on_into_the_table_is_read(title, heading) -> None:
    """A title set one word a line pushes the scale past the eighth line (MGM Resorts' 2018 10-K); Best Buy's
    heading runs on into the first row of its table."""
    from tasks.review.filing import statement_unit

    unit = statement_unit(_statement(title, heading))
    assert unit == ("USD thousands" if "thousands" in heading else "USD millions")


@pytest.mark.slow
def test_no_key_figure_of_a_shared_pdf_filing_is_shown_in_plain_dollars(shared_data: Path) -> None:
    """Every statement figure of the 64 shared PDF filings carries its scale: the statement's own, else the
    filing's with where it is stated, else "scale not stated" (issue: 3M, AMD, PepsiCo figures in plain USD)."""
    import pypdfium2 as pdfium

    from tasks.review.filing import key_figures

    plain = []
    for path in sorted((shared_data / "filings" / "pdf").glob("*.pdf")):
        pdf = pdfium.PdfDocument(str(path))
        try:
            pages = [
                (i + 1, pdf[i].get_textpage().get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
                for i in range(len(pdf))
            ]
        finally:
            pdf.close()
        plain += [(path.name, k.name.value, k.page) for k in key_figures(pages) if k.unit == "USD"]
    assert plain == []


def test_the_statements_of_a_part_of_the_group_give_no_key_figure() -> None:
    """Amcor's 2023 10-K closes with the statements of its Deed of Cross Guarantee entities (net sales 377,
    inventories 60); they are not the group's (net sales 14,694), so no key figure comes from them."""
    from tasks.review.filing import key_figures, statement_kind

    deed = "Deed of Cross Guarantee\n" + _statement("Consolidated Statements of Income", "($ in millions)")
    assert statement_kind(deed) is None
    assert key_figures([(105, deed)]) == []
    group = _statement("Consolidated Statements of Income", "($ in millions)")
    assert [k.page for k in key_figures([(50, group), (105, deed)])] == [50, 50]
