"""``python -m benchmarks.key_terms_table [--split test] [--write]``: the key-terms table, measured and written.

Runs ``docreview eval cuad`` (:func:`flows.eval.evaluate_cuad`, the offline ``rules`` backend) on one split of
the shared CUAD contracts and scores the key terms each report shows (parties, agreement, effective and
expiration dates, the calendar's expiration deadline, governing law, renewal term, notice period) against the
lawyers' ``*-Answer`` columns (:func:`tasks.observe.evaluate.key_term_outcome`). Prints the table in Markdown
with the commit, the split, its size and the machine's load; ``--write`` puts it between the
``<!-- key-terms-table -->`` markers of ``README.md`` and ``docs/evaluation.md`` (the figures those files show
are the ones this script wrote, at the commit it names).

``--split train`` is the development split the reader was tuned on; ``test`` is measured once per shipped
change (docs/evaluation.md, "The frozen test split").
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CUAD = ROOT.parent / "shared" / "data" / "cuad"
MARK = re.compile(r"(<!-- key-terms-table -->\n).*?(<!-- /key-terms-table -->)", re.S)

#: Row labels, in the table's order.
ROWS = {
    "parties": "parties (every party named, nothing else)",
    "agreement_date": "agreement date",
    "effective_date": "effective date",
    "expiration_date": "expiration date",
    "expiration_deadline": "expiration deadline in the calendar",
    "governing_law": "governing law",
    "renewal_term": "renewal term",
    "notice_period": "notice period to stop renewal",
}


def commit() -> str:
    """The checkout's commit (short), with ``+changes`` when the work tree differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    )
    return (head.stdout.strip() or "unknown") + ("+changes" if dirty.stdout.strip() else "")


def table(result: dict[str, Any], split: str, load: tuple[float, float, float]) -> str:
    """The Markdown table of one ``evaluate_cuad`` result's ``key_terms``, with its provenance line."""
    terms = result["key_terms"]
    used = (
        "the development split the key-term reader was tuned on"
        if split == "train"
        else "the frozen test split: measured once for this change, nothing tuned on it"
    )
    lines = [
        f"Key terms against the lawyers' answers: {result['documents']} CUAD contracts of the `{split}` split ({used}); "
        f"offline `rules` backend; commit `{commit()}`; {datetime.now(UTC):%Y-%m-%d}; "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores. "
        'Share of contracts; "right" includes showing nothing where the lawyers found nothing.',
        "",
        "| field | right | wrong | missing |",
        "|---|---|---|---|",
    ]
    for name, label in ROWS.items():
        v = terms[name]
        lines.append(f"| {label} | {v['right']:.2f} | {v['wrong']:.2f} | {v['missing']:.2f} |")
    lines.append(f"| **mean over the eight** | **{terms['mean_right']:.3f}** | | |")
    return "\n".join(lines) + "\n"


def write(text: str, paths: list[Path]) -> None:
    """Replace the text between the markers of each file; ``ValueError`` when a file has none."""
    for path in paths:
        body = path.read_text(encoding="utf-8")
        if not MARK.search(body):
            raise ValueError(f"{path}: no <!-- key-terms-table --> markers")
        path.write_text(MARK.sub(lambda m: m.group(1) + text + m.group(2), body), encoding="utf-8")


def main() -> None:
    """Measure, print, and with ``--write`` write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("test", "train", "all"))
    parser.add_argument("--data", type=Path, default=CUAD)
    parser.add_argument("--write", action="store_true", help="write README.md's and docs/evaluation.md's table")
    args = parser.parse_args()
    from cli.common import prepare_environment

    prepare_environment(False)  # the local Prefect server, as `docreview eval cuad` uses (before Prefect is imported)
    from flows.eval import evaluate_cuad
    from tasks.store.persist import dispose_engines

    load_before = os.getloadavg()
    try:
        result = evaluate_cuad(args.data, backend="rules", split=args.split)
    finally:
        dispose_engines()
    load_after = os.getloadavg()
    load = tuple(max(a, b) for a, b in zip(load_before, load_after, strict=True))
    text = table(result, args.split, load)  # type: ignore[arg-type]
    print(text)
    if args.write:
        write(text, [ROOT / "README.md", ROOT / "docs" / "evaluation.md"])


if __name__ == "__main__":
    main()
