"""HTML filings as filed on EDGAR (tasks/ingest/html.py) and their inline XBRL facts (tasks/ingest/ixbrl.py):
units with page and Part/Item locators, statement lines the filing reader reads, exact fact values, the
complete submission text file, hostile files, and the way through the extraction worker."""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest

from schemas.documents import DocumentKind, FailureKind, IngestOutcome, SourceObject
from schemas.settings import Limits
from tasks.ingest import ixbrl
from tasks.ingest.extract import extract_document, run_extraction
from tasks.ingest.html import read_html


@cache
def _read(path: str) -> dict:
    result = read_html(path, 2000)
    assert result["ok"], result
    return result


def edgar(shared: Path, name: str) -> dict:
    return _read(str(shared / "edgar-html" / name))


def units_with(result: dict, needle: str) -> list[dict]:
    return [p for p in result["pages"] if needle in p["text"]]


def fact(result: dict, concept: str, start: str | None, end: str) -> dict:
    """The one value of ``concept`` for the period, without dimensions (a fact may be tagged in several places
    of a filing, always with the same value)."""
    found = [
        f
        for f in result["facts"]
        if f["concept"] == concept and not f["dimensions"] and f["period_start"] == start and f["period_end"] == end
    ]
    assert found, f"no {concept} for {start}..{end}"
    assert len({f["value"] for f in found}) == 1, found
    return found[0]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# --------------------------------------------------------------------------- the shared EDGAR filings


def test_nvidia_units_carry_pages_and_item_sections(shared_data: Path) -> None:
    result = edgar(shared_data, "Nvidia.10-K.html")
    pages = result["pages"]
    assert all(p["locator"]["page"] for p in pages)
    assert [p["number"] for p in pages] == list(range(1, len(pages) + 1))
    assert max(p["locator"]["page"] for p in pages) > 80  # the filer's page breaks
    sections = {p["locator"]["section"] for p in pages}
    assert "Part I > Item 1A. RISK FACTORS" in sections
    # Item 7's heading starts a unit whose section is Item 7, though its page holds no other heading
    item7 = [p for p in pages if p["text"].startswith("ITEM 7. MANAGEMENT")]
    assert len(item7) == 1
    assert item7[0]["locator"]["section"].startswith("Part II > Item 7. MANAGEMENT’S DISCUSSION AND ANALYSIS")
    mdna = units_with(result, "Fiscal Year 2023 Summary")
    assert mdna and all(" > Item 7. " in p["locator"]["section"] for p in mdna)
    # Item 7A starts mid-page: the text before it on that page stays under Item 7
    item7a = next(p for p in pages if p["text"].startswith("ITEM 7A."))
    before = next(p for p in pages if p["number"] == item7a["number"] - 1)
    assert before["locator"]["page"] == item7a["locator"]["page"]
    assert " > Item 7. " in before["locator"]["section"]


def test_nvidia_table_of_contents_is_not_the_items(shared_data: Path) -> None:
    result = edgar(shared_data, "Nvidia.10-K.html")
    toc = units_with(
        result, "Item 7. Management’s Discussion and Analysis of Financial Condition and Results of Operations 36"
    )
    assert len(toc) == 1
    assert toc[0]["locator"] == {"page": 2, "section": None}  # the contents page sits under no Item
    cover = result["pages"][0]
    assert cover["locator"] == {"page": 1, "section": None}
    assert "FORM 10-K" in cover["text"]


def test_nvidia_running_lines_are_removed(shared_data: Path) -> None:
    result = edgar(shared_data, "Nvidia.10-K.html")
    page5 = next(p for p in result["pages"] if p["locator"]["page"] == 5)
    assert page5["running"] == ["Table of Contents", "5"]
    assert page5["quality"]["running_lines"] == 2
    assert not page5["text"].startswith("Table of Contents")
    assert not page5["text"].endswith("\n5")
    assert page5["quality"]["extractor"] == "html"


