"""Event-driven review end to end, every piece a real process over real HTTP.

A ``prefect server start`` (session fixture ``prefect_server``), an S3 endpoint (moto in server
mode), the local Messages-API test double (the ``anthropic`` backend's real SDK path), the
watcher (``docreview watch s3://contracts/inbox``) and ``docreview serve`` (both deployments,
flow runs as subprocesses). Contracts are real CUAD PDFs from ``../shared/data``.

"No second review" is defined as: after the same bytes are uploaded again under the same key
(same ETag), and the watcher has swept the bucket several times and the trigger window has
passed, (1) no new flow run of ``review-documents/review-on-upload`` exists, and (2) the results
database holds the same ``runs``, ``findings`` and ``llm_calls`` rows as before. A duplicate
notification that does get through (a new event id, as after a lost watcher cursor) starts one
run that reuses both documents: no model call, no new finding.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docreview_testing.reaper import start_owned
from tests.conftest import free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration]

BIN = Path(sys.executable).parent
BUCKET = "contracts"
WINDOW_S = 4
UPLOAD = "review-documents/review-on-upload"
NIGHTLY = "review-documents/nightly-review"


def wait_for(predicate, timeout: float, what: str, every: float = 1.0):
    """``predicate()``'s first truthy value, polled every ``every`` s; fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def rows(db: Path, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def smallest_pdfs(shared_data: Path, n: int) -> list[Path]:
    pdfs = sorted(
        (p for p in (shared_data / "cuad" / "pdf").iterdir() if p.suffix.lower() == ".pdf"),
        key=lambda p: p.stat().st_size,
    )
    return pdfs[:n]


@pytest.fixture(scope="module")
def stack(prefect_server, shared_data, tmp_path_factory):
    """moto S3, the test double, the watcher and ``docreview serve``, wired to the Prefect server."""
    import boto3
    from moto.server import ThreadedMotoServer

    from docreview_testing.stub_llm import StubLLM, StubLLMServer

    work = tmp_path_factory.mktemp("event-driven")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(5200, 5249), verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    s3_url = f"http://{host}:{port}"
    stub = StubLLMServer("127.0.0.1", free_port(5250, 5299), StubLLM()).start()
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_server["api_url"],
        "PREFECT_HOME": str(work / "prefect-client"),
        "PREFECT_RUNNER_POLL_FREQUENCY": "2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "DOCREVIEW_S3_ENDPOINT_URL": s3_url,
        "DATABASE_URL": f"sqlite:///{work / 'results.db'}",
        "DOCREVIEW_OUT_DIR": str(work / "out"),
        "DOCREVIEW_NIGHTLY_SOURCE": f"s3://{BUCKET}/nightly/",
        "ANTHROPIC_BASE_URL": stub.url,
        "ANTHROPIC_API_KEY": "test-key-not-secret",
    }
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        env.pop(name, None)
    s3 = boto3.client(
        "s3", endpoint_url=s3_url, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    s3.create_bucket(Bucket=BUCKET)

    procs: list[subprocess.Popen] = []
    serve_log = work / "serve.log"
    with serve_log.open("wb") as out:
        procs.append(
            start_owned(
                [str(BIN / "docreview"), "serve", "--window", str(WINDOW_S)],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )
    wait_for(lambda: "Press Ctrl-C" in serve_log.read_text() or procs[0].poll() is not None, 180, "docreview serve")
    assert procs[0].poll() is None, serve_log.read_text()
    with (work / "watch.log").open("wb") as out:
        procs.append(
            start_owned(
                [
                    str(BIN / "docreview"),
                    "watch",
                    f"s3://{BUCKET}/inbox",
                    "--endpoint-url",
                    s3_url,
                    "--interval",
                    "1",
                    "--db",
                    f"sqlite:///{work / 'watch.db'}",
                ],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )
    try:
        yield {
            "watcher": procs[1],
            "work": work,
            "env": env,
            "s3": s3,
            "s3_url": s3_url,
            "stub": stub.stub,
            "db": work / "results.db",
            "pdfs": smallest_pdfs(shared_data, 3),
            "api_url": prefect_server["api_url"],
        }
    finally:
        import signal

        for proc in reversed(procs):  # the watcher, then serve (Ctrl-C: pauses the nightly schedule)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=180)  # pausing the schedule is an API call: slow on a loaded machine
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        stub.stop()
        moto.stop()
    # Ctrl-C stops `docreview serve` cleanly: exit 0, its closing line, no traceback
    text = serve_log.read_text()
    assert procs[0].returncode == 0 and "Stopped" in text and "Traceback" not in text, text[-3000:]


def flow_runs(api_url: str, deployment: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name(deployment)
        return client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])))


