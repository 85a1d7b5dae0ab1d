"""Absences only where a contract is expected (tasks/check/absences.py, contract_expected): an exhibit that is no
agreement, an SEC form and a partial copy raise no missing-clause alarm, and say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.documents import DocumentKind, ExtractedDocument, PageText, SourceObject
from schemas.taxonomy import ClauseType
from tasks.check.absences import NOT_EXPECTED, contract_expected, find_absences
from tasks.observe.report import absence_alarms


def _document(pages: list[str], kind: DocumentKind = DocumentKind.pdf, running: list[str] | None = None):
    source = SourceObject(uri="/x", name="x", local_path="/x", size_bytes=1)
    units = [PageText(number=n, text=t, running=running or []) for n, t in enumerate(pages, 1)]
    return ExtractedDocument(sha256="0" * 64, source=source, pages=units, kind=kind)


JOINT_FILING = (
    "Exhibit 99.1\nJOINT FILING AGREEMENT\nIn accordance with Rule 13d-1(k)(1) under the Securities Exchange Act "
    "of 1934, as amended, the undersigned hereby agree to the joint filing with each other of a statement on "
    "Schedule 13D with respect to the common stock of Example Corp.\nDated: February 14, 2020\n/s/ Jane Roe"
)


def test_a_joint_filing_agreement_is_no_commercial_contract() -> None:
    why = contract_expected(_document([JOINT_FILING]))
    assert why is not None and why.startswith("a joint filing agreement (Exchange Act Rule 13d-1(k)(1)")


def test_a_partial_copy_states_more_pages_than_were_read() -> None:
    assert contract_expected(_document(["1. SERVICES\n..."], DocumentKind.image, ["Page 1 of 6"])) == (
        "a partial copy: 1 of the 6 pages it states ('Page 1 of 6')"
    )
    whole = [f"SERVICES AGREEMENT\nClause {n}. Text.\nPage {n} of 3" for n in (1, 2, 3)]
    assert contract_expected(_document(whole)) is None  # every page it states is there


@pytest.mark.parametrize(
    "head",
    [
        "POWER OF ATTORNEY\nKnow all persons by these presents that the undersigned appoints Jane Roe.",
        "CERTIFICATION PURSUANT TO SECTION 906 OF THE SARBANES-OXLEY ACT OF 2002\nI, John Doe, certify that",
        "Consent of Independent Registered Public Accounting Firm\nWe consent to the incorporation by reference",
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nSCHEDULE 13D\nUnder the Act",
    ],
)
def test_other_exhibits_and_forms_are_no_contracts(head: str) -> None:
    assert contract_expected(_document([head])) is not None


def test_a_contract_is_expected_even_when_it_names_a_power_of_attorney_in_a_clause() -> None:
    text = (
        "SUPPLY AGREEMENT\nThis Supply Agreement is made by and between Acme Inc. and Beta LLC.\n"
        "12.4 Each party appoints the other as its attorney; this power of attorney is coupled with an interest."
    )
    assert contract_expected(_document([text])) is None


def test_an_absence_not_expected_is_information_with_its_reason() -> None:
    (absence, *_) = find_absences([], [0], "a partial copy: 1 of the 6 pages it states ('Page 1 of 6')")
    assert absence.reason.startswith(NOT_EXPECTED + "a partial copy")
    document = {
        "absences": [
            {"clause_type": ClauseType.cap_on_liability.value, "reason": absence.reason},
            {"clause_type": ClauseType.governing_law.value, "reason": absence.reason},
        ]
    }
    absence_alarms(document)
    assert [a["alarm"] for a in document["absences"]] == [False, False]  # no cap, no governing law: still no alarm
    assert document["absences_not_expected"] == "a partial copy: 1 of the 6 pages it states ('Page 1 of 6')"


def test_a_shared_joint_filing_agreement_is_no_contract(shared_data: Path) -> None:
    """CUAD's joint filing agreements (Schedule 13D/13G exhibits filed on EDGAR) read as what they are."""
    folder = shared_data / "cuad" / "txt"
    found = sorted(folder.glob("*JOINT FILING AGREEMENT*.txt"))
    assert len(found) >= 5
    for path in found:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert contract_expected(_document([text])) is not None, path.name


def test_every_cuad_contract_shows_a_sign_of_an_agreement(shared_data: Path) -> None:
    """The 340 contracts lawyers labelled in CUAD are agreements: each shows a heading, a preamble or a
    signature block (none of them would lose its absences or playbook results)."""
    from tasks.check.absences import agreement_signs

    paths = sorted((shared_data / "cuad" / "txt").glob("*.txt"))
    assert len(paths) == 340
    unsigned = [
        p.name for p in paths if not agreement_signs(_document([p.read_text(encoding="utf-8", errors="replace")]))
    ]
    assert unsigned == []


NOT_AGREEMENTS = {
    "memo": [
        "MEMORANDUM",
        "To: Legal team\nFrom: Operations\nDate: March 3, 2025\nRe: Office move",
        "The office moves to the fourth floor on April 1. Please pack your desks by Friday.",
    ],
    "lab procedure": [
        "Standard Operating Procedure 14: Buffer preparation",
        "1. Weigh 8.0 g of NaCl and dissolve it in 800 mL of distilled water.",
        "2. Adjust the pH to 7.4 with HCl and fill to 1 L. Autoclave for 20 minutes.",
    ],
    "test file": ["Here is a dummy test document.", "It has a second paragraph, and a third one below it.", "End."],
    "manual": [
        "Installation guide",
        "Embedding a video: insert the video link, choose Online Video and paste the address.",
        "Troubleshooting: restart the application when the preview stays blank.",
    ],
    "appendix page": [  # a revised page of a shipping conference agreement's member list (pypdf's test files)
        "International Council of Containership Operators",
        "Agreement No. 010099-061\nNinth Revised Page No. 1\nAppendix A - Members",
        "APL Co. Pte Ltd.\n9 North Buona Vista Drive\nSingapore 138588",
    ],
    "letter": [
        "Dear Ms. Roe,",
        "Thank you for your visit last week. The samples you asked for are enclosed.",
        "Kind regards,\nJohn Doe",
    ],
}


@pytest.mark.parametrize("name", sorted(NOT_AGREEMENTS))
def test_a_memo_a_manual_a_letter_or_a_test_file_is_no_agreement(name: str) -> None:
    from tasks.check.absences import NOT_AN_AGREEMENT

    assert contract_expected(_document(NOT_AGREEMENTS[name], DocumentKind.docx)) == NOT_AN_AGREEMENT


@pytest.mark.parametrize(
    "text",
    [
        "CONSULTING AGREEMENT\n1. Services. The consultant provides the services of Schedule A.",
        "This Master Services Agreement is made between Acme Inc. and Beta LLC.",
        "The terms below bind Acme and its customer.\n...\nIN WITNESS WHEREOF the parties sign.",
        "Purchase terms.\n...\nBy: ______________\nName: Jane Roe\nTitle: CEO",
    ],
)
def test_one_sign_is_enough_for_an_agreement(text: str) -> None:
    assert contract_expected(_document(text.split("\n"), DocumentKind.docx)) is None