def test_statement_lines_are_read_by_the_filing_reader(shared_data: Path) -> None:
    from tasks.ingest.classify import classify_text
    from tasks.review.filing import summarize_pages

    result = edgar(shared_data, "Nvidia.10-K.html")
    assert units_with(result, "Revenue $ 26,974 $ 26,914 $ 16,675")
    pages = [(p["number"], p["text"]) for p in result["pages"]]
    figures = {f.name.value: f for f in summarize_pages(pages).key_figures}
    assert figures["revenue"].value == 26974 and figures["revenue"].unit == "USD millions"
    assert figures["net_income"].value == 4368
    assert figures["eps_diluted"].value == Decimal("1.74")  # exact, as written
    assert figures["dividends_paid"].value == 398  # "(398)": the closing parenthesis glued to its amount
    kind = classify_text("\n\n".join(t for _, t in pages[:4]))
    assert kind.document_type == "10-K" and kind.period == "2023-01-29"


def test_nvidia_facts_are_exact(shared_data: Path) -> None:
    result = edgar(shared_data, "Nvidia.10-K.html")
    revenue = fact(result, "us-gaap:Revenues", "2022-01-31", "2023-01-29")
    assert revenue["value"] == "26974000000" and Decimal(revenue["value"]) == Decimal(26974) * 10**6
    assert revenue["unit"] == "USD" and revenue["decimals"] == "-6" and not revenue["instant"]
    assert fact(result, "us-gaap:NetIncomeLoss", "2022-01-31", "2023-01-29")["value"] == "4368000000"
    assert fact(result, "us-gaap:EarningsPerShareDiluted", "2022-01-31", "2023-01-29")["unit"] == "USD/shares"
    # the statement's unit holds the fact
    unit = result["pages"][revenue["unit_number"] - 1]
    assert "26,974" in unit["text"]
    # sign="-": a negative value shown without its minus
    other = fact(result, "us-gaap:OtherNonoperatingIncomeExpense", "2022-01-31", "2023-01-29")
    assert other["value"] == "-48000000" and other["text"] == "48"
    # an instant context: period_end only
    assets = [f for f in result["facts"] if f["concept"] == "us-gaap:Assets" and not f["dimensions"]]
    assert any(f["instant"] and f["period_start"] is None and f["period_end"] == "2023-01-29" for f in assets)
    # facts with dimensions carry their axis and member
    assert any(f["dimensions"].get("srt:ProductOrServiceAxis") for f in result["facts"])
    # ixt-sec:numwordsen
    words = [f for f in result["facts"] if f["text"] == "four" and f["unit"]]
    assert words and all(f["value"] == "4" for f in words)
    # xsi:nil
    nil = [f for f in result["facts"] if f["concept"] == "us-gaap:CommitmentsAndContingencies"]
    assert nil and all(f["value"] is None for f in nil)
    assert result["dei"]["DocumentPeriodEndDate"] == "2023-01-29"
    assert result["dei"]["DocumentType"] == "10-K"
    assert result["dei"]["DocumentFiscalYearFocus"] == "2023"
    assert result["dei"]["EntityRegistrantName"] == "NVIDIA CORP"


def test_hidden_text_does_not_leak(shared_data: Path) -> None:
    result = edgar(shared_data, "Nvidia.10-K.html")
    text = "\n".join(p["text"] for p in result["pages"])
    hidden = [f for f in result["facts"] if f["unit_number"] is None]
    assert any(f["concept"] == "dei:EntityCentralIndexKey" for f in hidden)
    assert "0001045810" not in text  # the CIK is only in the hidden ix:header
    assert "P3Y" not in text  # a hidden duration fact's value
    assert "nvda-20230129" not in text  # the <title>


def test_lines_set_in_bold_or_italic_are_listed_as_emphasised(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "emphasis.htm",
        "<html><body><p>ITEM 1A. RISK FACTORS</p>"
        "<div><span style='font-weight:700'>Competition could cause us to lose revenue.</span></div>"
        "<div><span style='font-weight:400'>Our markets are competitive. </span>"
        "<span style='font-weight:bold'>Some words</span><span> in bold do not make a heading.</span></div>"
        "<p><b>Demand may fall </b><i>and supply may not.</i></p>"
        "<div style='font-weight:bold'><span style='font-weight:normal'>Plain inside a bold block.</span></div>"
        "<p><em>Italic alone.</em></p>"
        "<table><tr><td><b>Total</b></td><td><b>12</b></td></tr></table>"
        "<p>Plain.</p></body></html>",
    )
    result = read_html(str(path), 100)
    (unit,) = [p for p in result["pages"] if "Competition" in p["text"]]
    lines = unit["text"].split("\n")
    assert [lines[i] for i in unit["emphasis"]] == [
        "Competition could cause us to lose revenue.",
        "Demand may fall and supply may not.",  # bold then italic: all of it emphasised
        "Italic alone.",
    ]  # not: a few bold words in a plain paragraph, plain type inside a bold block, a table row, the plain lines


