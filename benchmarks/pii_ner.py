"""``python -m benchmarks.pii_ner``: recall of the optional name redaction (``DOCREVIEW_REDACT_PII_NAMES``:
spaCy's ``PERSON``/``ORG`` entities, :class:`tasks.review.pii.NameDetector`) on the party names of the
shared CUAD contracts.

Ground truth: the lawyers' ``Parties`` labels (``labels/master_clauses.csv``), the names as written in the
contract; the defined terms the answer column quotes (``"Company"``, ``"Supplier"``) are not names and are
left out, and so is a label not found verbatim in the first :data:`HEAD_CHARS` characters of the contract's
TXT (where the parties are named). A name counts as redacted when entities cover at least
:data:`COVERED` of its characters at its first place in the text. Nothing was tuned on these contracts: the
model is used as installed (the shared third of CUAD; no split was used for development).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import time
from pathlib import Path

from benchmarks._harness import CUAD_PDF, emit

#: Characters of each contract read (the preamble and the first clauses, where parties are named).
HEAD_CHARS = 20_000
#: Share of a name's characters entities must cover for it to count as redacted.
COVERED = 0.8


def party_names(row: dict[str, str]) -> list[str]:
    """The party names of one CUAD label row, without the defined terms the answer quotes."""
    try:
        listed = json.loads(row.get("Parties") or "[]")
    except ValueError:
        import ast

        listed = ast.literal_eval(row.get("Parties") or "[]")
    terms = set(re.findall(r'"([^"]+)"', row.get("Parties-Answer") or ""))
    return [str(n).strip() for n in dict.fromkeys(listed) if str(n).strip() and str(n).strip() not in terms]


def run(limit: int | None = None, model: str | None = None) -> dict:
    from tasks.review.pii import DEFAULT_NER_MODEL, NameDetector

    cuad = CUAD_PDF.parent
    detector = NameDetector(model or DEFAULT_NER_MODEL)
    rows = list(csv.DictReader((cuad / "labels" / "master_clauses.csv").open(encoding="utf-8")))
    names = found = contracts = 0
    by_kind = {"person_like": [0, 0], "organisation": [0, 0]}
    started = time.perf_counter()
    for row in rows[:limit] if limit else rows:
        txt = cuad / "txt" / (Path(row["Filename"]).stem + ".txt")
        if not txt.is_file():
            continue
        head = txt.read_text(encoding="utf-8", errors="replace")[:HEAD_CHARS]
        wanted = [(n, head.find(n)) for n in party_names(row)]
        wanted = [(n, at) for n, at in wanted if at >= 0]
        if not wanted:
            continue
        contracts += 1
        covered = bytearray(len(head))
        for start, end, _ in detector.spans(head):
            covered[start:end] = b"\x01" * (end - start)
        for name, at in wanted:
            hit = sum(covered[at : at + len(name)]) >= COVERED * len(name)
            names += 1
            found += hit
            kind = (
                "organisation"
                if re.search(r"\b(inc|llc|ltd|corp|co|company|plc|gmbh|l\.?p|s\.?a)\b\.?", name, re.I)
                else "person_like"
            )
            by_kind[kind][0] += 1
            by_kind[kind][1] += hit
    return {
        "benchmark": "pii_ner",
        "model": detector.model,
        "contracts": contracts,
        "names": names,
        "recall": round(found / names, 3) if names else None,
        "recall_by_kind": {k: (round(h / n, 3) if n else None, n) for k, (n, h) in by_kind.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N label rows only")
    args = parser.parse_args(argv)
    emit(run(args.limit))


if __name__ == "__main__":
    main()
