"""OCR of scanned PDF pages and TIFF/PNG/JPEG page images with Tesseract, offline.

Engine: the ``tesseract`` program (5.x, Debian's ``tesseract-ocr`` with ``tesseract-ocr-eng``;
nothing is downloaded), called directly with ``tsv`` output rather than through pytesseract: the
wrapper runs the same program on a temporary file and parses the same TSV, so it would add a
dependency and nothing else. Each page is written as an uncompressed BMP (the fastest format for
Pillow to write and Leptonica to read; measured: PNG costs about 0.1 s more per page) and the TSV
read from a file, so two pages can be OCR'd at once without threads. Options:
``--oem 1`` (the LSTM engine; Debian's ``eng`` model is the ``tessdata_fast`` one) and ``--psm 3``
(automatic page segmentation: blocks, paragraphs and lines come from Tesseract's layout analysis;
``--psm 6`` reads a page as one paragraph, where the chunker needs paragraphs, and interleaves the
columns of a two-column page: see *Reading order*), ``--dpi`` the resolution rendered at, and
``OMP_THREAD_LIMIT=1`` (Tesseract's own OpenMP threads cost more than they save; parallelism is
:data:`CONCURRENCY` processes instead). A Tesseract child is killed with the process that started
it (Linux ``PR_SET_PDEATHSIG``), so the extraction's wall-clock limit also ends it.

Resolution: a scanned PDF page is rendered (pypdfium2, greyscale) at the resolution of the scan
itself, measured from its largest image (pixels over the inches it covers), within
:data:`MIN_DPI`..:data:`MAX_DPI`; a page without images at :data:`MAX_DPI`. Measured on 200-dpi
scans of a CUAD contract (``docreview_testing.scans``): rendered at 200 dpi, CER 1.5 %; at 300 dpi
(upsampled), 4.2 %, and 30 % slower. A page image (TIFF/PNG/JPEG) is OCR'd at its own resolution,
reduced to :data:`MAX_DPI` when its header gives a higher one.

Size guard: a page is never rendered or decoded above :data:`MAX_PIXELS`. A PDF page that would be
larger at its resolution is rendered at a lower one that fits; when that is under
:data:`MIN_FIT_DPI` (a poster-size page, e.g. 116 × 116 in), the page is not read, with a note
starting ``resource limit`` (the document fails ``resource_limit`` when no page could be read). A
page image over :data:`MAX_PIXELS` is refused the same way, from its header, before decoding
(Pillow's ``MAX_IMAGE_PIXELS`` idea, with our limit; Pillow's own ``DecompressionBombError`` is
caught as the same failure).

Orientation: a page read with a mean confidence under :data:`ORIENTATION_CHECK_BELOW` is given to
Tesseract's orientation detection (``--psm 0``, Debian's ``osd`` model) and, when it says the page
is turned, read again turned upright; the better reading is kept (upright pages cost nothing more).

Specks: a lone dark pixel (dust, toner) is removed before Tesseract sees the page
(:func:`despeckle`); Tesseract reads such specks as accents and stray punctuation.

Reading order: Tesseract's ``--psm 3`` reads side-by-side layout blocks one after the other (a
signature block's ``Date:`` column after the whole signature column, a margin column of section
numbers before the text); lines of such blocks that share a row are joined left to right
(:func:`merge_rows`), as a reader and a PDF's text layer read them. Measured on the benchmark's 16
scanned CUAD pages (``benchmarks/ocr.py``, CER against the CUAD TXT): Tesseract's order 2.50 %,
rows joined 1.21 %, and with :func:`despeckle` 0.69 %. ``--psm 6`` (one uniform block, read row
by row) gave 1.35 % on those pages but 38 % on ``linn.pdf`` (a two-column brochure: its columns
interleaved), ``--psm 4`` 3.1 % and 37 %; rows joined keep ``linn.pdf`` at 1.03 %. On pages the
thresholds were not chosen on (the 31 pages of ``benchmarks/scanned_review``'s 6 contracts, against
the CUAD TXT): 2.88 %, rows joined 2.39 %, and despeckled 2.14 %.

Redactions: a solid black box of about a word's height inside a text line (a scanned redaction) is
written into the text as :data:`REDACTION_TOKEN`, replacing whatever Tesseract read in its place
(:func:`mark_redactions`), so the checks that look for redaction marks see it.

Confidence: Tesseract's word confidence (0..100 in the TSV) divided by 100. A page's
``ocr_confidence`` is the mean over its words; words under :data:`LOW_CONFIDENCE` are the page's
``uncertain_words``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.documents import TESSERACT_MISSING

if TYPE_CHECKING:  # Pillow is imported only when a page is OCR'd
    from PIL import Image

#: A word read with a confidence under this (0..1) is *uncertain* (``PageText.uncertain_words``).
#: Measured (benchmarks/ocr.py: 16 scanned pages of 5 CUAD contracts, despeckled, rows joined; 6,914
#: words, 239 of them not matching the text layer): under 0.90, 5.4 % of the words are flagged,
#: holding 55 % of the wrong ones (36 % of flagged words are wrong); under 0.80, 3.0 % flagged, 35 %
#: of the wrong; under 0.95, 15 % flagged, 73 % of the wrong but only 16 % of flagged words wrong.
#: 0.90 has the best F1 (0.43). Before despeckling (6,852 words, 476 wrong): 11.5 %, 64 %, 38 %.
LOW_CONFIDENCE = 0.90
#: Most pixels of one page image OCR'd (40 megapixels: a Letter page at 600 dpi is 33.7).
MAX_PIXELS = 40_000_000
#: Scanned PDF pages are rendered at their scan's resolution within these bounds (dots per inch).
MIN_DPI = 200
MAX_DPI = 300
#: A PDF page that fits :data:`MAX_PIXELS` only below this resolution is not read (dpi).
MIN_FIT_DPI = 100
#: Tesseract processes at once (the machine's 2 cores; ``OMP_THREAD_LIMIT=1`` each).
CONCURRENCY = 2
#: Tesseract's options: LSTM engine, automatic page segmentation, English.
TESSERACT_ARGS = ("--oem", "1", "--psm", "3", "-l", "eng")
#: A page read with a mean confidence under this is checked for orientation (Tesseract's ``--psm 0``,
#: the ``osd`` model): upside-down and 270°-turned pages read at about 0.35 (OCRmyPDF's
#: ``cardinal.pdf``), upright ones at 0.85-0.95; when OSD says to turn the page, it is read again
#: turned and the reading with the higher confidence is kept.
ORIENTATION_CHECK_BELOW = 0.6
_ROTATE = re.compile(r"^Rotate:\s*(\d+)", re.M)

_PR_SET_PDEATHSIG = 1


@dataclass
class OcrResult:
    """One page's OCR: ``text`` (words joined by spaces, lines by ``\\n``, paragraphs and blocks by
    a blank line; lines of side-by-side blocks joined into rows: :func:`merge_rows`), ``confidence``
    (mean word confidence 0..1; None without words) and ``uncertain`` (``[(word, confidence)]`` under
    :data:`LOW_CONFIDENCE`); ``words`` is every ``(word, confidence)`` in reading order."""

    text: str
    confidence: float | None
    uncertain: list[tuple[str, float]] = field(default_factory=list)
    words: list[tuple[str, float]] = field(default_factory=list)


def tesseract_available() -> bool:
    """True when the ``tesseract`` program is on ``PATH`` (a run hides it by leaving it off ``PATH``)."""
    return shutil.which("tesseract") is not None


#: One word of Tesseract's TSV: text, confidence (0..1) and box (left, top, width, height; pixels).
Word = tuple[str, float, int, int, int, int]


#: One line of Tesseract's TSV: ``(block_num, par_num, line_num)`` and its words in reading order.
Line = tuple[tuple[int, int, int], list[Word]]

#: Two lines of different layout blocks are on the same row when their boxes overlap vertically by at
#: least this share of the smaller box's height.
ROW_OVERLAP = 0.5
#: ... and their blocks stand apart by at least this many line heights (the smaller line box's height)
#: and this share of the narrower block's width, so the gutter between two columns of running text
#: (``linn.pdf``: about 1.4 line heights, 6 % of a column's width) is not bridged. Measured on the
#: benchmark's CUAD scans and ``linn.pdf``: the same figures for 1-4 line heights and shares of
#: 0.15-1.0; at 0.10 ``linn.pdf``'s columns are interleaved (CER 1.0 % → 22 %). 1.0: only a block
#: narrower than the white space beside it (a ``Date:`` field, a section number) joins a row.
ROW_GAP_HEIGHTS = 2.0
ROW_GAP_WIDTH_SHARE = 1.0


def _tsv_lines(tsv: str) -> list[Line]:
    """Tesseract's TSV (columns ``level page_num block_num par_num line_num word_num left top width
    height conf text``; word rows are level 5, confidence 0..100, -1 on other rows) as its lines in
    Tesseract's reading order (block by block), each with its ``(block, par, line)`` numbers and
    words ``(text, confidence 0..1, left, top, width, height)`` (pixels); empty words are dropped."""
    lines: list[Line] = []
    last: tuple[int, int, int] | None = None
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        word = cols[11].strip()
        if not word:
            continue
        try:
            conf = max(0.0, min(1.0, float(cols[10]) / 100))
            box = (int(cols[6]), int(cols[7]), int(cols[8]), int(cols[9]))
            key = (int(cols[2]), int(cols[3]), int(cols[4]))
        except ValueError:
            continue
        if key != last:
            lines.append((key, []))
            last = key
        lines[-1][1].append((word, round(conf, 3), *box))
    return lines


def _line_box(words: list[Word]) -> tuple[int, int, int, int]:
    """The box around ``words``: ``(left, top, right, bottom)`` in pixels."""
    return (
        min(w[2] for w in words),
        min(w[3] for w in words),
        max(w[2] + w[4] for w in words),
        max(w[3] + w[5] for w in words),
    )


def merge_rows(lines: list[Line]) -> list[Line]:
    """``lines`` (Tesseract's, block by block: :func:`_tsv_lines`) with the lines of different
    layout blocks that stand side by side on one row joined into one line, read left to right, as a
    reader reads a form or a signature block (``By: /s/ J. Smith        Date: 4/8/2020``) and as a
    PDF's text layer holds it; Tesseract's ``--psm 3`` reads such a page column by column (every
    ``Date:`` after the whole signature column), and puts section numbers set in a margin column
    (``10.``, ``11.``) before the page's text.

    Two lines join when they are in different blocks, overlap vertically by :data:`ROW_OVERLAP` of the
    smaller one's height, and their blocks are apart horizontally by at least :data:`ROW_GAP_HEIGHTS`
    line heights and :data:`ROW_GAP_WIDTH_SHARE` of the narrower block's width (two columns of running
    text stay column by column; a block of one short line, such as a heading set apart, beside a
    column further away than the heading is wide, would be joined to the column's line level with
    it). A row keeps one line per block; it takes the
    place, and the ``(block, par, line)`` numbers, of its line whose block holds the most characters
    (the body text, not a margin number or a ``Date:`` beside it). Lines that join nothing are
    returned as they were, in their order.
    """
    if len(lines) < 2:
        return lines
    boxes = [_line_box(words) for _, words in lines]
    extent: dict[int, list[int]] = {}
    chars: dict[int, int] = {}
    for (key, words), box in zip(lines, boxes):
        left, right = extent.setdefault(key[0], [box[0], box[2]])
        extent[key[0]] = [min(left, box[0]), max(right, box[2])]
        chars[key[0]] = chars.get(key[0], 0) + sum(len(w[0]) for w in words)

    def side_by_side(i: int, j: int) -> bool:
        a, b = boxes[i], boxes[j]
        height = min(a[3] - a[1], b[3] - b[1])
        if min(a[3], b[3]) - max(a[1], b[1]) < ROW_OVERLAP * height:
            return False
        ea, eb = extent[lines[i][0][0]], extent[lines[j][0][0]]
        gap = max(eb[0] - ea[1], ea[0] - eb[1])
        return gap >= max(ROW_GAP_HEIGHTS * height, ROW_GAP_WIDTH_SHARE * min(ea[1] - ea[0], eb[1] - eb[0]))

    taken = [False] * len(lines)
    rows: dict[int, list[int]] = {}  # the index of the line whose place a row takes -> its lines
    for i in range(len(lines)):
        if taken[i]:
            continue
        taken[i] = True
        members = [i]
        for j in range(i + 1, len(lines)):
            if taken[j] or any(lines[m][0][0] == lines[j][0][0] for m in members):
                continue
            if side_by_side(i, j) and all(boxes[j][0] > boxes[m][2] or boxes[j][2] < boxes[m][0] for m in members):
                members.append(j)
                taken[j] = True
        host = min(members, key=lambda m: (-chars[lines[m][0][0]], m))
        rows[host] = sorted(members, key=lambda m: boxes[m][0])
    return [
        (lines[i][0], [w for m in rows[i] for w in lines[m][1]]) if len(rows[i]) > 1 else lines[i]
        for i in range(len(lines))
        if i in rows
    ]


def _tsv_paragraphs(tsv: str) -> list[list[list[Word]]]:
    """Tesseract's TSV as paragraphs of lines of words, in reading order: Tesseract's lines
    (:func:`_tsv_lines`) with side-by-side blocks joined row by row (:func:`merge_rows`); a new
    block or paragraph starts a new paragraph."""
    paragraphs: list[list[list[Word]]] = []
    last_par: tuple[int, int] | None = None
    for key, words in merge_rows(_tsv_lines(tsv)):
        if key[:2] != last_par:
            paragraphs.append([])
            last_par = key[:2]
        paragraphs[-1].append(words)
    return paragraphs


def _assemble(paragraphs: list[list[list[Word]]]) -> OcrResult:
    """Words joined by spaces, lines by a line break, paragraphs by a blank line; confidences of every
    word except the :data:`REDACTION_TOKEN` s."""
    text = "\n\n".join("\n".join(" ".join(w[0] for w in line) for line in par) for par in paragraphs)
    words = [(w[0], w[1]) for par in paragraphs for line in par for w in line if w[0] != REDACTION_TOKEN]
    confidence = round(sum(c for _, c in words) / len(words), 3) if words else None
    return OcrResult(text, confidence, [(w, c) for w, c in words if c < LOW_CONFIDENCE], words)


def parse_tsv(tsv: str) -> OcrResult:
    """Text, mean confidence and uncertain words from Tesseract's TSV output (see :func:`_tsv_paragraphs`)."""
    return _assemble(_tsv_paragraphs(tsv))