def test_nvidia_risk_factor_headings_are_its_emphasised_sentences(shared_data: Path) -> None:
    """The 10-K sets each of its 24 risk factors' headings in bold (font-weight:700) and their paragraphs in
    plain type (400); the bulleted Risk Factors Summary is plain."""
    result = edgar(shared_data, "Nvidia.10-K.html")
    item_1a = [p for p in result["pages"] if (p["locator"]["section"] or "").endswith("Item 1A. RISK FACTORS")]
    emphasised = [p["text"].split("\n")[i] for p in item_1a for i in p["emphasis"]]
    assert "Competition in our current and target markets could cause us to lose market share and revenue." in (
        emphasised
    )
    assert "Risks Related to Demand, Supply and Manufacturing" in emphasised  # a group title: no end mark
    assert not any(line.startswith("•") for line in emphasised)  # the summary's bullets
    assert sum(1 for line in emphasised if line.endswith(".") and len(line) <= 500) == 24


def test_oracle_quarter(shared_data: Path) -> None:
    result = edgar(shared_data, "Oracle.10-Q.html")
    quarter = ("2024-06-01", "2024-08-31")
    revenue = fact(result, "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax", *quarter)
    assert revenue["value"] == "13307000000" and revenue["unit"] == "USD"
    assert fact(result, "us-gaap:NetIncomeLoss", *quarter)["value"] == "2929000000"
    assert result["dei"]["DocumentPeriodEndDate"] == "2024-08-31"
    assert result["dei"]["DocumentFiscalPeriodFocus"] == "Q1"
    sections = [p["locator"]["section"] for p in result["pages"]]
    assert "Part II > Item 1A. Risk Factors" in sections  # a 10-Q's Part II restarts its Items
    assert any(s and s.startswith("Part I > Item 2. Management’s Discussion") for s in sections)


def test_8k_items(shared_data: Path) -> None:
    result = edgar(shared_data, "BuckleInc.8-K.html")
    [release] = units_with(result, "announced financial results for the fiscal quarter")
    assert release["locator"]["section"] == "Item 2.02 Results of Operations and Financial Condition"
    exhibits = units_with(result, "Exhibit 99.1 Press Release")  # in Item 9.01 and the exhibit index after it
    assert exhibits and all(u["locator"]["section"] == "Item 9.01 Exhibits" for u in exhibits)
    assert exhibits[0]["locator"]["page"] == release["locator"]["page"]  # Item 9.01 starts mid-page
    assert result["form"] == "8-K" and result["dei"]["DocumentPeriodEndDate"] == "2024-11-22"


def test_8k_item_801_is_not_901(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "8k.htm",
        "<html><body><div><p>FORM 8-K</p><p>CURRENT REPORT</p></div>"
        '<hr style="page-break-after:always">'
        "<div><span>Item 8.01</span><span> Other Events</span></div>"
        "<p>On May 1, 2024 the Board approved a share repurchase program.</p>"
        "<div><b>Item 9.01 Financial Statements and Exhibits</b></div>"
        "<table><tr><td>99.1</td><td></td><td>Press release dated May 1, 2024</td></tr></table>"
        "</body></html>",
    )
    result = read_html(str(path), 100)
    assert result["ok"]
    [other] = units_with(result, "share repurchase program")
    assert other["locator"] == {"page": 2, "section": "Item 8.01 Other Events"}
    [exhibits] = units_with(result, "99.1 Press release dated May 1, 2024")  # the spacer cell is skipped
    assert exhibits["locator"] == {"page": 2, "section": "Item 9.01 Financial Statements and Exhibits"}


