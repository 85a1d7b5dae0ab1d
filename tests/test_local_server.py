"""Start-up modes (cli/prefect_server.py): the local Prefect server runs share.

A command without ``PREFECT_API_URL`` uses the local server recorded in ``$PREFECT_HOME``
(``docreview server start``) when it answers, instead of a temporary server per run; a configured
API, ``DOCREVIEW_PREFECT_SERVER=temporary`` or a record whose process is gone leave Prefect's own
choice. The slow test runs the real commands: two reviews report to the one local server, with
Prefect's temporary mode switched off so a temporary server could not have been started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli import prefect_server

ROOT = Path(__file__).resolve().parents[1]


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def recorded_server(tmp_path, monkeypatch):
    """A health endpoint recorded as the local server in a fresh PREFECT_HOME (this process's pid)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    state = {"pid": os.getpid(), "port": port, "api_url": f"http://127.0.0.1:{port}/api", "ui_url": "u", "log": "l"}
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(prefect_server.MODE_ENV, raising=False)
    prefect_server.state_file().write_text(json.dumps(state))
    yield state
    server.shutdown()
    server.server_close()


_USE_LOCAL_SERVER = """
import json
from cli import prefect_server
from prefect.settings import get_current_settings
state = prefect_server.use_local_server()
import os
print(json.dumps({"state": state, "env": os.environ.get("PREFECT_API_URL"), "settings": get_current_settings().api.url}))
"""


def test_a_running_local_server_is_used_instead_of_a_temporary_one(recorded_server):
    """In a fresh process (as a command starts: no Prefect settings loaded yet, unlike this test
    process with its Prefect test harness): the recorded server is chosen, PREFECT_API_URL points
    at it and Prefect's settings follow."""
    assert prefect_server.running() == recorded_server
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PREFECT_HOME"] = os.environ["PREFECT_HOME"]  # the fixture's fresh home with the record
    done = subprocess.run(
        [sys.executable, "-c", _USE_LOCAL_SERVER], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["state"] == recorded_server
    assert got["env"] == got["settings"] == recorded_server["api_url"]  # Prefect's settings follow


def test_a_configured_api_or_temporary_mode_keeps_prefects_choice(recorded_server, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    assert prefect_server.use_local_server() is None
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:1/api"
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv(prefect_server.MODE_ENV, "temporary")
    assert prefect_server.use_local_server() is None and "PREFECT_API_URL" not in os.environ
    monkeypatch.setenv(prefect_server.MODE_ENV, "sometimes")
    with pytest.raises(ValueError, match="DOCREVIEW_PREFECT_SERVER"):
        prefect_server.use_local_server()


def test_a_record_whose_process_is_gone_is_dropped(recorded_server, monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = prefect_server.state_file()
    path.write_text(json.dumps({**recorded_server, "pid": dead.pid}))
    assert prefect_server.running() is None and not path.exists()
    monkeypatch.setenv(prefect_server.MODE_ENV, "temporary")
    assert prefect_server.use_local_server() is None and "PREFECT_API_URL" not in os.environ


@pytest.fixture
def in_this_process(monkeypatch):
    """use_local_server called in the test process: it changes neither this process's Prefect settings
    (no refresh; no profile consulted) nor, after the test, its environment."""
    monkeypatch.setattr("prefect.context.refresh_global_settings_context", lambda: None)
    monkeypatch.setattr(prefect_server, "_profile_api_url", lambda: None)
    yield
    os.environ.pop("PREFECT_API_URL", None)


def test_the_first_command_starts_the_server_and_says_so(recorded_server, in_this_process, monkeypatch):
    """No server answers (its record is gone): in ``auto`` the command starts one, says that it is
    starting it and where its UI is, and reports to it; the next command finds it running."""
    prefect_server.state_file().unlink()
    started: list[dict] = []

    def start(**_kw):
        prefect_server.state_file().write_text(json.dumps(recorded_server))  # as start() records it
        started.append(recorded_server)
        return recorded_server, True

    monkeypatch.setattr(prefect_server, "start", start)
    said: list[str] = []
    assert prefect_server.use_local_server(said.append) == recorded_server
    assert os.environ["PREFECT_API_URL"] == recorded_server["api_url"] and len(started) == 1
    assert said[0].startswith("Starting docreview's local Prefect server") and "once" in said[0]
    assert said[1].startswith("Local Prefect server running: UI u") and "docreview server stop" in said[1]
    os.environ.pop("PREFECT_API_URL")  # as in the next command's process
    said.clear()
    assert prefect_server.use_local_server(said.append) == recorded_server  # found, not started again
    assert len(started) == 1 and said == []


def test_a_server_that_cannot_start_leaves_a_temporary_one_or_stops_a_keep_command(
    recorded_server, in_this_process, monkeypatch
):
    prefect_server.state_file().unlink()

    def start(**_kw):
        raise RuntimeError("the Prefect server did not start (log x):\naddress in use")

    monkeypatch.setattr(prefect_server, "start", start)
    said: list[str] = []
    assert prefect_server.use_local_server(said.append) is None and "PREFECT_API_URL" not in os.environ
    assert said[-1] == (
        "The local Prefect server did not start (the Prefect server did not start (log x):); "
        "this run uses a temporary one."
    )
    monkeypatch.setenv(prefect_server.MODE_ENV, "keep")
    with pytest.raises(RuntimeError, match="did not start"):
        prefect_server.use_local_server(said.append)


@pytest.mark.slow
@pytest.mark.integration
def test_reviews_report_to_the_started_local_server(tmp_path):
    """``docreview server start``, then two reviews without PREFECT_API_URL and with Prefect's
    temporary mode off: both flow runs are on the local server (its API lists them), then
    ``docreview server stop`` ends it."""
    import urllib.request

    from docreview_testing.samples import generate_samples

    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", prefect_server.MODE_ENV)}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ALLOW_EPHEMERAL_MODE="false")
    docreview = [sys.executable, "-m", "cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(docreview + list(args), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)

    started = run("server", "start", "--port", str(prefect_server._free_port("127.0.0.1", 0)))
    try:
        assert started.returncode == 0, started.stderr
        state = json.loads(prefect_server.state_file(home).read_text())
        generate_samples(tmp_path / "inbox", count=1)
        for i in (1, 2):
            got = run(
                "review", str(tmp_path / "inbox"), "--backend", "rules", "--rereview",
                "--db", f"sqlite:///{tmp_path / 'r.db'}", "--out", str(tmp_path / f"out{i}"),
            )  # fmt: skip
            assert got.returncode == 0, got.stderr + got.stdout
            assert f"Prefect UI: {state['ui_url']}" in got.stdout
        request = urllib.request.Request(
            f"{state['api_url']}/flow_runs/filter", data=b"{}", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            runs = json.loads(resp.read())
        assert len([r for r in runs if r["state_type"] == "COMPLETED"]) == 2
        assert run("server", "status").returncode == 0
    finally:
        stopped = run("server", "stop")
    assert stopped.returncode == 0 and "Stopped." in stopped.stdout
    assert run("server", "status").returncode == 1 and not prefect_server.state_file(home).exists()


@pytest.mark.slow
@pytest.mark.integration
def test_the_first_review_starts_the_server_and_the_next_is_handed_to_its_runner(tmp_path):
    """Nothing started beforehand (a fresh PREFECT_HOME, no PREFECT_API_URL, the default mode): the
    first ``docreview review`` says it starts the local server and reports to it; ``docreview server
    status`` shows it; once the resident runner serves, the next review is handed to it and starts
    nothing; ``docreview server stop`` ends both. Watchdogs end the server and the runner should the
    test run itself be killed (docreview_testing.reaper)."""
    import time

    from cli import resident
    from docreview_testing.reaper import own_group
    from docreview_testing.samples import generate_samples

    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", prefect_server.MODE_ENV)}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ALLOW_EPHEMERAL_MODE="false", DOCREVIEW_BACKEND="rules")
    generate_samples(tmp_path / "inbox", count=1)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "cli", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
        )

    def review(i: int) -> subprocess.CompletedProcess:
        return run(
            "review",
            str(tmp_path / "inbox"),
            "--db",
            f"sqlite:///{tmp_path / 'r.db'}",
            "--out",
            str(tmp_path / f"o{i}"),
        )

    try:
        first = review(1)
        for path in (prefect_server.state_file(home), resident.record_file(home)):
            if path.exists():
                own_group(int(json.loads(path.read_text())["pid"]))
        assert first.returncode == 0, first.stderr + first.stdout
        assert "Starting docreview's local Prefect server" in first.stderr
        state = json.loads(prefect_server.state_file(home).read_text())
        assert f"Local Prefect server running: UI {state['ui_url']}" in first.stderr
        assert f"Prefect UI: {state['ui_url']}" in first.stdout
        status = run("server", "status")
        assert status.returncode == 0 and state["ui_url"] in status.stdout

        deadline = time.monotonic() + 300  # hang guard: the runner imports Prefect and docreview first
        while "socket" not in json.loads(resident.record_file(home).read_text()):
            assert time.monotonic() < deadline, (home / "docreview-runner.log").read_text()
            time.sleep(0.2)
        second = review(2)
        assert second.returncode == 0, second.stderr + second.stdout
        assert "Starting" not in second.stderr and f"Prefect UI: {state['ui_url']}" in second.stdout
        assert "exit 0 after" in (home / "docreview-runner.log").read_text()  # handed to the runner
        assert json.loads(prefect_server.state_file(home).read_text())["pid"] == state["pid"]  # the same server
    finally:
        stopped = run("server", "stop")
    assert stopped.returncode == 0 and "Stopped." in stopped.stdout
    assert not prefect_server.alive(int(state["pid"]))
    assert run("server", "status").returncode == 1


def test_a_port_left_in_time_wait_by_a_stopped_server_is_still_its_port():
    """After ``server stop`` the port's closed connections sit in TIME_WAIT; the server (uvicorn, with
    SO_REUSEADDR) can bind it again, so the probe must say it is free rather than move the server."""
    import socket

    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the server side closes first: its end of the connection enters TIME_WAIT
        client.close()
    assert prefect_server._free_port("127.0.0.1", port) == port


def test_the_commands_a_test_runs_keep_their_flow_runs_out_of_the_developers_prefect_home():
    """A command's temporary server serves the database in PREFECT_HOME: the test session's commands
    read a home of their own (tests/conftest.py), never ``~/.prefect`` where a developer's runs live."""
    done = subprocess.run(
        [sys.executable, "-c", "from prefect.settings import get_current_settings as s; print(s().home)"],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    home = Path(done.stdout.strip()).resolve()
    assert home != Path("~/.prefect").expanduser().resolve()
    assert home.name.startswith("docreview-tests-prefect-") and home.is_dir()
