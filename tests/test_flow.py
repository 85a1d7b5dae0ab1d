"""The main job end to end: generated contracts with known ground truth, bad files, re-runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from docreview_testing.samples import generate_samples
from schemas.tables import CheckRow, ChunkRow, DocumentReviewRow, DocumentRow, FindingRow, LLMCallRow, RunDocumentRow
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")

COUNTED = (DocumentRow, ChunkRow, FindingRow, CheckRow, DocumentReviewRow, LLMCallRow)


def docreview(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 120):
    """The installed ``docreview`` command run with ``args``: its CompletedProcess, output captured as text."""
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "docreview")
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def row_counts(db_url: str) -> dict[str, int]:
    with Session(get_engine(db_url)) as s:
        return {m.__tablename__: s.exec(select(func.count()).select_from(m)).one() for m in COUNTED}


def run_review(source: Path, out: Path, db_url: str) -> dict:
    from flows.review import review_documents

    try:
        return review_documents(source=str(source), out_dir=str(out), database_url=db_url, backend="rules")
    finally:
        dispose_engines()


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    inbox = tmp_path_factory.mktemp("inbox")
    truth = generate_samples(inbox, count=3)
    return inbox, truth


def test_samples_reviewed_with_ground_truth(samples, tmp_path, db_url):
    inbox, truth = samples
    result = run_review(inbox, tmp_path / "out", db_url)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    m = report["run"]["metrics"]
    assert m["documents_total"] == 3 and m["documents_reviewed"] == 3 and m["documents_failed"] == 0
    assert (
        report["run"]["backend"] == "rules" and report["run"]["offline"] is True and report["run"]["endpoint"] is None
    )
    # Since the support check (issue 17), findings citing a bare heading or a clause of another category
    # are needs_review: the generated samples have such findings, so fewer are verified than before (0.95).
    assert 0.5 <= m["verification_rate"] < 0.95, m
    assert m["unsupported"] == 0 and m["contradicted"] == 0, m
    for doc in report["documents"]:
        gt = next(t for t in truth if t.file_name == doc["file_name"])
        by_type: dict[str, list[dict]] = {}
        for f in doc["findings"]:
            by_type.setdefault(f["clause_type"], []).append(f)
            assert f["verdict"] in {"verified", "unsupported", "contradicted", "needs_review"}
            assert f["evidence"] and f["page"] >= 1
            checks = {c["name"]: c for c in f["checks"]}
            if f["verdict"] == "verified":  # verified needs every check, the support check included
                assert checks["support"]["verdict"] == "verified" and checks["grounding"]["verdict"] == "verified"
            elif f["verdict"] == "needs_review":
                assert checks["support"]["verdict"] == "needs_review", f
        # governing law and the liability cap are found, verified, on the right page, with the value
        law = [f for f in by_type.get("governing_law", []) if f["verdict"] == "verified"]
        assert any(gt.governing_law in f["values"].get("jurisdiction", "") for f in law)
        assert any(f["page"] == gt.clauses["governing_law"] for f in law)
        # The cap sentence is found on its page. Verified it is not always: the lexical support model trained on
        # the training split reads some generated cap sentences as Uncapped Liability and the carve-out after
        # them as the cap (the confusion the support judge is for); such a cap is put to the reviewer with that
        # reason instead. The model trained on the old split, which had seen 50 of today's test contracts,
        # verified each.
        cap = [f for f in by_type.get("cap_on_liability", []) if f["verdict"] != "unsupported"]
        assert cap and any(f["page"] == gt.clauses["cap_on_liability"] for f in cap)
        assert gt.governing_law in "; ".join(doc["key_terms"].get("Governing law", []))
        assert doc["status"] == "reviewed" and doc["pages"] == gt.pages
    assert Path(result["report_html"]).exists()


def test_the_offline_review_is_one_task_run_per_document_and_a_failing_chunk_is_its_document_s_problem(
    samples, tmp_path, db_url, monkeypatch
):
    """The rules backend reviews a document's chunks in one task run (and fact-checks them in one
    more); a chunk whose review raises defers its document with the chunk named, while its other
    chunks' findings are still checked and stored and the other documents are reviewed."""
    from tasks.check.factcheck import fact_check_document
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.reviewer import review_chunks_offline

    inbox, _ = samples
    broken = sorted(p.name for p in inbox.glob("*.pdf"))[0]
    calls: dict[str, int] = {"review": 0, "fact-check": 0}
    for name, task_ in (("review", review_chunks_offline), ("fact-check", fact_check_document)):

        def counted(*args, _fn=task_.fn, _name=name, **kwargs):
            calls[_name] += 1
            return _fn(*args, **kwargs)

        monkeypatch.setattr(task_, "fn", counted)
    original = RulesBackend.review_chunk

    def review_chunk(self, chunk, document_name):
        if document_name == broken and chunk.index == 1:
            raise RuntimeError("boom")
        return original(self, chunk, document_name)

    monkeypatch.setattr(RulesBackend, "review_chunk", review_chunk)
    run_review(inbox, tmp_path / "out", db_url)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert calls == {"review": 3, "fact-check": 3}
    by_name = {d["file_name"]: d for d in report["documents"]}
    assert by_name[broken]["status"] == "deferred"
    assert "chunk 2: RuntimeError: boom" in by_name[broken]["reason"]
    with Session(get_engine(db_url)) as session:  # the other chunks' findings were checked and stored
        kept = session.exec(select(FindingRow).where(FindingRow.sha256 == by_name[broken]["sha256"])).all()
    assert kept and {f.chunk_index for f in kept} - {1}
    assert all(d["status"] == "reviewed" for name, d in by_name.items() if name != broken)