def finished(api_url: str, deployment: str, count: int) -> list | None:
    runs = [r for r in flow_runs(api_url, deployment) if not r.auto_scheduled]
    done = [r for r in runs if r.state and r.state.is_final()]
    return done if len(done) >= count else None


def counts(db: Path) -> dict[str, int]:
    return {t: rows(db, f"select count(*) from {t}")[0][0] for t in ("runs", "findings", "llm_calls")}


def emit_received(stack: dict, name: str) -> None:
    """Send ``docreview.document.received`` for ``inbox/<name>`` as the watcher does, with a new event id
    (a duplicate the watcher's ledger would never send): the upload deployment's trigger opens a window."""
    s3 = stack["s3"]
    head = s3.head_object(Bucket=BUCKET, Key=f"inbox/{name}")
    uri = f"s3://{BUCKET}/inbox/{name}"
    emit = (
        "from prefect.events import emit_event; import sys, json; "
        "emit_event('docreview.document.received', resource=json.loads(sys.argv[1]), payload=json.loads(sys.argv[2]))"
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            emit,
            json.dumps({"prefect.resource.id": uri, "docreview.bucket": BUCKET}),
            json.dumps(
                {
                    "uri": uri,
                    "bucket": BUCKET,
                    "key": f"inbox/{name}",
                    "etag": head["ETag"].strip('"'),
                    "size_bytes": head["ContentLength"],
                }
            ),
        ],
        env=stack["env"],
        check=True,
        capture_output=True,
        timeout=120,
    )


def test_a_burst_of_uploads_is_reviewed_by_one_triggered_run(stack):
    s3, db, api = stack["s3"], stack["db"], stack["api_url"]
    first, second = stack["pdfs"][:2]
    started = time.monotonic()
    # The watcher is paused while both objects land, so one sweep sees both and their two events
    # fall in one trigger window however slowly a loaded machine runs the sweep.
    stack["watcher"].send_signal(signal.SIGSTOP)
    try:
        for pdf in (first, second):
            s3.put_object(Bucket=BUCKET, Key=f"inbox/{pdf.name}", Body=pdf.read_bytes())
    finally:
        stack["watcher"].send_signal(signal.SIGCONT)
    (run,) = wait_for(lambda: finished(api, UPLOAD, 1), 240, "the triggered flow run")
    elapsed = time.monotonic() - started
    # A marker event sent after that run ended opens a trigger window of its own, which closes after any
    # window the burst could still have open: once the marker's run has ended, a second run of the burst
    # would be among the runs. (Before, a fixed wait passed on a loaded machine whether or not one came.)
    emit_received(stack, first.name)
    runs = wait_for(lambda: finished(api, UPLOAD, 2), 240, "the marker event's run")
    assert len([r for r in flow_runs(api, UPLOAD) if not r.auto_scheduled]) == 2, [(r.name, r.parameters) for r in runs]
    assert min(runs, key=lambda r: r.created).id == run.id  # the burst's run came first, and alone
    assert run.state.is_completed(), run.state.message
    assert run.parameters["source"] == f"s3://{BUCKET}/inbox/"
    assert run.name.startswith("review-inbox-")
    assert {"docreview", "trigger:event", "backend:anthropic"} <= set(run.tags)
    (docreview_run,) = rows(db, "select id from runs where flow_run_id = ?", str(run.id))
    docs = rows(db, "select file_name, status, sha256 from run_documents where run_id = ?", docreview_run[0])
    assert sorted((d[0], d[1]) for d in docs) == sorted([(first.name, "reviewed"), (second.name, "reviewed")])
    for _, _, sha in docs:
        assert rows(db, "select count(*) from findings where sha256 = ?", sha)[0][0] > 0
    assert rows(db, "select count(*) from llm_calls where run_id = ?", docreview_run[0])[0][0] > 0
    print(f"two uploads → one triggered run, completed {elapsed:.0f} s after the first upload")