#: Put in the text where a scan shows a black-box redaction (as :mod:`tasks.check.redactions` reads it).
REDACTION_TOKEN = "[REDACTED]"
#: Greyscale values under this count as ink (0 black .. 255 white).
_DARK = 100


def mark_redactions(paragraphs: list[list[list[Word]]], pixels: Any) -> int:
    """Replace (in place) each word whose box in the page image ``pixels`` (a 2-D uint8 numpy array,
    greyscale) is a black box by :data:`REDACTION_TOKEN` (adjacent ones merged): Tesseract reads a
    scanned redaction bar as a word of noise (``"ER"``, ``"|"``), whose box then holds a run of
    columns solid dark (at least 90 % ink over the middle 80 % of its height) at least 1.5 box heights
    wide and covering half the box, with the rows just above and below it light (so a photograph or a
    thick rule is not one). Returns how many tokens were put in.

    A bar Tesseract reads as nothing (no word box) is not seen, nor is a redacted whole block.
    """
    import numpy as np

    found = 0
    rows = pixels.shape[0]
    for par in paragraphs:
        for li, line in enumerate(par):
            out: list[Word] = []
            changed = False
            for word in line:
                if _is_bar(word, pixels, rows, np):
                    changed = True
                    if out and out[-1][0] == REDACTION_TOKEN:
                        prev = out[-1]
                        right = max(prev[2] + prev[4], word[2] + word[4])
                        out[-1] = (REDACTION_TOKEN, 1.0, prev[2], prev[3], right - prev[2], prev[5])
                        continue
                    out.append((REDACTION_TOKEN, 1.0, *word[2:]))
                    found += 1
                else:
                    out.append(word)
            if changed:
                par[li] = out
    return found


