"""What an operator meets around a run: the configuration check, the run id, the log lines, the
report's location, the Prefect artifacts and task-run states."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def docreview(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed ``docreview`` command run with ``args``, output captured as text."""
    cli = str(Path(sys.executable).parent / "docreview")
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a folder or a file) cannot be written for the duration, for this user too.

    Permission bits do not stop root, so as root the path is made immutable (``chattr +i``, which
    root obeys, like a read-only mount); the test is skipped where that is not possible (a file
    system without the attribute). Any other user gets the permission bits (``chmod a-w``)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode:
        pytest.skip("cannot make a path read-only for root here (no chattr +i on this file system)")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def test_a_database_in_a_read_only_folder_is_one_line_and_exit_2_before_the_run(tmp_path):
    (tmp_path / "inbox").mkdir()
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        assert not os.access(folder, os.W_OK) or os.geteuid() == 0  # root: only the attempt tells
        done = docreview(
            "review", str(tmp_path / "inbox"), "--out", str(tmp_path / "out"), "--db", f"sqlite:///{folder}/x.db"
        )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out and len(done.stderr.strip().splitlines()) <= 2, out  # one line (wrapped at most once)
    said = " ".join(done.stderr.split())
    assert "--db / DATABASE_URL" in said and f"the folder {folder} of the SQLite file is not writable" in said, said
    assert not (tmp_path / "out" / "docreview.log").exists()  # stopped before the run: no Prefect, no log
    assert list(folder.iterdir()) == []  # the check left nothing behind


def test_a_read_only_database_file_is_exit_2_and_a_writable_one_passes(tmp_path):
    import sqlite3

    from cli.checks import check_database

    db = tmp_path / "x.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("create table t (a)")
    assert check_database(f"sqlite:///{db}") is None
    assert check_database(f"sqlite:///{tmp_path}/new.db") is None and not (tmp_path / "new.db").exists()
    with read_only(db):
        problem = check_database(f"sqlite:///{db}")
    assert problem is not None and problem.startswith(f"--db / DATABASE_URL: the SQLite file {db} is not writable")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]


# --- one `docreview review` as an operator runs it -------------------------------------------------

