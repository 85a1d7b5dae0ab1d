"""The playbook step of a run: every reviewed document checked against the team's rules.

:func:`record_playbook_results` evaluates the run's documents as the report shows them (their
findings, fact-check verdicts, reviewer decisions and absences; :mod:`tasks.check.playbook`) and
stores one row per document and rule, so the report, the run's metrics (``playbook_deviations``,
``playbook_deviations_high``, ``playbook_unknown``), ``docreview queue`` and the Prefect
artifact read the same results.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from tasks.check.playbook import LoadedPlaybook
from tasks.store.persist import save_playbook_results, save_run_playbook, unit_of_work

#: Prefect artifact key of the deviations table (a history across runs on the Artifacts page).
DEVIATIONS_ARTIFACT_KEY = "docreview-playbook-deviations"

#: Severity order in reports and tables: high first.
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


@task(name="record-playbook-results", cache_policy=NO_CACHE)
def record_playbook_results(database_url: str, run_id: str, playbook: LoadedPlaybook) -> dict[str, int]:
    """Prefect task: record the playbook the run applies (:func:`tasks.store.persist.save_run_playbook`: the
    report evaluates it again on every read, with the decisions made since), evaluate it on every document
    the run reviewed (reused ones too) as the report reads them, and store the run's results
    (:func:`tasks.store.persist.save_playbook_results`).

    Returns counts ``{pass, deviation, unknown}`` over (document, rule) pairs."""
    from tasks.observe.report import build_report

    definition = playbook.playbook.model_dump(mode="json")
    with unit_of_work(database_url) as session:
        save_run_playbook(session, run_id, playbook.name, playbook.source, definition)
    documents = build_report(database_url, run_id, offline=False)["documents"]
    rows: list[tuple[str, str, list[dict[str, Any]]]] = []
    counts = {"pass": 0, "deviation": 0, "unknown": 0}
    for doc in documents:
        results = doc.get("playbook") or []
        if results and doc.get("sha256"):
            rows.append((doc["sha256"], doc["file_name"], results))
            for r in results:
                counts[r["status"]] += 1
    with unit_of_work(database_url) as session:
        save_playbook_results(session, run_id, playbook.name, rows)
    return counts


def deviation_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's playbook deviations (pure), high severity first: ``[{document, rule, clause,
    severity, reason, finding_ids}]``."""
    rows = [
        {
            "document": d["file_name"],
            "rule": r["rule"],
            "clause": r["clause"],
            "severity": r["severity"],
            "reason": r["reason"],
            "finding_ids": ", ".join(str(i) for i in r["finding_ids"]),
        }
        for d in report["documents"]
        for r in d.get("playbook") or []
        if r["status"] == "deviation"
    ]
    rows.sort(key=lambda r: (SEVERITY_ORDER.get(r["severity"], 3), r["document"], r["rule"]))
    return rows


def publish_deviations(report: dict[str, Any]) -> int:
    """The deviations table artifact (:data:`DEVIATIONS_ARTIFACT_KEY`, first 1,000 rows) when the
    run used a playbook; returns how many deviations the run has."""
    if not report["run"].get("playbook"):
        return 0
    rows = deviation_rows(report)
    name = report["run"]["playbook"]["name"]
    create_table_artifact(
        key=DEVIATIONS_ARTIFACT_KEY,
        table=rows[:1000]
        or [
            {"document": "-", "rule": "-", "clause": "-", "severity": "-", "reason": "no deviation", "finding_ids": ""}
        ],
        description=f"Deviations from the playbook {name!r}, high severity first",
    )
    return len(rows)
