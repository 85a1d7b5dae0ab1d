"""Reading order and specks of OCR'd pages (tasks/ingest/ocr.py: merge_rows, despeckle).

Pages are drawn in code with Pillow from text (its built-in FreeType font), at 200 dpi like an
office scan, so what Tesseract should read is known without a reference file.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest

from tasks.ingest.ocr import TESSERACT_ARGS, _tsv_lines, despeckle, merge_rows, ocr_image

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="the tesseract program is not installed")

DPI = 200
#: Letter at 200 dpi (pixels).
PAGE = (1700, 2200)


def draw_page(items: list[tuple[int, int, str]], size: int = 30):
    """A white greyscale Letter page at :data:`DPI` with each ``(x, y, text)`` drawn at ``(x, y)``
    (pixels from the top left) in Pillow's built-in font at ``size`` pixels (30 px: 11-point type)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", PAGE, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=size)
    for x, y, text in items:
        draw.text((x, y), text, fill=0, font=font)
    return image


def lines_of(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines() if line.strip()]


#: A signature block: each party's lines in a left column, a ``Date:`` far to the right of each
#: ``By:`` line (as in a filed joint filing agreement).
PARTIES = [
    ("ALPHA CAPITAL PARTNERS LLC", "Jane Miller", "Managing Member", "4/8/2020"),
    ("BETA HOLDINGS INC", "Robert Stone", "Chief Executive Officer", "5/9/2021"),
    ("GAMMA TRUST COMPANY", "Laura Green", "Trustee", "6/10/2022"),
]


def signature_page():
    items = [(150, 150, "IN WITNESS WHEREOF, the parties have signed this agreement on the dates below.")]
    y = 300
    for name, person, title, date in PARTIES:
        items += [(150, y, name), (150, y + 50, f"By: /s/ {person}"), (1100, y + 50, f"Date: {date}")]
        items += [(150, y + 100, f"Name: {person}"), (150, y + 150, f"Title: {title}")]
        y += 300
    return draw_page(items)