def test_rerun_adds_no_rows_and_reviews_nothing(samples, tmp_path, db_url):
    inbox, _ = samples
    run_review(inbox, tmp_path / "a", db_url)
    before = row_counts(db_url)
    assert before["findings"] > 0 and before["chunks"] > 0
    second = run_review(inbox, tmp_path / "b", db_url)
    assert row_counts(db_url) == before
    assert second["metrics"]["documents_skipped"] == 3
    first = json.loads((tmp_path / "a" / "report.json").read_text())
    again = json.loads((tmp_path / "b" / "report.json").read_text())
    assert [len(d["findings"]) for d in again["documents"]] == [len(d["findings"]) for d in first["documents"]]


def test_bad_files_fail_with_reasons_and_the_batch_goes_on(samples, tmp_path, db_url, pdf_maker):
    inbox, _ = samples
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    good = sorted(inbox.glob("*.pdf"))[0]
    (mixed / good.name).write_bytes(good.read_bytes())
    (mixed / "copy-of-good.pdf").write_bytes(good.read_bytes())
    (mixed / "zero.pdf").write_bytes(b"")
    (mixed / "notes.txt").write_text("not a pdf")
    (mixed / "truncated.pdf").write_bytes(good.read_bytes()[:300])
    pdf_maker(mixed / "scan.pdf", ["", ""])
    run_review(mixed, tmp_path / "out", db_url)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    status = {d["file_name"]: (d["status"], d["reason"]) for d in report["documents"]}
    assert len(status) == 6
    pair = [status[good.name], status["copy-of-good.pdf"]]
    assert [st for st, _ in pair] == ["reviewed", "reviewed"]
    assert sum(1 for _, reason in pair if reason and reason.startswith("same content as")) == 1
    for name in ("zero.pdf", "notes.txt", "truncated.pdf", "scan.pdf"):
        assert status[name][0] == "failed" and status[name][1], name
    profiles = {d["file_name"]: d["profile"] for d in report["documents"]}
    assert profiles["zero.pdf"] is None and profiles["notes.txt"] is None  # never read, never classified
    assert profiles[good.name] == "contract"
    html = (tmp_path / "out" / "report.html").read_text()
    assert "reviewed before document profiles were recorded" not in html
    with Session(get_engine(db_url)) as s:
        rows = s.exec(select(RunDocumentRow)).all()
    assert len(rows) == 6  # every object has exactly one terminal row for the run


