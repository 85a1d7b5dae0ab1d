"""Filing evaluation harness: run the real review flow over SEC filings and score it against the
analysts' questions (:mod:`tasks.observe.filing_eval`).

Control flow only: link the filings' PDFs into a temporary folder, run
:func:`flows.review.review_documents` with a temporary SQLite database and output folder (the
profile classified per document, as a default run does), then score ``report.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from tasks.observe.filing_eval import load_filings, score_filings, score_xbrl_figures


def evaluate_filings(
    data_dir: str | Path,
    backend: str = "rules",
    out_file: str | Path | None = None,
    names: list[str] | None = None,
    limit: int | None = None,
    console: Console | None = None,
    html_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Review the filings of ``data_dir`` (``names``: only these ``doc_name``s; ``limit``: the first
    N of them in name order) with ``backend`` and score the run. ``html_dir``: a folder of EDGAR HTML
    filings reviewed in the same run and scored against their own inline XBRL facts (``xbrl``:
    :func:`tasks.observe.filing_eval.score_xbrl_figures`).

    Returns (and writes to ``out_file`` as JSON) :func:`tasks.observe.filing_eval.score_filings`'s
    figures plus ``backend``, ``model``, ``review_wall_s`` and ``wall_s`` (seconds),
    ``pages_per_s`` (pages of the reviewed filings per second of the review run, extraction
    included) and ``s_per_page``. Raises ``FileNotFoundError`` for a folder not in the filings
    layout and whatever the flow raises when the run itself breaks.
    """
    from flows.review import review_documents

    started = time.monotonic()
    filings = load_filings(data_dir)
    chosen = sorted(names or filings.documents)
    chosen = [n for n in chosen if (filings.root / "pdf" / f"{n}.pdf").is_file()][:limit]
    with tempfile.TemporaryDirectory(prefix="docreview-filings-") as tmp:
        src = Path(tmp) / "filings"
        src.mkdir()
        for name in chosen:
            (src / f"{name}.pdf").symlink_to((filings.root / "pdf" / f"{name}.pdf").resolve())
        for page in sorted(Path(html_dir).glob("*.htm*")) if html_dir else []:
            (src / page.name).symlink_to(page.resolve())
        if console:
            console.print(f"Reviewing {len(chosen)} filing(s) with the {backend} backend …")
        review_started = time.monotonic()
        result = review_documents(
            source=str(src),
            out_dir=str(Path(tmp) / "out"),
            database_url=f"sqlite:///{Path(tmp) / 'eval.db'}",
            backend=backend,
        )
        review_wall = time.monotonic() - review_started
        report = json.loads((Path(tmp) / "out" / "report.json").read_text(encoding="utf-8"))
    out = score_filings(filings, report)
    if html_dir:
        out["xbrl"] = score_xbrl_figures(report)
    out.update(
        backend=result["backend"],
        model=result["model"],
        review_wall_s=round(review_wall, 1),
        pages_per_s=round(out["pages"] / review_wall, 2) if review_wall else 0.0,
        s_per_page=round(review_wall / out["pages"], 4) if out["pages"] else 0.0,
        wall_s=round(time.monotonic() - started, 1),
    )
    if out_file is not None:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return out


def print_filing_table(result: dict[str, Any], console: Console) -> None:
    """Print the headline figures of :func:`evaluate_filings` as a table, then the run's JSON line
    (without the per-question lists)."""
    table = Table(title=f"Filing review ({result['filings']} filings, {result['backend']})", box=box.SIMPLE_HEAD)
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("filings reviewed", f"{result['reviewed']} of {result['filings']}"),
        ("recognised as filings", str(result["recognised_as_filing"])),
        ("form accuracy", f"{result['form_accuracy']:.3f}"),
        (
            "evidence-page recall",
            f"{result['evidence_page_recall']:.3f} ({result['evidence_pages_hit']}/{result['evidence_pages']})",
        ),
        (
            "key-figure accuracy",
            f"{result['key_figure_accuracy']:.3f} ({result['key_figures_found']}/{result['key_figure_questions']})",
        ),
        ("findings per page", f"{result['findings_per_page']:.3f} ({result['findings']}/{result['pages']})"),
        *(
            (
                f"evidence-page recall, {label} companies",
                f"{part['evidence_page_recall']} ({part['filings']} filings, {part['evidence_pages']} pages)",
            )
            for label, part in (
                ("tuned", result.get("by_part", {}).get("tuned")),
                ("held-out", result.get("by_part", {}).get("held_out")),
            )
            if part
        ),
        ("pages per second", f"{result['pages_per_s']:.2f} ({result['review_wall_s']:.0f} s)"),
    ]
    xbrl = result.get("xbrl")
    if xbrl:
        rows.append(
            (
                "key figures vs own XBRL facts (HTML)",
                f"{xbrl['accuracy']} ({xbrl['agree']}/{xbrl['checked']} in {xbrl['filings']} filings)",
            )
        )
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    line = {k: v for k, v in result.items() if k not in ("missed_evidence_pages", "key_figure_results", "forms")}
    console.print_json(json.dumps(line))
