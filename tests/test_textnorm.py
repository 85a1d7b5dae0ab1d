"""Normalisation used by the quote grounding: the same rules on both sides."""

from __future__ import annotations

import pytest

from tasks.textnorm import canonical_number, clean_page_text, match_form, numbers_in


def norm(text: str) -> str:
    return match_form(text)[0]


def test_clean_page_text_nbsp_ligature_nul_private_use():
    raw = "The\u00a0\u00a0\ufb01nal\x00 price\ue000 is   due.\r\nNext line   \n"
    assert clean_page_text(raw) == "The final price is due.\nNext line"


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("the \ufb01nal invoice", "the final invoice"),  # ligature
        ("the\u00a0Supplier shall", "the Supplier shall"),  # no-break space
        ("\u201cConfidential Information\u201d means", '"Confidential Information" means'),  # curly quotes
        ("the Company\u2019s rights", "the Company's rights"),
        ("within thirty\n(30)   days", "within thirty (30) days"),  # whitespace and line breaks
        ("upon re-\nceipt of the notice", "upon receipt of the notice"),  # end-of-line hyphen join
        ("the price-\ndetermining factor", "the price-determining factor"),  # real compound kept
        ("a non\u2011compete clause", "a non-compete clause"),  # non-breaking hyphen
        ("GOVERNING LAW. This Agreement", "Governing Law. This agreement"),  # case
    ],
)
def test_same_normalisation_makes_quote_match(source: str, quote: str):
    assert norm(quote) in norm(source)


def test_digits_hyphen_is_kept():
    # "1-2" must never turn into "12": only hyphens between letters are folded.
    assert norm("terms 1-2 apply") == "terms 1-2 apply"
    assert "12" not in norm("terms 1-2 apply")


def test_offsets_point_back_into_the_source():
    source = "Intro.\n\nThe \u201cTerm\u201d is five (5) years."
    normalised, offsets = match_form(source)
    pos = normalised.index('"term"')
    assert source[offsets[pos]] == "\u201c"
    assert len(offsets) == len(normalised)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("1,500,000", "1500000"),
        ("1,500,000.00", "1500000"),
        ("8.75", "8.75"),
        ("8.50", "8.5"),
        ("1.250.000,00", "1250000"),
        ("030", "30"),
        ("2020", "2020"),
    ],
)
def test_canonical_number(raw: str, canonical: str):
    assert canonical_number(raw) == canonical


def test_numbers_in_text():
    assert numbers_in("pay $1,500,000 within thirty (30) days at 8.75%") == ["1500000", "30", "8.75"]