def test_report_escapes_document_text(tmp_path, db_url, pdf_maker):
    inbox = tmp_path / "hostile"
    inbox.mkdir()
    pdf_maker(
        inbox / "<img src=x onerror=alert(1)>.pdf",
        [
            "MASTER AGREEMENT\n\n12. GOVERNING LAW. This Agreement shall be governed by the laws of the State of "
            "Delaware <script>alert('x')</script> without regard to conflicts of law."
        ],
    )
    run_review(inbox, tmp_path / "out", db_url)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_prefect_internal_errors_go_to_the_run_log_not_the_console(tmp_path):
    """A normal run's console stays clean: an ERROR from Prefect's internal services (say the
    events worker failing to deliver) is written to the run's log file, not to stderr."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    log = tmp_path / "docreview.log"
    code = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from cli.common import prepare_environment, route_prefect_logs\n"
        "prepare_environment(False)\n"
        f"handler = route_prefect_logs(Path({str(log)!r}))\n"
        "logging.getLogger('prefect._internal.concurrency').error('events worker failed for the test')\n"
        "handler.flush()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    assert done.returncode == 0, done.stderr
    assert "events worker failed for the test" not in done.stderr + done.stdout
    assert "events worker failed for the test" in log.read_text()


def test_an_unwritable_report_folder_is_one_line_and_exit_2(tmp_path):

    (tmp_path / "inbox").mkdir()
    (tmp_path / "taken").write_text("a file where the report folder should go")
    done = docreview(
        "review", str(tmp_path / "inbox"), "--out", str(tmp_path / "taken"), "--db", f"sqlite:///{tmp_path}/x.db"
    )
    assert done.returncode == 2
    assert "cannot write the report folder" in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "x.db").exists()  # nothing started


def test_an_unusable_database_url_is_one_line_and_exit_2(tmp_path):
    done = docreview("runs", "--db", "notaurl")
    assert done.returncode == 2, done.stderr
    assert "cannot use the database" in done.stderr and "Traceback" not in done.stderr + done.stdout
    # Commands that read stored runs never create an empty database for a mistyped path.
    for args in (["runs"], ["queue"], ["decide", "13", "approve"], ["metrics", "show", "abcd"], ["db", "current"]):
        for url in (f"sqlite:///{tmp_path}/missing/dir/x.db", f"sqlite:///{tmp_path}/typo.db"):
            done = docreview(*args, "--db", url)
            assert done.returncode == 2 and "no database at" in done.stderr, (args, done.stdout + done.stderr)
    assert not (tmp_path / "typo.db").exists()


def test_an_invalid_resilience_policy_is_one_line_naming_the_option_or_field(tmp_path):

    (tmp_path / "inbox").mkdir()
    (tmp_path / "policy.json").write_text('{"attempts": "x"}')
    done = docreview(
        "review",
        str(tmp_path / "inbox"),
        "--policy",
        str(tmp_path / "policy.json"),
        "--on-open",
        "maybe",
        "--db",
        f"sqlite:///{tmp_path}/x.db",
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"{tmp_path / 'policy.json'}: attempts: Input should be a valid integer" in done.stderr
    assert "--on-open: Input should be 'defer' or 'cached' (got 'maybe')" in done.stderr
    assert "errors.pydantic.dev" not in done.stderr


def test_a_missing_file_url_source_is_exit_2_before_the_run(tmp_path):

    done = docreview("review", f"file://{tmp_path}/no%20such", "--db", f"sqlite:///{tmp_path}/x.db")
    assert done.returncode == 2 and "source not found: file://" in done.stderr, done.stdout + done.stderr
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    "name, expected",
    [("junk.db", "junk.db is not a SQLite database"), ("afolder", "afolder is a folder, not a SQLite file")],
)
def test_a_sqlite_url_that_is_no_database_is_exit_2_before_the_run(tmp_path, name, expected):

    (tmp_path / "inbox").mkdir()
    (tmp_path / "junk.db").write_text("not a database")
    (tmp_path / "afolder").mkdir()
    done = docreview(
        "review", str(tmp_path / "inbox"), "--out", str(tmp_path / "out"), "--db", f"sqlite:///{tmp_path / name}"
    )
    assert done.returncode == 2 and expected in done.stderr, done.stdout + done.stderr
    assert (tmp_path / "junk.db").read_text() == "not a database"  # left as it was


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"DOCREVIEW_ROUTER_THRESHOLD": "abc"}, "DOCREVIEW_ROUTER_THRESHOLD"),
        ({"DOCREVIEW_ROUTER_THRESHOLD": "nan"}, "DOCREVIEW_ROUTER_THRESHOLD"),
        ({"DOCREVIEW_ROUTER_THRESHOLD": ""}, "DOCREVIEW_ROUTER_THRESHOLD"),
        ({"DOCREVIEW_CLAIM_LEASE_S": "-1"}, "DOCREVIEW_CLAIM_LEASE_S"),
        ({"DOCREVIEW_MAX_PAGES": "many"}, "DOCREVIEW_MAX_PAGES"),
        ({"DOCREVIEW_BACKEND": "foo"}, "DOCREVIEW_BACKEND"),
        ({"DOCREVIEW_LLM_PRICES": "notjson"}, "DOCREVIEW_LLM_PRICES: cannot be parsed"),
        ({"DOCREVIEW_LLM_TIMEOUT_S": "0"}, "DOCREVIEW_LLM_TIMEOUT_S"),
        ({"DOCREVIEW_LLM_MAX_TOKENS": "-5"}, "DOCREVIEW_LLM_MAX_TOKENS"),
        ({"DOCREVIEW_LLM_MAX_TOKENS_CEILING": "1"}, "DOCREVIEW_LLM_MAX_TOKENS_CEILING (1) must be at least"),
        ({"DOCREVIEW_LLM_THINKING_BUDGET_TOKENS": "5000"}, "DOCREVIEW_LLM_THINKING_BUDGET_TOKENS"),
        ({"DOCREVIEW_ANTHROPIC_MODEL": ""}, "DOCREVIEW_ANTHROPIC_MODEL"),
        ({"DOCREVIEW_ALERT_ROUTING_RATE_MIN": "-5"}, "DOCREVIEW_ALERT_ROUTING_RATE_MIN"),
    ],
)
def test_a_bad_setting_is_exit_2_naming_the_variable_before_anything_starts(tmp_path, env, expected):
    import os

    (tmp_path / "inbox").mkdir()
    done = docreview(
        "review",
        str(tmp_path / "inbox"),
        "--out",
        str(tmp_path / "out"),
        "--db",
        f"sqlite:///{tmp_path}/x.db",
        env={**os.environ, **env},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, never wrapped at 80 columns
    assert not (tmp_path / "x.db").exists()  # neither Prefect nor the database was started


def test_docreview_backend_is_the_default_of_backend(samples, tmp_path, db_url, monkeypatch):
    """DOCREVIEW_BACKEND=rules keeps a run offline even with an API key set; --backend (the flow's
    ``backend``) overrides it; DOCREVIEW_BACKEND=anthropic without a key is exit 2 before the run."""
    import os

    from flows.review import review_documents

    inbox, _ = samples
    monkeypatch.setenv("DOCREVIEW_BACKEND", "rules")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens: a model call would fail
    try:
        result = review_documents(source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url)
    finally:
        dispose_engines()
    assert result["backend"] == "rules" and result["metrics"]["documents_reviewed"] == 3

    (tmp_path / "empty").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = docreview(
        "review",
        str(tmp_path / "empty"),
        "--out",
        str(tmp_path / "o2"),
        "--db",
        f"sqlite:///{tmp_path}/y.db",
        env={**env, "DOCREVIEW_BACKEND": "anthropic"},
    )
    assert done.returncode == 2 and "needs ANTHROPIC_API_KEY" in " ".join(done.stderr.split()), done.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--db", "postgresql+psycopg://nobody@127.0.0.1:1/none"], "cannot connect"),
        (["--db", "notaurl"], "is not a database URL"),
        (["--backend", "bedrock"], "needs AWS credentials"),
        (["--backend", "anthropic"], "needs ANTHROPIC_API_KEY"),
    ],
)
def test_an_unusable_database_or_backend_is_exit_2_before_the_run(tmp_path, args, expected):
    import os

    (tmp_path / "inbox").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANTHROPIC_"))}
    env.update(
        {
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    done = docreview("review", str(tmp_path / "inbox"), "--out", str(tmp_path / "out"), *args, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in " ".join(done.stderr.split()) and "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "docreview.db").exists()


def test_a_run_with_a_failed_document_ends_completed_with_failures(prefect_harness, tmp_path, db_url):
    """The flow run's state says what happened (the Prefect UI shows its name and message); the
    caller still gets the run's result."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    (inbox / "broken.pdf").write_bytes(b"not a pdf")
    state = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules", return_state=True
    )
    assert state.is_completed() and state.name == "Completed with failures"
    assert state.message == "1 of 2 failed"
    assert state.result()["metrics"]["documents_failed"] == 1

    clean = tmp_path / "clean"
    generate_samples(clean, count=1)
    state = review_documents(
        source=str(clean), out_dir=str(tmp_path / "out2"), database_url=db_url, backend="rules", return_state=True
    )
    assert state.is_completed() and state.name == "Completed"