def _is_bar(word: Word, pixels: Any, rows: int, np: Any) -> bool:
    """True when ``word``'s box holds a black bar (see :func:`mark_redactions`)."""
    left, top, width, height = word[2:]
    if height < 6 or width < 1.5 * height or top + height > rows:
        return False
    pad = max(1, height // 10)
    solid = (pixels[top + pad : top + height - pad, left : left + width] < _DARK).mean(axis=0) >= 0.9
    edges = np.flatnonzero(np.diff(np.concatenate(([0], solid.astype(np.int8), [0]))))
    for start, end in zip(edges[0::2], edges[1::2]):
        if end - start < max(1.5 * height, 0.5 * width):
            continue
        a, b = left + int(start), left + int(end)
        above = pixels[max(0, top - height // 2) : max(0, top - 2), a:b]
        below = pixels[min(rows, top + height + 2) : min(rows, top + height + height // 2), a:b]
        if (above.size and (above < _DARK).mean() > 0.5) or (below.size and (below < _DARK).mean() > 0.5):
            continue
        return True
    return False


#: A pixel darker than this (0 black .. 255 white) whose 8 neighbours are all at least
#: :data:`_SPECK_LIGHT` is a speck (:func:`despeckle`).
_SPECK_DARK = 128
_SPECK_LIGHT = 160
#: :func:`despeckle` works on this many rows at a time (bounds its extra memory on a 40-megapixel page).
_SPECK_BAND = 512


def despeckle(image: Image.Image) -> Image.Image:
    """``image`` (greyscale ``L``) without its specks: each pixel darker than :data:`_SPECK_DARK`
    whose 8 neighbours are all at least :data:`_SPECK_LIGHT` takes the lightest of them (the paper).
    Returns a new image of the same size.

    A lone dark pixel is dust or toner, never print: at 200 dpi the smallest mark of 6-point text (a
    period, the dot of an ``i``) is 2-3 pixels across. Tesseract reads such specks as accents and
    stray punctuation (``thé``, ``by.the``, ``‘``): on the benchmark's speckled 200-dpi CUAD scans
    (``benchmarks/ocr.py``; the speckle of ``docreview_testing.scans`` is single pixels) the
    character error rate fell from 1.21 % to 0.69 % (``linn.pdf`` unchanged at 1.03 %), for about
    0.02 s of CPU per Letter page. Specks of two or more pixels are left as they are.
    """
    import numpy as np
    from PIL import Image

    pixels = np.array(image, dtype=np.uint8)  # a writable copy
    rows, cols = pixels.shape
    for top in range(0, rows, _SPECK_BAND):
        bottom = min(rows, top + _SPECK_BAND)
        window = np.pad(
            pixels[max(0, top - 1) : min(rows, bottom + 1)],
            ((1 if top == 0 else 0, 1 if bottom == rows else 0), (1, 1)),
            constant_values=255,
        )  # rows top-1 .. bottom, columns -1 .. cols
        height = bottom - top
        darkest = np.full((height, cols), 255, dtype=np.uint8)
        lightest = np.zeros((height, cols), dtype=np.uint8)
        for dy in (0, 1, 2):
            for dx in (0, 1, 2):
                if dy != 1 or dx != 1:
                    neighbour = window[dy : dy + height, dx : dx + cols]
                    np.minimum(darkest, neighbour, out=darkest)
                    np.maximum(lightest, neighbour, out=lightest)
        band = pixels[top:bottom]
        specks = (band < _SPECK_DARK) & (darkest >= _SPECK_LIGHT)
        band[specks] = lightest[specks]  # removing a speck never makes another pixel one: safe band by band
    return Image.fromarray(pixels, mode="L")


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when its parent dies (None elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def apply() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return apply


def _tesseract_env() -> dict[str, str]:
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


@dataclass
class _Job:
    key: Any
    proc: subprocess.Popen[bytes]
    out_base: Path
    dpi: int


def _run_tesseract(args: list[str], env: dict[str, str], preexec: Callable[[], None] | None) -> str | None:
    """Run ``tesseract`` with ``args`` to the end; its stdout, or None when it fails."""
    proc = subprocess.run(
        ["tesseract", *args], capture_output=True, env=env, preexec_fn=preexec, check=False, timeout=600
    )
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def _with_redactions(bmp: Path, tsv: str, result: OcrResult) -> OcrResult:
    """``result`` with :data:`REDACTION_TOKEN` where the page image at ``bmp`` shows black boxes
    (:func:`mark_redactions`); ``result`` itself when there are none."""
    import numpy as np
    from PIL import Image

    with Image.open(bmp) as image:
        pixels = np.asarray(image.convert("L"))
    paragraphs = _tsv_paragraphs(tsv)
    return _assemble(paragraphs) if mark_redactions(paragraphs, pixels) else result


def _reoriented(
    base: Path, dpi: int, first: OcrResult, env: dict[str, str], preexec: Callable[[], None] | None
) -> OcrResult:
    """The page at ``base.bmp`` read again turned upright when Tesseract's orientation detection
    (``--psm 0``) says it is turned; the reading with the higher mean confidence (``first`` when
    detection fails or says the page is upright)."""
    from PIL import Image

    bmp = base.with_suffix(".bmp")
    osd = _run_tesseract([str(bmp), "stdout", "--psm", "0", "--dpi", str(dpi)], env, preexec)
    found = _ROTATE.search(osd or "")
    angle = int(found.group(1)) % 360 if found else 0
    if angle not in (90, 180, 270):
        return first
    turned = base.with_name(base.name + "-turned.bmp")
    try:
        with Image.open(bmp) as image:
            image.rotate(-angle, expand=True).save(turned, "BMP")  # "Rotate" is clockwise; Pillow turns anticlockwise
        tsv = _run_tesseract([str(turned), "stdout", *TESSERACT_ARGS, "--dpi", str(dpi), "tsv"], env, preexec)
    finally:
        with contextlib.suppress(FileNotFoundError):
            turned.unlink()
    second = parse_tsv(tsv) if tsv is not None else None
    if second is not None and (second.confidence or 0) > (first.confidence or 0):
        return second
    return first


def ocr_images(
    items: Iterable[tuple[Any, Image.Image | str, int]], concurrency: int = CONCURRENCY
) -> Iterator[tuple[Any, OcrResult | str]]:
    """OCR a stream of page images, up to ``concurrency`` Tesseract processes at once.

    ``items``: ``(key, image or a note, dpi)``; an image (any mode; converted to greyscale) is
    OCR'd at ``dpi``, a note (a page that could not be produced) is passed through. Yields
    ``(key, OcrResult or note)`` in the order of ``items``; an image is produced (rendered,
    decoded) only when a process slot is free, so at most ``concurrency + 1`` are held at once.
    A Tesseract failure becomes the note ``"tesseract failed: <its last stderr line>"``.
    Raises ``FileNotFoundError`` when the program is missing.
    """
    preexec = _death_signal()
    env = _tesseract_env()
    with tempfile.TemporaryDirectory(prefix="docreview-ocr-") as tmp:
        pending: list[tuple[Any, _Job | str]] = []
        running = 0
        n = 0

        def finish(job: _Job) -> OcrResult | str:
            _, err = job.proc.communicate()
            tsv_path = job.out_base.with_suffix(".tsv")
            try:
                if job.proc.returncode != 0:
                    last = err.decode("utf-8", "replace").strip().splitlines()
                    return f"tesseract failed: {(last[-1] if last else f'exit status {job.proc.returncode}')[:200]}"
                tsv = tsv_path.read_text(encoding="utf-8", errors="replace")
                result = parse_tsv(tsv)
                if result.confidence is not None and result.confidence < ORIENTATION_CHECK_BELOW:
                    result = _reoriented(job.out_base, job.dpi, result, env, preexec)
                elif result.words:
                    result = _with_redactions(job.out_base.with_suffix(".bmp"), tsv, result)
                return result
            finally:
                with contextlib.suppress(FileNotFoundError):
                    tsv_path.unlink()
                with contextlib.suppress(FileNotFoundError):
                    job.out_base.with_suffix(".bmp").unlink()

        def drain(limit: int) -> Iterator[tuple[Any, OcrResult | str]]:
            nonlocal running
            while pending and (running > limit or isinstance(pending[0][1], str)):
                key, job = pending.pop(0)
                if isinstance(job, str):
                    yield key, job
                    continue
                running -= 1
                yield key, finish(job)

        try:
            for key, image, dpi in items:
                if isinstance(image, str):
                    pending.append((key, image))
                    continue
                n += 1
                base = Path(tmp) / f"page{n}"
                grey = despeckle(image if image.mode == "L" else image.convert("L"))
                grey.save(base.with_suffix(".bmp"), "BMP")
                del grey
                proc = subprocess.Popen(
                    ["tesseract", str(base.with_suffix(".bmp")), str(base), *TESSERACT_ARGS, "--dpi", str(dpi), "tsv"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=env,
                    preexec_fn=preexec,  # no threads in this process: safe; only asks for the kill-with-parent signal
                )
                pending.append((key, _Job(key, proc, base, dpi)))
                running += 1
                yield from drain(concurrency - 1)
            yield from drain(-1)
        finally:
            for _, job in pending:
                if isinstance(job, _Job) and job.proc.poll() is None:
                    job.proc.kill()
                    job.proc.wait()


def ocr_image(image: Image.Image, dpi: int = MAX_DPI) -> OcrResult:
    """OCR one page image (greyscale ``L``, or converted) at ``dpi``: text, mean confidence (0..1),
    uncertain words. Raises ``RuntimeError`` when Tesseract fails, ``FileNotFoundError`` when it is
    not installed."""
    for _, result in ocr_images([(0, image, dpi)], concurrency=1):
        if isinstance(result, str):
            raise RuntimeError(result)
        return result
    raise RuntimeError("no OCR result")  # pragma: no cover - one item in, one out


def page_dpi(page: Any) -> float:
    """The resolution to render a PDF page at for OCR (dpi): its largest image's own resolution
    (``sqrt(pixels / square inches covered)``, so a rotated image measures right) within
    :data:`MIN_DPI`..:data:`MAX_DPI`; :data:`MAX_DPI` without images."""
    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    best_area, dpi = 0.0, float(MAX_DPI)
    try:
        for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
            width_px, height_px = obj.get_px_size()
            left, bottom, right, top = obj.get_bounds()
            area = (right - left) * (top - bottom) / (72 * 72)
            if area > best_area and width_px and height_px:
                best_area, dpi = area, (width_px * height_px / area) ** 0.5
    except Exception:
        return float(MAX_DPI)
    return max(float(MIN_DPI), min(float(MAX_DPI), dpi))


def fit_dpi(width_in: float, height_in: float, dpi: float) -> float | None:
    """``dpi``, lowered so a page of ``width_in`` × ``height_in`` inches stays within
    :data:`MAX_PIXELS`; None when that would be under :data:`MIN_FIT_DPI`."""
    area = max(width_in * height_in, 1e-6)
    if area * dpi * dpi <= MAX_PIXELS:
        return dpi
    fitted = (MAX_PIXELS / area) ** 0.5
    return fitted if fitted >= MIN_FIT_DPI else None


def rendered_pages(
    path: str, indices: list[int], password: str | None = None, progress: bool = False
) -> Iterator[tuple[int, Any, int]]:
    """``(index, greyscale image or a not-read note, dpi)`` for each 0-based page of ``indices`` of the
    PDF at ``path``, rendered one at a time as the caller iterates (see :func:`ocr_pdf_pages`)."""
    import json
    import sys

    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path, password=password)
    try:
        for i in indices:
            if progress:  # a crash inside PDFium's renderer is then blamed on this page (tasks.ingest.extract)
                sys.stdout.write(json.dumps({"pdfium_page": i}) + "\n")
                sys.stdout.flush()
            page = pdf[i]
            try:
                width, height = page.get_size()
                dpi = fit_dpi(width / 72, height / 72, page_dpi(page))
                if dpi is None:
                    need = width / 72 * height / 72 * MIN_FIT_DPI**2 / 1e6
                    yield (
                        i,
                        f"resource limit: the page is {width / 72:.0f} × {height / 72:.0f} in; OCR at "
                        f"{MIN_FIT_DPI} dpi would need {need:.0f} megapixels (limit {MAX_PIXELS / 1e6:.0f})",
                        0,
                    )
                    continue
                bitmap = page.render(scale=dpi / 72, grayscale=True)
                image = bitmap.to_pil().convert("L")
                bitmap.close()
            except MemoryError:
                raise
            except Exception as exc:
                yield i, f"the page could not be rendered for OCR: {type(exc).__name__}: {str(exc)[:200]}", 0
                continue
            finally:
                page.close()
            yield i, image, round(dpi)
    finally:
        pdf.close()


def ocr_pdf_pages(
    path: str, indices: list[int], password: str | None = None, progress: bool = False
) -> dict[int, OcrResult | str]:
    """OCR pages ``indices`` (0-based) of the PDF at ``path``: each rendered with pypdfium2 in
    greyscale at its scan's resolution (:func:`page_dpi`, capped by :func:`fit_dpi`) and read by
    Tesseract, :data:`CONCURRENCY` pages at once.

    Returns ``{index: OcrResult}``, or for a page that could not be OCR'd a note (``str``): one
    starting ``resource limit`` for a page too large to render, else the reason. ``password``: as
    for ``pypdfium2.PdfDocument`` (``""`` for a permission-only encrypted file). ``progress``
    writes ``{"pdfium_page": i}`` lines before rendering, as the extraction worker does. Raises
    what ``pypdfium2.PdfDocument`` raises on a file it cannot open, ``FileNotFoundError`` without
    the ``tesseract`` program.
    """
    if not indices:
        return {}
    return dict(ocr_images(rendered_pages(path, indices, password, progress)))


def page_entry(number: int, result: OcrResult | str) -> dict:
    """The extraction worker's page dict of an OCR'd page (``number`` 1-based) before cleaning:
    ``{"number", "raw", "ocr_confidence", "uncertain_words", "not_read"}`` (see
    :func:`tasks.ingest.extract_worker.finish_pages`)."""
    if isinstance(result, str):
        return {"number": number, "raw": "", "ocr_confidence": None, "uncertain_words": [], "not_read": result}
    return {
        "number": number,
        "raw": result.text,
        "ocr_confidence": result.confidence,
        "uncertain_words": [[w, c] for w, c in result.uncertain],
        "not_read": None,
    }


def _frames(image: Any, max_pages: int) -> Iterator[tuple[int, Any, int]]:
    """``(index, greyscale frame or a not-read note, dpi)`` for every frame of an opened Pillow image."""
    from PIL import ImageOps

    count = getattr(image, "n_frames", 1)
    for i in range(count):
        try:
            image.seek(i)
            width, height = image.size
            if width * height > MAX_PIXELS:
                yield (
                    i,
                    f"resource limit: the page image is {width} × {height} pixels "
                    f"({width * height / 1e6:.0f} megapixels; limit {MAX_PIXELS / 1e6:.0f})",
                    0,
                )
                continue
            info_dpi = image.info.get("dpi")
            dpi = float(info_dpi[0]) if info_dpi and float(info_dpi[0]) >= 50 else float(MAX_DPI)
            frame = image.copy()
            frame.load()
            frame = ImageOps.exif_transpose(frame) or frame
            if frame.mode in ("RGBA", "LA", "PA") or (frame.mode == "P" and "transparency" in frame.info):
                from PIL import Image as PILImage

                rgba = frame.convert("RGBA")
                white = PILImage.new("RGBA", rgba.size, (255, 255, 255, 255))
                frame = PILImage.alpha_composite(white, rgba)
            frame = frame.convert("L")
            if dpi > MAX_DPI:
                scale = MAX_DPI / dpi
                frame = frame.resize((max(1, round(width * scale)), max(1, round(height * scale))))
                dpi = MAX_DPI
        except MemoryError:
            raise
        except Exception as exc:
            yield i, f"the page image could not be decoded: {type(exc).__name__}: {str(exc)[:200]}", 0
            continue
        yield i, frame, round(max(dpi, 70))


def read_image(path: str, max_pages: int, finish: Callable[[list[dict]], list[dict]]) -> dict:
    """Read a TIFF (every frame a page), PNG or JPEG page image and OCR it; never raises.

    Returns the extraction worker's result shape (:func:`tasks.ingest.extract_worker.extract`):
    ``{"ok": True, "encrypted": False, "pages": [{"number", "text", "quality", "running",
    "locator", "uncertain_words"}], "engines": {"tesseract": n}}`` with ``quality.extractor ==
    "tesseract"``, ``quality.ocr`` true and ``ocr_confidence`` (0..1), or ``{"ok": False, "kind",
    "reason"}``: ``corrupt`` (not decodable: 0 bytes, truncated), ``too_many_pages`` (more than
    ``max_pages`` frames), ``resource_limit`` (every page over :data:`MAX_PIXELS`), ``unreadable``
    (no ``tesseract`` program). Page texts are cleaned and their running lines removed by ``finish``,
    as a PDF's are (the worker passes :func:`tasks.ingest.extract_worker.finish_pages`).
    """
    import warnings

    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    bomb_limit = PILImage.MAX_IMAGE_PIXELS
    try:
        # Pillow's own guard (MAX_IMAGE_PIXELS) checks the first frame at open; ours checks every frame
        # against MAX_PIXELS before decoding it (_frames), with the size in the reason.
        PILImage.MAX_IMAGE_PIXELS = None
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            image = PILImage.open(path)
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:  # pragma: no cover - guard off
        return {"ok": False, "kind": "resource_limit", "reason": f"resource limit: {exc}"}
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        what = "an empty file (0 bytes)" if size == 0 else f"{type(exc).__name__}: {str(exc)[:200]}"
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt image: {what}"}
    finally:
        PILImage.MAX_IMAGE_PIXELS = bomb_limit
    with image:
        count = getattr(image, "n_frames", 1)
        if count > max_pages:
            return {"ok": False, "kind": "too_many_pages", "reason": f"{count} pages exceeds the limit of {max_pages}"}
        if not tesseract_available():
            return {
                "ok": False,
                "kind": "unreadable",
                "reason": f"{count} page image(s), none read: {TESSERACT_MISSING}",
            }
        results = dict(ocr_images(_frames(image, max_pages)))
    pages = [page_entry(i + 1, results[i]) for i in range(count)]
    notes = [p["not_read"] for p in pages if p["not_read"]]
    if len(notes) == count:
        limited = next((n for n in notes if n.startswith("resource limit")), None)
        if limited:
            return {"ok": False, "kind": "resource_limit", "reason": f"page 1: {limited}" if count == 1 else limited}
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt image: {notes[0]}"}
    for p in pages:
        p.update(clean=None, actual=None, extractor="tesseract", limit=False)
    return {
        "ok": True,
        "encrypted": False,
        "pages": finish(pages),
        "engines": {"tesseract": count - len(notes)},
        "page_errors": len(notes),
    }