def test_without_page_breaks_units_are_the_items(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "10k.htm",
        "<html><body><p>FORM 10-K</p>"
        "<table><tr><td>Item 1A.</td><td>Risk Factors</td><td>12</td></tr>"
        "<tr><td>PART II</td><td></td><td></td></tr>"
        "<tr><td>Item 7.</td><td>Management's Discussion</td><td>36</td></tr></table>"
        "<p>PART I</p><p>ITEM 1A.</p><p>RISK FACTORS</p><p>Our business is risky.</p>"
        "<p>Item 1A of this report is a reference, not a heading.</p>"
        "<p>PART II</p><p>Item 7. Management's Discussion and Analysis</p><p>Revenue grew.</p></body></html>",
    )
    result = read_html(str(path), 100)
    assert [(p["locator"]["page"], p["locator"]["section"]) for p in result["pages"]] == [
        (None, None),
        (None, "Part I > Item 1A. RISK FACTORS"),
        (None, "Part II > Item 7. Management's Discussion and Analysis"),
    ]
    assert "Item 7. Management's Discussion 36" in result["pages"][0]["text"]  # the contents stay text
    assert "reference, not a heading" in result["pages"][1]["text"]


# --------------------------------------------------------------------------- inline XBRL details

_IXBRL = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
 xmlns:xbrli="http://www.xbrl.org/2003/instance" xmlns:xbrldi="http://xbrl.org/2006/xbrldi"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:iso4217="http://www.xbrl.org/2003/iso4217"
 xmlns:ixt="http://www.xbrl.org/inlineXBRL/transformation/2020-02-12" xmlns:dei="http://xbrl.sec.gov/dei/2023"
 xmlns:us-gaap="http://fasb.org/us-gaap/2023" xmlns:ex="http://example.com/2024">
<head><title>ex-20240630</title><style>p { color: red }</style><script>var x = "script text";</script></head>
<body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:DocumentType" contextRef="d">10-Q</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="d">Q2</ix:nonNumeric>
</ix:hidden><ix:resources>
<xbrli:context id="d"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">0000000001</xbrli:identifier>
</xbrli:entity><xbrli:period><xbrli:startDate>2024-04-01</xbrli:startDate><xbrli:endDate>2024-06-30</xbrli:endDate>
</xbrli:period></xbrli:context>
<xbrli:context id="i_seg"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">0000000001</xbrli:identifier>
<xbrli:segment><xbrldi:explicitMember dimension="us-gaap:StatementBusinessSegmentsAxis">ex:CloudMember</xbrldi:explicitMember>
<xbrldi:typedMember dimension="ex:ContractAxis"><ex:ContractDomain>K-17</ex:ContractDomain></xbrldi:typedMember>
</xbrli:segment></xbrli:entity><xbrli:period><xbrli:instant>2024-06-30</xbrli:instant></xbrli:period></xbrli:context>
<xbrli:unit id="usd"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>
<xbrli:unit id="usdPerShare"><xbrli:divide><xbrli:unitNumerator><xbrli:measure>iso4217:USD</xbrli:measure>
</xbrli:unitNumerator><xbrli:unitDenominator><xbrli:measure>xbrli:shares</xbrli:measure></xbrli:unitDenominator>
</xbrli:divide></xbrli:unit>
</ix:resources></ix:header></div>
<p>For the quarterly period ended <ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="d"
 format="ixt:date-monthname-day-year-en">June&#160;30, 2024</ix:nonNumeric></p>
<table><tr><td>Loss</td><td>$</td><td>(<ix:nonFraction name="us-gaap:NetIncomeLoss" contextRef="d" unitRef="usd"
 decimals="-3" scale="3" sign="-" format="ixt:num-dot-decimal">1,234.5</ix:nonFraction></td><td>)</td></tr>
<tr><td>Per share</td><td>$</td><td><ix:nonFraction name="us-gaap:EarningsPerShareDiluted" contextRef="d"
 unitRef="usdPerShare" decimals="2" format="ixt:num-dot-decimal">0.10</ix:nonFraction></td></tr>