def test_a_run_that_reviews_nothing_ends_failed_and_the_cli_exits_1(prefect_harness, tmp_path, db_url):
    """Every document failed: the flow run is Failed ("nothing reviewed: …"), calling the flow
    raises NothingReviewed with the run's result, and the CLI prints the summary, the reasons and
    the report path, then exits 1."""

    from flows.pipeline import NothingReviewed
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "broken.pdf").write_bytes(b"not a pdf")
    (inbox / "empty.pdf").write_bytes(b"")
    state = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules", return_state=True
    )
    assert state.is_failed() and state.message == "nothing reviewed: 2 of 2 failed"
    with pytest.raises(NothingReviewed) as raised:
        state.result()
    assert raised.value.result["metrics"]["documents_failed"] == 2
    assert (tmp_path / "out" / "report.html").is_file()

    done = docreview(
        "review",
        str(inbox),
        "--out",
        str(tmp_path / "cli-out"),
        "--backend",
        "rules",
        "--db",
        f"sqlite:///{tmp_path}/cli.db",
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Nothing was reviewed: 2 of 2 failed" in " ".join(done.stderr.split())
    assert "broken.pdf" in done.stdout and "Report:" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    # Prefect's own log lines go to the run's log and the UI, not the console (the start-up checks
    # import Prefect before its quiet logging defaults are set: its logging is set up again)
    assert "Finished in state" not in done.stdout + done.stderr and "| INFO" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "counts, batch, waiting, expected",
    [
        ((0, 2, 0), False, 0, "Failed"),  # deferred because they could not be reviewed (API errors, back-off)
        ((0, 2, 0), False, 2, "Completed with deferrals"),  # another live run holds both claims
        ((0, 2, 0), True, 0, "Completed with deferrals"),  # waiting on their Message Batch
        ((0, 1, 1), True, 0, "Failed"),  # a failure and nothing reviewed fails even in batch mode
        ((1, 1, 0), False, 0, "Completed with deferrals"),
        ((1, 0, 1), False, 0, "Completed with failures"),
    ],
)
def test_the_end_state_says_what_happened(counts, batch, waiting, expected):
    from flows.review import final_state

    reviewed, deferred, failed = counts
    metrics = {
        "documents_reviewed": reviewed,
        "documents_deferred": deferred,
        "documents_failed": failed,
        "documents_total": reviewed + deferred + failed,
    }
    state = final_state({"metrics": metrics}, batch, waiting=waiting)
    assert state.name == expected