def test_the_same_object_again_starts_no_second_review(stack):
    s3, db, api = stack["s3"], stack["db"], stack["api_url"]
    first = stack["pdfs"][0]
    before_runs = wait_for(lambda: finished(api, UPLOAD, 1), 240, "the first triggered run")
    before = counts(db)
    s3.put_object(Bucket=BUCKET, Key=f"inbox/{first.name}", Body=first.read_bytes())  # same bytes: same ETag
    time.sleep(3 + WINDOW_S + 6)  # several sweeps (1 s apart), the trigger window, the run's delay
    assert len([r for r in flow_runs(api, UPLOAD) if not r.auto_scheduled]) == len(before_runs)
    assert counts(db) == before
    watched = rows(stack["work"] / "watch.db", "select uri, etag from watched_objects")
    assert len(watched) == 2 and all(uri.startswith(f"s3://{BUCKET}/inbox/") for uri, _ in watched)  # one per key+ETag
    assert stack["watcher"].poll() is None  # it kept sweeping, and emitted nothing new

    # A duplicate that does get through (a new event id): one run, which reuses both documents.
    emit_received(stack, first.name)
    runs = wait_for(lambda: finished(api, UPLOAD, len(before_runs) + 1), 240, "the duplicate's run")
    latest = max(runs, key=lambda r: r.created)
    assert latest.state.is_completed(), latest.state.message
    (docreview_run,) = rows(db, "select id from runs where flow_run_id = ?", str(latest.id))
    metrics = dict(rows(db, "select name, value from run_metrics where run_id = ?", docreview_run[0]))
    assert metrics["documents_skipped"] == 2 and metrics["documents_reviewed"] == 2
    after = counts(db)
    assert after["findings"] == before["findings"] and after["llm_calls"] == before["llm_calls"]
    assert after["runs"] == before["runs"] + 1


def test_the_nightly_run_on_demand_picks_up_a_deferred_document(stack):
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    s3, db, env = stack["s3"], stack["db"], stack["env"]
    pdf = stack["pdfs"][2]
    s3.put_object(Bucket=BUCKET, Key=f"nightly/{pdf.name}", Body=pdf.read_bytes())  # not watched: no trigger
    stack["stub"].outage(seconds=600)
    try:
        done = subprocess.run(
            [
                str(BIN / "docreview"),
                "review",
                f"s3://{BUCKET}/nightly/",
                "--backend",
                "anthropic",
                "--attempts",
                "1",
                "--on-open",
                "defer",
                "--out",
                str(stack["work"] / "out-outage"),
            ],
            env=env,
            cwd=stack["work"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        stack["stub"].outage(seconds=0)
    assert done.returncode == 1, done.stdout + done.stderr  # nothing could be reviewed: the flow run is Failed
    assert "Nothing was reviewed: 1 deferred" in done.stderr and "Traceback" not in done.stdout + done.stderr
    (deferred,) = rows(
        db, "select run_id, reason from run_documents where file_name = ? and status = 'deferred'", pdf.name
    )
    assert "will be retried" in deferred[1]

    with temporary_settings({PREFECT_API_URL: stack["api_url"]}):
        run = run_deployment(NIGHTLY, timeout=300, poll_interval=2)
    assert run.state.is_completed(), run.state.message
    assert run.parameters["source"] == f"s3://{BUCKET}/nightly/"
    assert {"nightly", "trigger:deployment"} <= set(run.tags)  # the nightly deployment, run on demand
    (nightly_run,) = rows(db, "select id from runs where flow_run_id = ?", str(run.id))
    (doc,) = rows(
        db, "select status, sha256 from run_documents where run_id = ? and file_name = ?", nightly_run[0], pdf.name
    )
    assert doc[0] == "reviewed"
    assert rows(db, "select count(*) from findings where sha256 = ?", doc[1])[0][0] > 0
