"""Scanned contracts against their born-digital originals: does a scan get the same review?

``python -m benchmarks.scanned_review [--count 6] [--offset 300] [--max-pages 12]`` takes ``count``
CUAD contracts from position ``offset`` of the sorted shared corpus (the far end of the list: the
router and support models were fitted on contracts near its start; ``--offset`` picks others) with at
most ``max_pages`` pages, scans every page the way an office scanner does
(:mod:`docreview_testing.scans`: 200 dpi greyscale, skew within ±1.2°, speckle; an image-only PDF),
and reviews the originals and the scans with the offline ``rules`` backend in two runs.

Per contract: the clause categories found in each (``clause_type`` of every finding), their Jaccard
similarity, and on the scan the share of findings whose quote was found in the document
(``grounding`` check ``verified``) and the share sent to review by the ``ocr_confidence`` check.
Targets (issue: every form a document arrives in): mean Jaccard ≥ 0.8 and grounded share ≥ 0.9.
The wall time of each run is printed with the load average: OCR is most of the scans' run.
Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, emit


def _review(folder: Path, out: Path) -> tuple[dict[str, Any], float]:
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        review_documents(
            source=str(folder), out_dir=str(out), database_url=f"sqlite:///{out / 'r.db'}", backend="rules"
        )
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text()), time.monotonic() - start


def _pick(count: int, offset: int, max_pages: int) -> list[Path]:
    import pypdfium2 as pdfium

    chosen = []
    for path in sorted(p for p in CUAD_PDF.iterdir() if p.suffix.lower() == ".pdf")[offset:]:
        pdf = pdfium.PdfDocument(str(path))
        pages = len(pdf)
        pdf.close()
        if pages <= max_pages:
            chosen.append(path)
        if len(chosen) == count:
            break
    return chosen


def run(count: int = 6, offset: int = 300, max_pages: int = 12, seed: int = 7) -> dict[str, Any]:
    """Review ``count`` contracts and their scans; returns the benchmark's JSON line (see the module docstring)."""
    from docreview_testing.scans import scan_pages, write_scan_pdf

    work = Path(tempfile.mkdtemp(prefix="docreview-scans-"))
    try:
        born, scans = work / "born-digital", work / "scanned"
        born.mkdir()
        scans.mkdir()
        contracts = _pick(count, offset, max_pages)
        pages = 0
        for i, path in enumerate(contracts):
            name = f"c{i:02d}.pdf"
            (born / name).symlink_to(path.resolve())
            images = scan_pages(path, seed=seed + i)
            pages += len(images)
            write_scan_pdf(images, scans / name)
        load_start = os.getloadavg()
        original, original_s = _review(born, work / "out-born")
        scanned, scanned_s = _review(scans, work / "out-scan")
        load_end = os.getloadavg()
        by_name = {d["file_name"]: d for d in scanned["documents"]}
        rows = []
        for doc in original["documents"]:
            scan = by_name[doc["file_name"]]
            a = {f["clause_type"] for f in doc["findings"]}
            b = {f["clause_type"] for f in scan["findings"]}
            checks = [{c["name"]: c["verdict"] for c in f["checks"]} for f in scan["findings"]]
            grounded = sum(1 for c in checks if c.get("grounding") == "verified")
            doubted = sum(1 for c in checks if c.get("ocr_confidence") == "needs_review")
            rows.append(
                {
                    "contract": contracts[int(doc["file_name"][1:3])].name[:60],
                    "status": scan["status"],
                    "jaccard": round(len(a & b) / len(a | b), 3) if a | b else 1.0,
                    "findings": [len(doc["findings"]), len(scan["findings"])],
                    "grounded_share": round(grounded / len(checks), 3) if checks else None,
                    "ocr_doubted": doubted,
                    "only_original": sorted(a - b),
                    "only_scan": sorted(b - a),
                }
            )
        all_scan = [f for d in scanned["documents"] for f in d["findings"]]
        grounded_all = sum(
            1 for f in all_scan if any(c["name"] == "grounding" and c["verdict"] == "verified" for c in f["checks"])
        )
        return {
            "benchmark": "scanned_review",
            "contracts": len(rows),
            "pages": pages,
            "mean_jaccard": round(statistics.mean(r["jaccard"] for r in rows), 3) if rows else None,
            "grounded_share": round(grounded_all / len(all_scan), 3) if all_scan else None,
            "reviewed": sum(1 for r in rows if r["status"] == "reviewed"),
            "wall_s": {"born_digital": round(original_s, 1), "scanned": round(scanned_s, 1)},
            "scanned_pages_per_s": round(pages / scanned_s, 3) if scanned_s else None,
            "load": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in load_end]},
            "rows": rows,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--offset", type=int, default=300)
    parser.add_argument("--max-pages", type=int, default=12)
    args = parser.parse_args()
    result = run(args.count, args.offset, args.max_pages)
    for row in result["rows"]:
        print(
            f"{row['contract'][:50]:50}  {row['status']:9} jaccard {row['jaccard']:.2f}  findings {row['findings']}"
            f"  grounded {row['grounded_share']}  ocr-doubted {row['ocr_doubted']}  -{row['only_original']} "
            f"+{row['only_scan']}"
        )
    emit(result)


if __name__ == "__main__":
    main()
