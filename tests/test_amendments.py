"""Amended filings (Form 10-K/A): recognised on the cover page, linked to the filing they amend
(same company, form and period) and compared with it (tasks/store/profiles.py previous_filing)."""

from __future__ import annotations

import json

import pytest

from docreview_testing.filings import INCOME_LINES, write_10k
from tasks.ingest.classify import classify_text
from tasks.store.persist import dispose_engines


def test_the_cover_page_of_an_amendment_is_recognised():
    kind = classify_text(
        "SECURITIES AND EXCHANGE COMMISSION\nFORM 10-K/A\n(Amendment No. 1)\n"
        "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)\nFor the fiscal year ended December 31, 2023\n"
    )
    assert (kind.document_type, kind.amendment) == ("10-K", True) and "an amendment (Form 10-K/A)" in kind.reason
    plain = classify_text("FORM 10-K\nANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)\nDecember 31, 2023\n")
    assert plain.amendment is False


@pytest.mark.usefixtures("prefect_harness")
def test_an_amended_10k_is_compared_with_the_filing_it_amends(tmp_path, db_url):
    from flows.review import review_documents

    heads = ["Supply chain disruptions could delay our deliveries.", "Competition could reduce our margins."]
    write_10k(tmp_path / "inbox" / "northwind-2022.pdf", "Northwind Tools, Inc.", 2022, heads)
    write_10k(tmp_path / "inbox" / "northwind-2021.pdf", "Northwind Tools, Inc.", 2021, heads)
    restated = [("Net income", "1,390", "1,402")] + [r for r in INCOME_LINES if r[0] != "Net income"]
    write_10k(
        tmp_path / "inbox" / "northwind-2022-amendment-1.pdf",
        "Northwind Tools, Inc.",
        2022,
        heads + ["A restatement of our financial statements could harm our reputation."],
        income=restated,
        amendment=1,
    )
    try:
        review_documents(
            source=str(tmp_path / "inbox"), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules"
        )
    finally:
        dispose_engines()
    docs = {d["file_name"]: d for d in json.loads((tmp_path / "out" / "report.json").read_text())["documents"]}
    original, amended = docs["northwind-2022.pdf"], docs["northwind-2022-amendment-1.pdf"]
    assert (amended["document_type"], amended["amendment"], original["amendment"]) == ("10-K", True, False)
    assert amended["previous_sha256"] == original["sha256"]  # the filing it amends, not the 2021 one
    assert amended["previous_file_name"] == "northwind-2022.pdf"
    assert original["previous_sha256"] == docs["northwind-2021.pdf"]["sha256"]  # the year before, not the amendment
    kinds = {(c["kind"], c["subject"]): c for c in amended["changes"]}
    assert ("risk_factor_added", "A restatement of our financial statements could harm our reputation.") in kinds
    net = next(c for c in amended["changes"] if c["kind"] == "figure_changed" and c["subject"] == "net_income")
    assert (net["before"], net["after"]) == ("1,510 USD millions", "1,390 USD millions")
    html = (tmp_path / "out" / "report.html").read_text()
    assert (
        "An amendment (Form 10-K/A) of <b>northwind-2022.pdf</b>" in html
        and "Changes from the filing it amends" in html
    )
