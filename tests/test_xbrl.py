"""Inline XBRL facts as ground truth: an HTML filing's key figures are its own facts for its own period,
and a stated figure is checked against them (``xbrl``: verified naming the fact, or contradicted)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from schemas.documents import DocumentKind, ExtractedDocument, IngestOutcome, SourceObject
from schemas.filings import KeyFigureName
from schemas.findings import Verdict
from schemas.settings import Limits
from tasks.check.xbrl import check_xbrl
from tasks.ingest.extract import extract_document
from tasks.review.facts import filing_period, key_figures_from_facts, period_facts
from tasks.review.filing import figure_name, summarize_document

K = KeyFigureName


def _read(path: Path) -> ExtractedDocument:
    source = SourceObject(uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size)
    outcome = extract_document.fn(IngestOutcome(source=source, sha256="0" * 64, kind=DocumentKind.html), Limits())
    assert outcome.ok, outcome.reason
    assert outcome.document is not None
    return outcome.document


@pytest.fixture(scope="module")
def nvidia(shared_data: Path) -> ExtractedDocument:
    return _read(shared_data / "edgar-html" / "Nvidia.10-K.html")


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> ExtractedDocument:
    return _read(shared_data / "edgar-html" / "Oracle.10-Q.html")


def _figures(document: ExtractedDocument) -> dict[KeyFigureName, tuple[Decimal | None, str, str | None]]:
    """The current figure per name: its exact value, unit and period."""
    return {f.name: (f.value, f.unit, f.period) for f in summarize_document.fn(document).key_figures if f.current}


def test_a_10k_key_figures_are_its_facts_for_its_fiscal_year(nvidia):
    assert nvidia.dei["DocumentPeriodEndDate"] == "2023-01-29"
    period = filing_period(nvidia)
    assert period is not None and period.days == (350, 380)
    figures = _figures(nvidia)
    # the facts' exact values, scale applied, in their own unit (never rescaled to millions)
    assert figures[K.revenue] == (Decimal("26974000000"), "USD", "2022-01-31..2023-01-29")
    assert figures[K.net_income] == (Decimal("4368000000"), "USD", "2022-01-31..2023-01-29")
    assert figures[K.total_assets] == (Decimal("41182000000"), "USD", "2023-01-29")  # an instant at the year end


def test_a_10q_key_figures_are_its_facts_for_its_quarter(oracle):
    figures = _figures(oracle)
    assert figures[K.revenue] == (Decimal("13307000000"), "USD", "2024-06-01..2024-08-31")
    assert figures[K.net_income] == (Decimal("2929000000"), "USD", "2024-06-01..2024-08-31")
    assert all(f.dimensions == {} for f in period_facts(oracle))  # the entity as a whole, no segment


def test_a_stated_figure_is_verified_against_the_fact_of_the_filing_period(nvidia):
    line = "Net income $ 4,368 $ 9,752 $ 4,332"
    assert figure_name(line) is K.net_income
    got = check_xbrl(
        line, "Net income: 4,368 USD millions", "$ 4,368", K.net_income, period_facts(nvidia), nvidia.facts
    )
    assert got is not None and got.verdict is Verdict.verified
    assert got.reason == "matches XBRL fact us-gaap:NetIncomeLoss for 2022-01-31..2023-01-29"


def test_a_figure_of_another_year_is_contradicted_naming_the_fact(nvidia):
    line = "Revenue $ 26,974 $ 26,914 $ 16,675"
    got = check_xbrl(line, "Revenue: 26,914 USD millions", "$ 26,914", K.revenue, period_facts(nvidia), nvidia.facts)
    assert got is not None and got.verdict is Verdict.contradicted
    # the fact's value after its scale (displayed "26,974", tagged in millions), through the one formatter
    assert got.reason.startswith(
        "XBRL fact us-gaap:Revenues for 2022-01-31..2023-01-29 is 26,974,000,000 USD (27 billion)"
    )
    assert "(the stated figure is its value for 2021-02-01..2022-01-30)" in got.reason


def test_no_fact_no_check(nvidia):
    assert (
        check_xbrl("Widgets 12 13", "Widgets: 12 USD millions", "12", None, period_facts(nvidia), nvidia.facts) is None
    )
    assert key_figures_from_facts(nvidia.model_copy(update={"dei": {}})) == []  # no period: no fact is the filing's


def test_the_filing_evaluation_scores_html_key_figures_against_their_facts():
    from tasks.observe.filing_eval import score_xbrl_figures

    def finding(evidence: str, verdict: str | None) -> dict:
        checks = [{"name": "xbrl", "verdict": verdict, "reason": "r"}] if verdict else []
        return {"clause_type": "key_figure", "evidence": evidence, "checks": checks}

    report = {
        "documents": [
            {
                "file_name": "a.10-K.html",
                "kind": "html",
                "status": "reviewed",
                "document_type": "10-K",
                "findings": [
                    finding("Revenue $ 26,974 $ 26,914", "verified"),
                    finding("Net income $ 4,368 $ 9,752", "contradicted"),
                    finding("Widgets 12 13", None),  # no fact speaks to it: not checked
                    {"clause_type": "risk_factor", "evidence": "x", "checks": []},
                ],
            },
            {"file_name": "b.pdf", "kind": "pdf", "status": "reviewed", "document_type": "10-K", "findings": []},
        ]
    }
    got = score_xbrl_figures(report)
    assert (got["filings"], got["key_figure_findings"], got["checked"], got["agree"]) == (1, 3, 2, 1)
    assert got["accuracy"] == 0.5 and got["by_form"] == {"10-K": [1, 2]}
    assert got["by_figure"] == {"revenue": [1, 1], "net_income": [0, 1]}
    assert got["disagreements"] == [{"file": "a.10-K.html", "evidence": "Net income $ 4,368 $ 9,752", "reason": "r"}]


def test_facts_that_cannot_be_used_give_no_figure_and_say_why(shared_data: Path, tmp_path: Path) -> None:
    """The real Nvidia 10-K with two filer errors put in: a second us-gaap:Revenues fact for the fiscal
    year that disagrees (27,000 against 26,974), and the fiscal year's diluted EPS scaled by 10^6."""
    html = (shared_data / "edgar-html" / "Nvidia.10-K.html").read_text(encoding="utf-8")
    fy = "i793edb174e3c4f8499d46ce84a602d1b_D20220131-20230129"
    first = html.index(f'contextRef="{fy}" decimals="-6" name="us-gaap:Revenues"')
    end = html.index("</ix:nonFraction>", first) + len("</ix:nonFraction>")
    duplicate = (
        f' <ix:nonFraction unitRef="usd" contextRef="{fy}" decimals="-6" name="us-gaap:Revenues" '
        'format="ixt:num-dot-decimal" scale="6">27,000</ix:nonFraction>'
    )
    html = html[:end] + duplicate + html[end:]
    eps = f'contextRef="{fy}" decimals="2" name="us-gaap:EarningsPerShareDiluted" scale="0"'
    assert eps in html
    html = html.replace(eps, eps.replace('scale="0"', 'scale="6"'))
    path = tmp_path / "nvidia-with-errors.html"
    path.write_text(html, encoding="utf-8")
    document = _read(path)
    summary = summarize_document.fn(document)
    figures = {f.name: f for f in summary.key_figures}
    assert K.revenue not in figures  # neither fact, nor the statement line read around them
    assert K.eps_diluted not in figures
    assert figures[K.net_income].value == Decimal("4368000000")  # the other facts are used as before
    assert "us-gaap:Revenues: duplicate facts disagree (26,974, 27,000): not used" in summary.fact_problems
    assert any(
        p.startswith("us-gaap:EarningsPerShareDiluted: scale 6 on a per-share amount") for p in summary.fact_problems
    )
    # a stated revenue is checked against no fact of the filing period: no verdict either way
    assert check_xbrl("Revenue $ 26,974", "revenue", "26,974", K.revenue, period_facts(document), []) is None


def test_a_fact_without_its_context_has_no_period(tmp_path: Path) -> None:
    from tasks.ingest.html import read_html

    page = (
        '<html xmlns:ix="http://www.xbrl.org/2013/inlineXBRL" xmlns:xbrli="http://www.xbrl.org/2003/instance">'
        "<body><div style='display:none'><ix:header><ix:resources>"
        '<xbrli:unit id="usd"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>'
        "</ix:resources></ix:header></div><p>Revenue "
        '<ix:nonFraction name="us-gaap:Revenues" contextRef="gone" unitRef="usd" decimals="-6" scale="6" '
        'format="ixt:num-unknown">26,974</ix:nonFraction></p></body></html>'
    )
    path = tmp_path / "broken.htm"
    path.write_text(page)
    result = read_html(str(path), 10)
    assert result["ok"]
    (fact,) = result["facts"]
    assert fact["period_end"] is None and fact["value"] is None
    assert fact["problem"] == "contextRef 'gone' names no context: its period is unknown"