REPORT_URL_BASE = "https://reports.example.com/docreview"


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory) -> dict:
    """``docreview review`` over two sample contracts and a broken PDF (rules backend, its own
    temporary Prefect server), with ``DOCREVIEW_REPORT_URL_BASE`` set: its output, log, runs row."""
    import sqlite3

    from docreview_testing.samples import generate_samples

    base = tmp_path_factory.mktemp("cli-run")
    inbox, out, db = base / "inbox", base / "out", base / "x.db"
    generate_samples(inbox, count=2)
    (inbox / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    env = {**os.environ, "DOCREVIEW_REPORT_URL_BASE": REPORT_URL_BASE}
    cli = str(Path(sys.executable).parent / "docreview")
    done = subprocess.run(
        [cli, "review", str(inbox), "--out", str(out), "--db", f"sqlite:///{db}", "--backend", "rules"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(base),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with contextlib.closing(sqlite3.connect(db)) as conn:
        ((run_id, flow_run_id),) = conn.execute("select id, flow_run_id from runs").fetchall()
    return {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "log": (out / "docreview.log").read_text(),
        "run_id": run_id,
        "flow_run_id": flow_run_id,
        "out": out,
        "db": f"sqlite:///{db}",
    }


def test_the_run_id_is_the_flow_run_id_and_the_cli_and_log_show_only_it(cli_run):
    import re

    run_id = cli_run["run_id"]
    assert run_id == cli_run["flow_run_id"]  # one id: docreview's run is Prefect's flow run
    summary = " ".join(cli_run["stdout"].split())
    assert f"Run {run_id} (the Prefect flow run's id)" in summary, cli_run["stdout"]
    run_line = next(line for line in cli_run["stdout"].splitlines() if line.startswith("Run "))
    assert run_line.rstrip().endswith("(the Prefect flow run's id)"), run_line  # not wrapped at 80 columns
    log = cli_run["log"]
    assert re.search(rf"Beginning flow run 'review-inbox-[0-9T:-]+-{run_id[:8]}'", log), log
    assert f"Run {run_id[:8]} finished" in log, log
    ids = {m[:8] for m in re.findall(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b[0-9a-f]{8}\b", log + summary)}
    assert ids == {run_id[:8]}, ids  # no second id for the same run


def test_a_flow_run_started_again_gets_a_run_of_its_own_that_names_its_flow_run(db_url):
    from flows.pipeline import new_run_id, run_label
    from tasks.store.persist import dispose_engines, start_run, unit_of_work

    flow_run_id = "3f2a1b2c-0000-4000-8000-000000000001"
    try:
        assert new_run_id(db_url, flow_run_id) == flow_run_id
        with unit_of_work(db_url) as session:
            start_run.fn(session, flow_run_id, "inbox", "rules", "rules-v6", "review-v4", flow_run_id)
        again = new_run_id(db_url, flow_run_id)  # e.g. retried from the Prefect UI: the same flow-run id
    finally:
        dispose_engines()
    assert again != flow_run_id and len(again) == 36
    assert run_label(again, flow_run_id) == f"{again[:8]} (flow run 3f2a1b2c)"
    assert run_label(flow_run_id, flow_run_id) == "3f2a1b2c"
    assert new_run_id(db_url, None) != new_run_id(db_url, None)  # outside a flow run: a fresh UUID


def test_the_run_log_reads_as_text_with_rounded_metrics(cli_run):
    import re

    log = cli_run["log"]
    finished = next(line for line in log.splitlines() if " finished: " in line)
    assert re.search(
        r"Run [0-9a-f]{8} finished: 2 reviewed, 0 deferred, 1 failed \(of 3\); \d+ finding\(s\), \d+\.\d% verified; "
        r"\d+\.\d documents/min in \d+\.\d s$",
        finished,
    ), finished
    assert "{'" not in log and "': " not in log, log  # no Python dict reprs
    assert not re.search(r"\d\.\d{4,}", log), log  # no unrounded metric
    assert "NoneType: None" not in log and "Traceback" not in log, log  # the failed document: its reason, no trace
    shown = docreview("metrics", "show", cli_run["run_id"][:8], "--db", cli_run["db"])
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "docs_per_min" in line)
    assert re.search(r"docs_per_min\s*│\s+\d+\.\d\s*│", row), row


def test_metrics_are_formatted_for_people():
    from tasks.observe.metrics import format_metric, run_outcome_text

    assert [format_metric(v) for v in (4.0, 91.5113, 2.6226, 0.6446, 0.012345, 1234.56, 0)] == [
        "4",
        "91.5",
        "2.62",
        "0.645",
        "0.0123",
        "1234.6",
        "0",
    ]
    metrics = {
        "documents_total": 4.0,
        "documents_reviewed": 4.0,
        "documents_deferred": 0.0,
        "documents_failed": 0.0,
        "documents_skipped": 1.0,
        "findings_total": 121.0,
        "verification_rate": 0.6446,
        "wall_s": 2.6226,
    }
    assert run_outcome_text(metrics) == (
        "4 reviewed, 0 deferred, 0 failed (of 4), 1 of them unchanged and reused; "
        "121 finding(s), 64.5% verified; 68.6 documents/min in 2.6 s"
    )
    assert run_outcome_text({"documents_total": 1, "documents_failed": 1}) == (
        "0 reviewed, 0 deferred, 1 failed (of 1); no findings"
    )


def test_the_report_is_shown_by_its_url_when_report_url_base_is_set(cli_run):
    summary = " ".join(cli_run["stdout"].split())
    kept = f"{REPORT_URL_BASE}/runs/{cli_run['run_id']}"
    assert f"Report: {kept}/report.html (JSON: {kept}/report.json)" in summary, cli_run["stdout"]
    assert str(cli_run["out"]) not in summary and "file://" not in summary


def test_the_report_is_shown_by_its_path_without_report_url_base():
    from cli.app import _print_summary
    from cli.common import console

    metrics = {
        "documents_total": 1,
        "documents_reviewed": 1,
        "documents_deferred": 0,
        "documents_failed": 0,
        "findings_total": 0,
        "verification_rate": 0.0,
        "wall_s": 1.0,
    }
    result = {
        "run_id": "3f2a1b2c-0000-4000-8000-000000000001",
        "flow_run_id": "3f2a1b2c-0000-4000-8000-000000000001",
        "report_html": "out/report.html",
        "report_json": "out/report.json",
        "report_url": None,
        "backend": "rules",
        "model": "rules-v6",
        "offline": True,
        "endpoint": None,
        "metrics": metrics,
        "documents": [],
    }
    with console.capture() as captured:
        _print_summary(result)
    assert "Report: out/report.html  (JSON: out/report.json)" in captured.get()
    with console.capture() as captured:
        _print_summary({**result, "report_url": "https://r.example/runs/3f2a/report.html"})
    shown = captured.get()
    assert "Report: https://r.example/runs/3f2a/report.html  (JSON: https://r.example/runs/3f2a/report.json)" in shown
    assert "out/report.html" not in shown


# --- Prefect artifacts and task-run states (the session's Prefect test harness) -------------------


def _finding(ident: int, risk: str, verdict: str, **decided) -> dict:
    return {
        "id": ident,
        "clause_label": "Cap On Liability",
        "risk": risk,
        "verdict": verdict,
        "page": 1,
        "summary": f"{risk} {verdict}",
        "evidence": "quote",
        **decided,
    }


@pytest.mark.usefixtures("prefect_harness")
def test_the_high_risk_artifact_holds_high_risk_rows_only():
    import json

    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    from tasks.observe.report import ATTENTION_ARTIFACT_KEY, publish_artifacts

    findings = [
        _finding(1, "high", "verified"),
        _finding(2, "low", "needs_review"),  # to look at, but not high risk
        _finding(3, "medium", "contradicted"),
        _finding(4, "high", "unsupported"),
        _finding(5, "low", "verified"),
        _finding(6, "high", "verified", decision={"decision": "approve"}),  # decided: nothing left to do
    ]
    report = {
        "run": {
            "id": "3f2a1b2c-0000-4000-8000-000000000002",
            "flow_run_id": None,
            "source": "inbox",
            "backend": "rules",
            "model": "rules-v6",
            "offline": True,
            "playbook": None,
            "metrics": {"documents_total": 1, "documents_reviewed": 1},
        },
        "documents": [{"file_name": "a.pdf", "status": "reviewed", "reason": None, "findings": findings}],
    }

    @flow
    def publish() -> None:
        publish_artifacts(report, "https://reports.example.com/runs/3f2a/report.html")

    flow_run_id = publish(return_state=True).state_details.flow_run_id
    with get_client(sync_client=True) as client:
        (artifact,) = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=[ATTENTION_ARTIFACT_KEY]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            )
        )
    rows = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
    assert [r["id"] for r in rows] == [1, 4]  # the verified high-risk term first, then what needs a decision
    assert {r["risk"] for r in rows} == {"high"}


def _settled_task_runs(flow_run_id, expected: int, hang_guard_s: float = 120.0):
    """The flow run's task runs once each has reached a final state on the server.

    Task run states reach the server through its event stream, after the flow run has returned:
    read at once, a task run can still be stateless or running. Polls until every task run is final
    and at least ``expected`` ``save-outcome`` runs exist; ``hang_guard_s`` only stops a hung test.
    """
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + hang_guard_s
    while True:
        with get_client(sync_client=True) as client:
            task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        outcomes = [t for t in task_runs if t.name.startswith("save-outcome")]
        if len(outcomes) >= expected and all(t.state is not None and t.state.is_final() for t in task_runs):
            return task_runs
        if time.monotonic() > deadline:
            raise AssertionError(
                f"task runs not final after {hang_guard_s} s: {[(t.name, t.state) for t in task_runs]}"
            )
        time.sleep(0.2)


@pytest.mark.usefixtures("prefect_harness")
def test_a_failed_document_s_concluding_task_run_is_failed_and_the_flow_run_is_not(tmp_path, db_url):
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    (inbox / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    try:
        state = review_documents(
            source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules", return_state=True
        )
    finally:
        dispose_engines()
    assert state.is_completed() and state.name == "Completed with failures", state  # as before
    assert state.result()["metrics"]["documents_reviewed"] == 1  # the rest of the batch went on
    task_runs = _settled_task_runs(state.state_details.flow_run_id, expected=2)
    by_name = {t.name: t for t in task_runs}
    concluded = by_name["save-outcome · broken.pdf"]
    assert concluded.state.is_failed(), concluded.state
    assert concluded.state.message.startswith("broken.pdf failed: corrupt PDF"), concluded.state.message
    failed = sorted(t.name for t in task_runs if t.state.is_failed())
    assert failed == ["save-outcome · broken.pdf"]  # the document's failure, once; nothing else failed
    sample_name = next(n for n in by_name if n.startswith("save-outcome · sample_"))
    assert by_name[sample_name].state.is_completed()


def test_docreview_s_prefect_defaults_are_set_before_the_checks_import_prefect(tmp_path):
    """The start-up checks import Prefect (the support model's task) before prepare_environment runs,
    and Prefect reads its settings once, when imported: the temporary server had Prefect's 20 s to
    start instead of docreview's 90, and a run on a loaded machine failed "Timed out while attempting to
    connect to ephemeral Prefect API server" after 20 s. The console entry sets the defaults first."""
    code = (
        "import sys\n"
        "from cli.launch import set_prefect_defaults\n"
        "set_prefect_defaults()\n"
        "assert 'prefect' not in sys.modules\n"
        "import tasks.check.support\n"
        "from prefect.settings import get_current_settings\n"
        "print(get_current_settings().server.ephemeral.startup_timeout_seconds)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "home"))
    run = [sys.executable, "-c", code]
    done = subprocess.run(
        run, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1], timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["90"]
    without = subprocess.run(  # the same import without the defaults: Prefect's own 20 s
        [sys.executable, "-c", code.replace("set_prefect_defaults()\n", "")],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert without.stdout.split() == ["20"], without.stderr
