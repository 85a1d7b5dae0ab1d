"""``match_form`` copies runs of plain ASCII whole: it must equal the per-character rules exactly.

The reference below is the rule set of :func:`tasks.textnorm.match_form` applied one character
at a time (its earlier implementation); random strings over an alphabet of every special case
(curly quotes, dashes, soft hyphen, NUL, private use, ligatures, unicode spaces, end-of-line
hyphens, space runs) and real contract text must give the same text and offsets.
"""

from __future__ import annotations

import random
import unicodedata

import pytest

from tasks.textnorm import _CHAR_MAP, is_private_use, match_form


def reference_match_form(text: str) -> tuple[str, list[int]]:
    out: list[str] = []
    offs: list[int] = []
    n, i, pending_space = len(text), 0, -1
    while i < n:
        ch = text[i]
        if ch.isspace():
            if pending_space < 0:
                pending_space = i
            i += 1
            continue
        piece = _CHAR_MAP.get(ch)
        if piece is None:
            piece = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        if ch == "\x00" or (not ch.isascii() and is_private_use(ch)):
            piece = ""
        if piece == "-" and out and out[-1].isalpha():
            j = i + 1
            while j < n and text[j] in " \t":
                j += 1
            had_newline = False
            while j < n and text[j] in "\n\r":
                had_newline = True
                j += 1
            while had_newline and j < n and text[j] in " \t":
                j += 1
            if j < n and text[j].isalpha() and (had_newline or j == i + 1):
                pending_space = -1
                i = j
                continue
        if not piece:
            i += 1
            continue
        if pending_space >= 0:
            if out:
                out.append(" ")
                offs.append(pending_space)
            pending_space = -1
        for pc in piece.casefold():
            out.append(pc)
            offs.append(i)
        i += 1
    return "".join(out), offs


ALPHABET = list("abXY z09.,;:()$%'\"`-\n\t\r\f\v") + [
    "\u00a0",
    "\u2019",
    "\u201c",
    "\u2014",
    "\u2013",
    "\u00ad",
    "\x00",
    "\ue000",
    "\ufb01",
    "\u00df",
    "\u0130",
    "\x1c",
    "\u2028",
    "\u3000",
    "\u00e9",
    "\u03a9",
    "-\n",
    "re-\nceipt",
    " \n ",
    "ab cd",
    "a  b",
    "price-determining",
]


@pytest.mark.parametrize("seed", range(4))
def test_equals_per_character_rules_on_random_text(seed):
    rng = random.Random(seed)
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60)))
        assert match_form(text) == reference_match_form(text), repr(text)


def test_equals_per_character_rules_on_contract_text(shared_data):
    texts = sorted((shared_data / "cuad" / "txt").glob("*.txt"))[:5]
    assert texts
    for path in texts:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert match_form(text) == reference_match_form(text), path.name