<tr><td>Backlog</td><td><ix:nonFraction name="ex:Backlog" contextRef="i_seg" unitRef="usd" decimals="INF"
 scale="-2" format="ixt:fixed-zero">—</ix:nonFraction></td></tr>
<tr><td>Other</td><td><ix:nonFraction name="ex:Other" contextRef="d" unitRef="usd" xsi:nil="true"/></td></tr></table>
<div style="page-break-before:always"><ix:nonNumeric name="ex:PolicyTextBlock" contextRef="d" continuedAt="c1">
Policy starts here<ix:exclude> [excluded footnote]</ix:exclude>.</ix:nonNumeric></div>
<p>Between the parts.</p>
<p><ix:continuation id="c1">And it continues here.</ix:continuation></p>
</body></html>"""


def test_inline_xbrl_details(tmp_path: Path) -> None:
    result = read_html(str(write(tmp_path, "ex.htm", _IXBRL)), 100)
    assert result["ok"], result
    facts = {f["concept"]: f for f in result["facts"]}
    loss = facts["us-gaap:NetIncomeLoss"]
    assert loss["value"] == "-1234500" and loss["text"] == "1,234.5" and loss["decimals"] == "-3"
    assert (loss["period_start"], loss["period_end"], loss["instant"]) == ("2024-04-01", "2024-06-30", False)
    assert loss["unit_number"] == 1
    assert facts["us-gaap:EarningsPerShareDiluted"]["value"] == "0.1"
    assert facts["us-gaap:EarningsPerShareDiluted"]["unit"] == "USD/shares"
    backlog = facts["ex:Backlog"]
    assert backlog["value"] == "0" and backlog["instant"] and backlog["period_end"] == "2024-06-30"
    assert backlog["dimensions"] == {
        "us-gaap:StatementBusinessSegmentsAxis": "ex:CloudMember",
        "ex:ContractAxis": "K-17",
    }
    assert facts["ex:Other"]["value"] is None and facts["ex:Other"]["unit"] == "USD"
    policy = facts["ex:PolicyTextBlock"]
    assert policy["text"] == "Policy starts here. And it continues here."
    assert policy["value"] is None and policy["unit_number"] == 2
    assert facts["dei:DocumentType"]["unit_number"] is None  # hidden
    assert result["dei"] == {
        "DocumentType": "10-Q",
        "DocumentFiscalPeriodFocus": "Q2",
        "DocumentPeriodEndDate": "2024-06-30",
    }
    text = "\n".join(p["text"] for p in result["pages"])
    assert "Loss $ (1,234.5)" in text  # ")" glued to its amount
    assert "[excluded footnote]" in text  # ix:exclude is displayed, only left out of the fact
    for hidden in ("Q2", "script text", "color: red", "ex-20240630", "0000000001"):
        assert hidden not in text
    assert [p["locator"]["page"] for p in result["pages"]] == [1, 2]


@pytest.mark.parametrize(
    ("fmt", "shown", "value"),
    [
        ("ixt:num-dot-decimal", "26,974", "26974"),
        ("ixt:numdotdecimal", "1,234.50", "1234.50"),
        ("ixt:num-comma-decimal", "1.234,5", "1234.5"),
        ("ixt:fixed-zero", "—", "0"),
        ("ixt-sec:numwordsen", "twenty-five", "25"),
        ("ixt-sec:numwordsen", "none", "0"),
        ("ixt:date-monthname-day-year-en", "January\xa029, 2023", "2023-01-29"),
        ("ixt:datemonthdayyearen", "Dec. 31, 2022", "2022-12-31"),
        ("ixt:date-monthname-year-en", "June 2026", "2026-06"),
        ("ixt:date-monthname-day-en", "January 29", "--01-29"),
        ("ixt:date-day-monthname-year-en", "3 February 2024", "2024-02-03"),
        ("ixt:date-month-day-year", "08/31/2024", "2024-08-31"),
        ("ixt-sec:boolballotbox", "☒", "true"),
        ("ixt:fixed-false", "☐", "false"),
        ("ixt-sec:durwordsen", "six years", "P6Y"),
        ("ixt-sec:durwordsen", "2 years and six months", "P2Y6M"),
        (None, " 42 ", "42"),
    ],
)
def test_transformations(fmt: str | None, shown: str, value: str) -> None:
    assert ixbrl.transform(fmt, shown) == value


def test_numeric_values_are_exact_decimals() -> None:
    assert ixbrl.numeric_value("26,974", "ixt:num-dot-decimal", "6", None) == "26974000000"
    assert ixbrl.numeric_value("0.1", None, "9", "-") == "-100000000"
    assert ixbrl.numeric_value("12.50", None, "-2", "-") == "-0.125"
    assert ixbrl.numeric_value("0.1", None, "0", None) == "0.1"  # never a float's 0.1000000000000000055…
    with pytest.raises(ixbrl.TransformError):
        ixbrl.numeric_value("n/a", "ixt:num-dot-decimal", "6", None)


# --------------------------------------------------------------------------- the complete submission text file


def test_complete_submission_file(shared_data: Path, tmp_path: Path) -> None:
    form = (shared_data / "edgar-html" / "BuckleInc.8-K.html").read_bytes()
    exhibit = (shared_data / "edgar-html" / "BuckleInc.8-K.EX99.1.html").read_bytes()  # already a <DOCUMENT>
    submission = (
        b"<SEC-DOCUMENT>0000885245-24-000050.txt : 20241122\n<SEC-HEADER>0000885245-24-000050.hdr.sgml : 20241122\n"
        b"ACCESSION NUMBER:\t\t0000885245-24-000050\nCONFORMED SUBMISSION TYPE:\t8-K\n</SEC-HEADER>\n"
        b"<DOCUMENT>\n<TYPE>8-K\n<SEQUENCE>1\n<FILENAME>bke-20241122.htm\n<DESCRIPTION>8-K\n<TEXT>\n"
        + form
        + b"\n</TEXT>\n</DOCUMENT>\n"
        + exhibit
        + b"<DOCUMENT>\n<TYPE>GRAPHIC\n<SEQUENCE>3\n<FILENAME>logo.jpg\n<TEXT>\nbegin 644 logo.jpg\nM_]C_X``0\nend\n"
        b"</TEXT>\n</DOCUMENT>\n</SEC-DOCUMENT>\n"
    )
    path = write(tmp_path, "0000885245-24-000050.txt", submission)
    assert __import__("tasks.ingest.kinds", fromlist=["detect_kind"]).detect_kind(str(path)) == DocumentKind.html
    result = read_html(str(path), 100)
    assert result["ok"], result
    assert result["form"] == "8-K"
    assert result["parts"] == [
        {"type": "EX-99.1", "sequence": "2", "filename": "bke20241122-8kexhibit.htm", "description": "EX-99.1"},
        {"type": "GRAPHIC", "sequence": "3", "filename": "logo.jpg", "description": None},
    ]
    text = "\n".join(p["text"] for p in result["pages"])
    assert "announced financial results" in text
    assert "CONSOLIDATED BALANCE SHEETS" not in text  # the exhibit is a document of its own
    assert "ACCESSION NUMBER" not in text
    assert result["dei"]["DocumentType"] == "8-K"


def test_exhibit_document_alone(shared_data: Path) -> None:
    result = edgar(shared_data, "BuckleInc.8-K.EX99.1.html")
    assert result["form"] == "EX-99.1" and result["facts"] == [] and result["parts"] == []
    assert units_with(result, "CONSOLIDATED STATEMENTS OF INCOME")


def test_plain_text_submission_pages(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "old.txt",
        "<DOCUMENT>\n<TYPE>10-K\n<TEXT>\nFORM 10-K\nAnnual report\n<PAGE>\nPART I\nItem 1. Business\nWe sell things.\n"
        "</TEXT>\n</DOCUMENT>\n",
    )
    result = read_html(str(path), 100)
    assert result["ok"] and result["form"] == "10-K"
    assert [(p["locator"]["page"], p["locator"]["section"]) for p in result["pages"]] == [
        (1, None),
        (2, "Part I > Item 1. Business"),
    ]


# --------------------------------------------------------------------------- hostile and broken files


def test_hostile_files_fail_with_a_reason(tmp_path: Path) -> None:
    bomb = (
        '<!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><html><body><p>&c;&c;&c;</p></body></html>'
    )
    failed = read_html(str(write(tmp_path, "bomb.html", bomb)), 100)
    assert failed["ok"] is False and failed["kind"] == FailureKind.corrupt.value and "ENTITY" in failed["reason"]
    empty = read_html(str(write(tmp_path, "empty.html", b"")), 100)
    assert empty["ok"] is False and empty["kind"] == FailureKind.empty_file.value
    junk = bytes(range(256)) * 400
    binary = read_html(str(write(tmp_path, "junk.html", b"<html><body><p>Hello</p>" + junk)), 100)
    assert binary["ok"] is False and binary["kind"] == FailureKind.corrupt.value and "binary" in binary["reason"]
    blank = read_html(str(write(tmp_path, "blank.html", "<html><body><p> </p><script>x()</script></body></html>")), 100)
    assert blank["ok"] is False and blank["kind"] == FailureKind.no_text.value
    many = "<html><body>" + '<p>x</p><hr style="page-break-after:always">' * 120 + "</body></html>"
    too_many = read_html(str(write(tmp_path, "many.html", many)), 100)
    assert too_many["ok"] is False and too_many["kind"] == FailureKind.too_many_pages.value
    deep = "<html><body>" + "<div>" * 50_000 + "deep" + "</div>" * 50_000 + "</body></html>"
    nested = read_html(str(write(tmp_path, "deep.html", deep)), 100)
    assert nested["ok"] is False or nested["pages"][0]["text"] == "deep"
    missing = read_html(str(tmp_path / "missing.html"), 100)
    assert missing["ok"] is False and missing["kind"] == FailureKind.corrupt.value


def test_broken_markup_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "broken.html",
        "<html><body><p>Unclosed <b>bold<p>Next &amp; last &nbsp;para<br>line<div>Reven</div>ue</body>",
    )
    result = read_html(str(path), 100)
    assert result["ok"]
    assert result["pages"][0]["text"].split("\n")[:3] == ["Unclosed bold", "Next & last para", "line"]


# --------------------------------------------------------------------------- through the extraction worker


def test_through_the_worker_and_the_parent(shared_data: Path) -> None:
    path = shared_data / "edgar-html" / "Oracle.10-Q.html"
    result = run_extraction(str(path), Limits(), DocumentKind.html)
    assert result["ok"], result
    assert result["dei"]["DocumentType"] == "10-Q"
    source = SourceObject(uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size)
    outcome = extract_document.fn(IngestOutcome(source=source, sha256="0" * 64, kind=DocumentKind.html), Limits())
    assert outcome.ok and outcome.document is not None
    doc = outcome.document
    assert doc.kind == DocumentKind.html and outcome.pages == len(doc.pages)
    revenue = [
        f
        for f in doc.facts
        if f.concept == "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
        and not f.dimensions
        and (f.period_start, f.period_end) == ("2024-06-01", "2024-08-31")
    ]
    assert revenue and revenue[0].value == "13307000000" and revenue[0].unit_number is not None
    unit = doc.pages[revenue[0].unit_number - 1]
    assert "13,307" in unit.text
    # the sixth page by the filer's page breaks prints "4" at its foot (cover and contents are unnumbered)
    assert unit.where().label().startswith(f"page {unit.locator.page} (printed 4), Part I > Item 1.")  # type: ignore[union-attr]
    assert doc.locator_of(unit.number).page_basis == "page_break"
    assert unit.quality.extractor == "html"
    marked = [p for p in doc.pages if p.emphasis]  # the emphasised lines reach the document's units
    assert marked and all(
        p.text[a:b] == p.text.split("\n")[i] for p in marked for (a, b), i in zip(p.emphasised_spans(), p.emphasis)
    )


def test_worker_failure_reaches_the_outcome(tmp_path: Path) -> None:
    path = write(tmp_path, "blank.htm", "<html><body><p>&#160;</p></body></html>")
    source = SourceObject(uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size)
    outcome = extract_document.fn(IngestOutcome(source=source, sha256="0" * 64, kind=DocumentKind.html), Limits())
    assert outcome.failure == FailureKind.no_text and outcome.reason