def tesseract_tsv(image, tmp_path) -> str:
    path = tmp_path / "page.png"
    image.save(path, dpi=(DPI, DPI))
    out = subprocess.run(
        ["tesseract", str(path), "stdout", *TESSERACT_ARGS, "--dpi", str(DPI), "tsv"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@needs_tesseract
def test_a_signature_block_beside_a_date_column_is_read_row_by_row(tmp_path):
    image = signature_page()
    # Tesseract's own layout puts the dates in blocks of their own, read after the signature column
    raw = _tsv_lines(tesseract_tsv(image, tmp_path))
    by_blocks = {key[0] for key, words in raw if words[0][0] == "By:"}
    date_blocks = {key[0] for key, words in raw if words[0][0] == "Date:"}
    assert by_blocks and date_blocks and not by_blocks & date_blocks

    lines = lines_of(ocr_image(image, DPI).text)
    rows = [i for i, line in enumerate(lines) if line.startswith("By:")]
    assert [lines[i] for i in rows] == [f"By: /s/ {person} Date: {date}" for _, person, _, date in PARTIES]
    for i, (name, person, title, _) in zip(rows, PARTIES):  # each party's lines in order around its row
        assert lines[i - 1 : i + 3] == [name, lines[i], f"Name: {person}", f"Title: {title}"]


COLUMN_TEXT = [
    "The Supplier shall deliver the goods",
    "to the place named in the order and",
    "bear the risk of loss until delivery.",
    "Title passes to the Buyer on payment",
    "of the price stated in the order form.",
]
OTHER_COLUMN = [
    "Either party may end this agreement",
    "by notice in writing to the other if",
    "the other breaches it and does not",
    "cure the breach within thirty days",
    "after receiving notice of the breach.",
]


@needs_tesseract
@pytest.mark.parametrize("second_column_x", [725, 900])
def test_two_columns_of_running_text_stay_column_by_column(second_column_x):
    # two columns of 11-point text about 2.5 in (495 px) wide, lines level across the gutter: a
    # 0.4-in gutter (80 px) and a 1.3-in one (255 px)
    items = [(150, 300 + 45 * k, line) for k, line in enumerate(COLUMN_TEXT)]
    items += [(second_column_x, 300 + 45 * k, line) for k, line in enumerate(OTHER_COLUMN)]
    lines = lines_of(ocr_image(draw_page(items), DPI).text)
    assert lines == COLUMN_TEXT + OTHER_COLUMN


def word_line(key: tuple[int, int, int], left: int, top: int, text: str, height: int = 25, char_px: int = 14):
    """A line of Tesseract's TSV as :func:`_tsv_lines` gives it: its words laid out from ``left``."""
    words = []
    for word in text.split():
        words.append((word, 0.95, left, top, char_px * len(word), height))
        left += char_px * (len(word) + 1)
    return (key, words)


def test_rows_join_a_margin_number_to_its_text_and_keep_the_texts_place():
    lines = [
        word_line((1, 1, 1), 40, 800, "10."),  # a margin column of section numbers, read first
        word_line((2, 1, 1), 40, 900, "11."),
        word_line((3, 1, 1), 160, 700, "lead-in text of the page that runs across the column"),
        word_line((3, 1, 2), 160, 800, "Binding Effect. This Agreement binds the parties"),
        word_line((3, 1, 3), 160, 850, "and their successors."),
        word_line((3, 1, 4), 160, 900, "Entire Agreement. This is the whole agreement."),
    ]
    texts = [" ".join(w[0] for w in words) for _, words in merge_rows(lines)]
    assert texts == [
        "lead-in text of the page that runs across the column",
        "10. Binding Effect. This Agreement binds the parties",
        "and their successors.",
        "11. Entire Agreement. This is the whole agreement.",
    ]


def test_rows_do_not_bridge_a_narrow_gutter_or_lines_of_one_block():
    left = [word_line((1, 1, k), 100, 300 + 40 * k, "running text of the left column here") for k in range(1, 4)]
    right = [word_line((2, 1, k), 650, 300 + 40 * k, "running text of the right column too") for k in range(1, 4)]
    assert merge_rows(left + right) == left + right  # a gutter of 46 px: under two line heights (50)
    wider = [word_line((2, 1, k), 900, 300 + 40 * k, "running text of the right column too") for k in range(1, 4)]
    assert merge_rows(left + wider) == left + wider  # 296 px: narrower than a column (504 px)
    one_block = [word_line((1, 1, 1), 100, 300, "By: /s/ Jane Miller"), word_line((1, 1, 2), 1100, 300, "Date:")]
    assert merge_rows(one_block) == one_block  # Tesseract already ordered the lines of one block
    assert merge_rows([]) == []


def test_despeckle_removes_lone_dark_pixels_and_leaves_print_alone():
    import numpy as np

    page = draw_page([(100, 100, "Title passes to the Buyer; i.e., on payment: $1,000.00 (one thousand).")], size=17)
    clean = np.asarray(page)
    assert np.array_equal(np.asarray(despeckle(page)), clean)  # 6-point type, dots and commas included

    rng = random.Random(5)
    specked = clean.copy()
    blank = [(y, x) for y in range(300, 2100, 7) for x in range(50, 1650, 7)]
    lone = rng.sample(blank, 500)
    for y, x in lone:
        specked[y, x] = rng.randrange(0, 70)
    pair_y, pair_x = 250, 800  # two dark pixels side by side: not a lone speck
    specked[pair_y, pair_x : pair_x + 2] = 20
    from PIL import Image

    out = np.asarray(despeckle(Image.fromarray(specked, mode="L")))
    assert all(out[y, x] == 255 for y, x in lone)
    assert (out[pair_y, pair_x : pair_x + 2] == 20).all()
    assert np.array_equal(out[:200], clean[:200])  # the text untouched
