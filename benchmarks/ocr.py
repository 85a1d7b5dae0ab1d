"""OCR speed and accuracy: scanned CUAD contracts and OCRmyPDF's ``linn.pdf`` through :mod:`tasks.ingest.ocr`.

``python -m benchmarks.ocr [--docs 5] [--max-pages 4] [--seed 7] [--concurrency 1 2]`` prints a table
and one JSON line (``benchmark: ocr``, appended to ``benchmarks/results/results.jsonl`` like the
other benchmarks):

- the corpus: ``--docs`` CUAD contracts of 2 to ``--max-pages`` pages, spread evenly over the
  name-sorted ones (the same files on every machine), each scanned by
  :func:`docreview_testing.scans.scan_pages` (200 dpi greyscale, skew up to ±1.2°, speckle; seed
  ``--seed``) into an image-only PDF; and ``ocrmypdf-resources/linn.pdf`` (a 300-dpi brochure scan);
- speed: :func:`tasks.ingest.ocr.ocr_pdf_pages` on every scanned page with each ``--concurrency``
  (Tesseract processes at once): wall pages/s, and **pages per second per core** = pages / CPU
  seconds (this process's rendering plus the Tesseract children's, ``getrusage``), which does not
  depend on how busy the shared machine is. Target: at least 0.5;
- accuracy: character error rate, CER = Levenshtein distance / reference length (rapidfuzz), on
  whitespace-normalised text (runs of whitespace to one space), per contract against the CUAD TXT
  of the same contract, per page against the PDF's text layer (PDFium; more exact: the TXT has its
  own line breaks and form-feed artefacts), and ``linn.pdf`` against ``linn.txt``. Target: at most 2 %.
  Drawn lines typed as characters (3+ underscores, hyphens or equals signs: blanks to fill in,
  signature lines, EDGAR heading underlines) are removed from both sides first: OCR sees a line,
  not text (``cer_vs_cuad_txt_with_rules`` keeps them). Reading order counts: the text layer reads
  a form's columns (a signature block's ``Date:`` column) line by line, and so does the OCR text
  since :func:`tasks.ingest.ocr.merge_rows` joins side-by-side blocks into rows;
- confidence: OCR words aligned with the text-layer words (a Levenshtein alignment over word
  lists); for thresholds 0.5..0.95, the share of wrong words below it (recall) and the share of
  words below it that are wrong (precision): the basis of :data:`tasks.ingest.ocr.LOW_CONFIDENCE`.

Every line carries the machine's load average at the start and end (the machine is shared).
Nothing here is a timed test.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, SHARED_DATA, emit

LINN = SHARED_DATA / "pdf-robustness" / "ocrmypdf-resources" / "linn.pdf"
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


#: A run of 3 or more underscores, hyphens or equals signs: a drawn line in the text layer (a blank to
#: fill in, a signature line, an EDGAR heading underline), which OCR reads as a line, not as text.
_RULE = re.compile(r"[_\-=]{3,}")


def norm(text: str, rules: bool = True) -> str:
    """Whitespace runs to one space, ends stripped (the CER's normal form); without ``rules``, drawn
    lines (:data:`_RULE`) are removed first."""
    if not rules:
        text = _RULE.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


def cer(hyp: str, ref: str, rules: bool = True) -> float:
    """Character error rate of ``hyp`` against ``ref`` (both normalised by :func:`norm`)."""
    from rapidfuzz.distance import Levenshtein

    h, r = norm(hyp, rules), norm(ref, rules)
    return Levenshtein.distance(h, r) / max(1, len(r))


def page_count(path: Path) -> int:
    """Pages of a PDF (PDFium)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def text_layer(path: Path) -> list[str]:
    """PDFium's text of every page of ``path``."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for i in range(len(pdf)):
            textpage = pdf[i].get_textpage()
            out.append(textpage.get_text_range())
            textpage.close()
        return out
    finally:
        pdf.close()


def pick_contracts(docs: int, max_pages: int) -> list[Path]:
    """``docs`` CUAD contracts of 2..``max_pages`` pages (with a TXT), spread over the name-sorted ones."""
    candidates = []
    for path in sorted(p for p in CUAD_PDF.iterdir() if p.suffix.lower() == ".pdf"):
        txt = CUAD_PDF.parent / "txt" / f"{path.stem}.txt"
        if txt.is_file() and 2 <= page_count(path) <= max_pages and len(norm("".join(text_layer(path)))) > 2000:
            candidates.append(path)
    if docs >= len(candidates):
        return candidates
    step = len(candidates) / docs
    return [candidates[int(k * step)] for k in range(docs)]


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def ocr_timed(path: Path, concurrency: int) -> tuple[dict[int, Any], float, float]:
    """``({page index: OcrResult or note}, wall s, CPU s)`` of OCR-ing every page of ``path``."""
    from tasks.ingest import ocr

    before_cpu, started = _cpu(), time.perf_counter()
    pages = ocr.rendered_pages(str(path), list(range(page_count(path))))
    results = dict(ocr.ocr_images(pages, concurrency))
    return results, time.perf_counter() - started, _cpu() - before_cpu


def word_errors(results: list[tuple[list[tuple[str, float]], str]]) -> list[tuple[float, bool]]:
    """``(confidence, wrong)`` per OCR word, aligned to the reference words by Levenshtein opcodes."""
    from rapidfuzz.distance import Levenshtein

    out: list[tuple[float, bool]] = []
    for words, ref in results:
        hyp = [w for w, _ in words]
        ref_words = ref.split()
        for op in Levenshtein.opcodes(hyp, ref_words):
            for k in range(op.src_start, op.src_end):
                out.append((words[k][1], op.tag != "equal"))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when the tesseract program or the shared data is missing."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ocr", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5)
    parser.add_argument("--max-pages", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)

    from docreview_testing.scans import scan_pages, write_scan_pdf
    from tasks.ingest.ocr import LOW_CONFIDENCE, OcrResult, tesseract_available

    if not tesseract_available() or not CUAD_PDF.is_dir():
        emit({"benchmark": "ocr", "skipped": "tesseract not installed or shared CUAD data missing"})
        return 1
    load_start = _load()
    contracts = pick_contracts(args.docs, args.max_pages)
    rows: list[dict[str, Any]] = []
    speed: dict[int, dict[str, float]] = {c: {"pages": 0, "wall_s": 0.0, "cpu_s": 0.0} for c in args.concurrency}
    aligned: list[tuple[list[tuple[str, float]], str]] = []
    with tempfile.TemporaryDirectory(prefix="docreview-ocr-bench-") as tmp:
        for n, src in enumerate(contracts):
            scan = write_scan_pdf(scan_pages(src, seed=args.seed + n), Path(tmp) / f"scan{n}.pdf")
            layer = text_layer(src)
            results: dict[int, Any] = {}
            for c in args.concurrency:
                results, wall, cpu = ocr_timed(scan, c)
                speed[c]["pages"] += len(layer)
                speed[c]["wall_s"] += wall
                speed[c]["cpu_s"] += cpu
            texts = [r.text if isinstance(r, OcrResult) else "" for _, r in sorted(results.items())]
            ref_txt = (CUAD_PDF.parent / "txt" / f"{src.stem}.txt").read_text(encoding="utf-8", errors="replace")
            page_cers = [cer(t, ref, rules=False) for t, ref in zip(texts, layer)]
            for (_, r), ref in zip(sorted(results.items()), layer):
                if isinstance(r, OcrResult):
                    aligned.append(([(w, c) for w, c in r.words if norm(w, False)], norm(ref, False)))
            rows.append(
                {
                    "document": src.name[:60],
                    "pages": len(layer),
                    "cer_vs_txt": round(cer("\n".join(texts), ref_txt, rules=False), 4),
                    "cer_vs_text_layer": round(cer("\n".join(texts), "\n".join(layer), rules=False), 4),
                    "cer_vs_txt_with_rules": round(cer("\n".join(texts), ref_txt), 4),
                    "worst_page_cer": round(max(page_cers), 4),
                    "confidence": round(
                        sum(r.confidence or 0 for r in results.values() if isinstance(r, OcrResult)) / len(layer), 3
                    ),
                }
            )
    linn_results, linn_wall, _ = ocr_timed(LINN, 1)
    linn_text = "\n".join(r.text for r in linn_results.values() if isinstance(r, OcrResult))
    linn_cer = cer(linn_text, LINN.with_suffix(".txt").read_text(encoding="utf-8"))

    words = word_errors(aligned)
    wrong_total = sum(1 for _, w in words if w)
    calibration = []
    for t in THRESHOLDS:
        low = [w for c, w in words if c < t]
        calibration.append(
            {
                "threshold": t,
                "flagged_share": round(len(low) / max(1, len(words)), 4),
                "recall_of_wrong": round(sum(low) / max(1, wrong_total), 4),
                "precision": round(sum(low) / max(1, len(low)), 4),
            }
        )
    pages_total = sum(r["pages"] for r in rows)
    mean_cer_txt = sum(r["cer_vs_txt"] * r["pages"] for r in rows) / max(1, pages_total)
    mean_cer_layer = sum(r["cer_vs_text_layer"] * r["pages"] for r in rows) / max(1, pages_total)
    mean_cer_rules = sum(r["cer_vs_txt_with_rules"] * r["pages"] for r in rows) / max(1, pages_total)
    per_core = {c: round(s["pages"] / s["cpu_s"], 3) for c, s in speed.items() if s["cpu_s"]}
    wall = {c: round(s["pages"] / s["wall_s"], 3) for c, s in speed.items() if s["wall_s"]}

    print(f"{'document':62} {'pages':>5} {'CER/TXT':>8} {'CER/layer':>9} {'worst pg':>8} {'conf':>5}", file=sys.stderr)
    for r in rows:
        print(
            f"{r['document']:62} {r['pages']:>5} {r['cer_vs_txt']:>8.2%} {r['cer_vs_text_layer']:>9.2%} "
            f"{r['worst_page_cer']:>8.2%} {r['confidence']:>5.2f}",
            file=sys.stderr,
        )
    print(f"{'linn.pdf vs linn.txt':62} {1:>5} {linn_cer:>8.2%}", file=sys.stderr)
    for c in args.concurrency:
        print(f"concurrency {c}: {wall[c]:.2f} pages/s wall, {per_core[c]:.2f} pages/s per core (CPU)", file=sys.stderr)
    print(f"{'threshold':>9} {'flagged':>8} {'recall':>7} {'precision':>9}", file=sys.stderr)
    for row in calibration:
        print(
            f"{row['threshold']:>9} {row['flagged_share']:>8.2%} {row['recall_of_wrong']:>7.2%} {row['precision']:>9.2%}",
            file=sys.stderr,
        )
    emit(
        {
            "benchmark": "ocr",
            "contracts": len(rows),
            "pages": pages_total,
            "cer_vs_cuad_txt": round(mean_cer_txt, 4),
            "cer_vs_text_layer": round(mean_cer_layer, 4),
            "cer_vs_cuad_txt_with_rules": round(mean_cer_rules, 4),
            "cer_linn": round(linn_cer, 4),
            "linn_s": round(linn_wall, 2),
            "pages_per_s_per_core": per_core,
            "pages_per_s_wall": wall,
            "targets": {"pages_per_s_per_core": 0.5, "cer": 0.02},
            "low_confidence": LOW_CONFIDENCE,
            "words": len(words),
            "wrong_words": wrong_total,
            "calibration": calibration,
            "per_document": rows,
            "load_start": load_start,
            "load_end": _load(),
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
