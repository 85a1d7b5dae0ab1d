"""A document's conclusion is one unit of work: a process killed between its writes leaves the document
either wholly concluded or not concluded at all, and the next run concludes it as a clean run does.

The conclusion writes the findings (with their checks and observations), the absences, the skip-ledger
entry (``document_reviews``), the drift row and the document's outcome in the run (``run_documents``). A
child process runs the review flow on one generated contract and SIGKILLs itself right before one of
those writes reaches the database (a SQLAlchemy ``before_cursor_execute`` hook: no ``finally`` block, no
rollback, no commit runs); the database is then read as the next run would find it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from docreview_testing.samples import generate_samples
from schemas.tables import (
    AbsenceRow,
    CheckRow,
    DocumentDriftRow,
    DocumentReviewRow,
    FindingObservationRow,
    FindingRow,
    RunDocumentRow,
    RunRow,
)
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")

ROOT = Path(__file__).resolve().parents[1]

#: The child: the review flow, killed (SIGKILL, by itself) right before the first statement that
#: writes to the table named on its command line.
CHILD = r"""
import os, re, signal, sys

from sqlalchemy import event
from sqlalchemy.engine import Engine

source, out, db, table = sys.argv[1:5]
WRITE = re.compile(r'^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?' + re.escape(table) + r'"?[\s(]', re.I)


@event.listens_for(Engine, "before_cursor_execute")
def kill_before_the_write(conn, cursor, statement, parameters, context, executemany):
    if WRITE.match(statement):
        os.kill(os.getpid(), signal.SIGKILL)


from flows.review import review_documents

review_documents(source=source, out_dir=out, database_url=db, backend="rules")
sys.exit(3)  # the kill point was never reached
"""


def kill_run_before(table: str, inbox: Path, out: Path, db_url: str) -> int:
    """Run the review flow in a child process that kills itself before its first write to ``table``;
    returns the child's exit status (``-SIGKILL`` when it was killed there)."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(inbox), str(out), db_url, table],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-3000:])
    return done.returncode


def conclusion_rows(db_url: str, run_id: str | None = None) -> dict[str, set]:
    """What the conclusions stored, per table (for ``run_id`` only where the table records the run):
    finding keys, check keys, observations, absences, skip-ledger entries, drift rows and outcomes."""
    with Session(get_engine(db_url)) as s:

        def of_run(model):
            query = select(model)
            return query.where(model.run_id == run_id) if run_id is not None else query

        rows = {
            "findings": {r.finding_key for r in s.exec(of_run(FindingRow)).all()},
            "checks": {(r.finding_key, r.name, r.verdict) for r in s.exec(select(CheckRow)).all()},
            "observations": {r.finding_key for r in s.exec(of_run(FindingObservationRow)).all()},
            "absences": {r.clause_type for r in s.exec(of_run(AbsenceRow)).all()},
            "reviewed": {r.sha256 for r in s.exec(of_run(DocumentReviewRow)).all()},
            "drift": {r.sha256 for r in s.exec(of_run(DocumentDriftRow)).all()},
            "outcomes": {(r.sha256, r.status) for r in s.exec(of_run(RunDocumentRow)).all()},
        }
    dispose_engines()
    if run_id is not None:  # checks carry no run: those of this run's findings
        rows["checks"] = {c for c in rows["checks"] if c[0] in rows["findings"]}
    return rows


def only_run(db_url: str) -> str:
    with Session(get_engine(db_url)) as s:
        ids = s.exec(select(RunRow.id)).all()
    dispose_engines()
    assert len(ids) == 1, ids
    return ids[0]


def review(inbox: Path, out: Path, db_url: str) -> dict:
    from flows.review import review_documents

    try:
        review_documents(source=str(inbox), out_dir=str(out), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def contract(tmp_path_factory) -> Path:
    inbox = tmp_path_factory.mktemp("inbox")
    generate_samples(inbox, count=1)
    return inbox


@pytest.fixture(scope="module")
def clean(contract, tmp_path_factory) -> dict[str, set]:
    """The rows one uninterrupted run stores."""
    work = tmp_path_factory.mktemp("clean")
    db_url = f"sqlite:///{work / 'clean.db'}"
    report = review(contract, work / "out", db_url)
    assert report["run"]["metrics"]["documents_reviewed"] == 1
    rows = conclusion_rows(db_url)
    assert rows["findings"] and rows["reviewed"] and rows["drift"], rows
    return rows


@pytest.mark.parametrize(
    "table",
    [
        "document_reviews",  # findings and absences written, the skip-ledger entry not yet
        pytest.param("document_drift", marks=pytest.mark.slow),  # the skip-ledger entry written, drift not yet
        pytest.param("run_documents", marks=pytest.mark.slow),  # everything but the outcome in the run
    ],
)
def test_a_run_killed_between_the_writes_of_a_conclusion_leaves_no_half_concluded_document(
    table, contract, clean, tmp_path
):
    db_url = f"sqlite:///{tmp_path / 'killed.db'}"
    kill_run_before(table, contract, tmp_path / "killed", db_url)

    killed = conclusion_rows(db_url, only_run(db_url))
    stored = {name for name, rows in killed.items() if rows}
    assert not stored, f"a half-concluded document: {sorted(stored)} stored, {table} not"

    # The next run concludes the document as an uninterrupted run does, and the run after it changes nothing.
    report = review(contract, tmp_path / "again", db_url)
    assert report["run"]["metrics"]["documents_reviewed"] == 1
    assert [d["status"] for d in report["documents"]] == ["reviewed"]
    after = conclusion_rows(db_url)
    assert {k: v for k, v in after.items() if k != "outcomes"} == {k: v for k, v in clean.items() if k != "outcomes"}
    assert {status for _, status in after["outcomes"]} == {"reviewed"}
    review(contract, tmp_path / "third", db_url)
    assert conclusion_rows(db_url)["findings"] == clean["findings"]