def test_an_empty_source_is_no_plain_success(tmp_path):
    """An empty folder (a mistyped one that exists) ends exit 3 naming the folder it read; --allow-empty makes
    it a quiet run for a schedule that expects quiet nights; the flow run's state says no documents."""
    import subprocess
    import sys
    from pathlib import Path

    from flows.review import final_state

    empty = tmp_path / "inbox"
    empty.mkdir()
    cli = str(Path(sys.executable).parent / "docreview")
    args = [cli, "review", str(empty), "--out", str(tmp_path / "out"), "--backend", "rules"]
    args += ["--db", f"sqlite:///{tmp_path}/e.db"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    said = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"No documents found in the folder {empty.resolve()} (searched recursively, hidden files skipped)" in said
    quiet = subprocess.run([*args, "--allow-empty"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and "(--allow-empty: a quiet run)" in " ".join(quiet.stdout.split())
    metrics = {"documents_reviewed": 0, "documents_deferred": 0, "documents_failed": 0, "documents_total": 0}
    state = final_state({"metrics": metrics, "source": str(empty)}, False)
    assert state.name == "Completed (no documents)" and state.message == f"no documents found in {empty}"


@pytest.mark.slow
def test_sigterm_ends_a_run_like_ctrl_c_and_stops_its_temporary_prefect_server(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from docreview_testing.samples import generate_workload

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    generate_workload(inbox, count=40, long_share=0.5)  # long enough to be stopped mid-run
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # a temporary server of its own
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    cli = str(Path(sys.executable).parent / "docreview")
    proc = subprocess.Popen(
        [cli, "review", str(inbox), "--out", str(tmp_path / "out"), "--db", f"sqlite:///{tmp_path}/x.db"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        children: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:  # wait for the server and the run's start
            children = {
                int(p)
                for p in subprocess.run(
                    ["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True
                ).stdout.split()
            }
            if children and (tmp_path / "x.db").exists():
                time.sleep(1)
                break
            time.sleep(0.2)
        if proc.poll() is not None:
            out, errors = proc.communicate()
            pytest.fail(
                f"the run ended (exit {proc.returncode}) before it could be stopped: {out[-800:]} {errors[-800:]}"
            )
        assert children, "no temporary Prefect server or no run database within 120 s"
        proc.send_signal(signal.SIGTERM)
        out, errors = proc.communicate(timeout=90)
    finally:  # never leave the run (or its pipes) behind when an assertion fails
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out + errors
    assert "Interrupted" in errors and "Traceback" not in out + errors
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
        time.sleep(0.5)
    assert not any(Path(f"/proc/{pid}").exists() for pid in children), "a child of the run outlived it"
