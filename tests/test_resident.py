"""The resident runner (cli/resident.py, cli/runner.py): ``docreview review`` handed to a process that has
already imported Prefect and docreview.

What a command must get from a hand-off is what it would have got running itself: its output on
its own standard streams, its exit status, its working directory and environment, Ctrl-C. What it
must never get is a run under other code or another Prefect configuration: the fingerprint decides,
and every refusal runs the command itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cli import resident

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCREVIEW_"))}
    env.update(extra)
    return env


def test_the_fingerprint_covers_what_prefect_reads_at_import_and_nothing_else(tmp_path):
    base = {"PREFECT_HOME": str(tmp_path), "HOME": "/root", "PATH": "/bin"}
    same = resident.fingerprint(base, "http://a/api", stamp="1:1")
    assert resident.fingerprint({**base, "PATH": "/usr/bin", "TERM": "xterm"}, "http://a/api", stamp="1:1") == same
    assert resident.fingerprint({**base, "DOCREVIEW_BACKEND": "rules"}, "http://a/api", stamp="1:1") == same
    assert resident.fingerprint({**base, "PREFECT_LOGGING_LEVEL": "DEBUG"}, "http://a/api", stamp="1:1") != same
    assert resident.fingerprint({**base, "PYTHONWARNINGS": "error"}, "http://a/api", stamp="1:1") != same
    assert resident.fingerprint(base, "http://b/api", stamp="1:1") != same
    assert resident.fingerprint(base, "http://a/api", stamp="1:2") != same
    # PREFECT_HOME counts as the folder it names: unset is ~/.prefect
    default_home = {"HOME": base["HOME"], "PATH": "/bin"}
    explicit = {**default_home, "PREFECT_HOME": str(Path("~/.prefect").expanduser())}
    assert resident.fingerprint(default_home, "x", stamp="s") == resident.fingerprint(explicit, "x", stamp="s")


def test_the_code_stamp_changes_with_any_file_of_the_packages(tmp_path):
    for package in resident.CODE_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    before = resident.code_stamp(tmp_path)
    (tmp_path / "tasks" / "__pycache__").mkdir()
    (tmp_path / "tasks" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    assert resident.code_stamp(tmp_path) == before  # bytecode is not code
    (tmp_path / "tasks" / "model.npz.xz").write_bytes(b"weights")
    assert resident.code_stamp(tmp_path) != before  # a model file read at run time is
    stamp = resident.code_stamp(tmp_path)
    os.utime(tmp_path / "cli" / "__init__.py", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert resident.code_stamp(tmp_path) != stamp
    # new code under an old modification time (cp -p, rsync -a, tar x): the inode change time moves
    stamp = resident.code_stamp(tmp_path)
    old = os.stat(tmp_path / "tasks" / "__init__.py").st_mtime_ns
    time.sleep(0.01)
    (tmp_path / "tasks" / "__init__.py").write_text("X = 2\n")
    os.utime(tmp_path / "tasks" / "__init__.py", ns=(old, old))
    assert resident.code_stamp(tmp_path) != stamp


def test_a_refusal_names_what_differs_never_a_value(tmp_path):
    base = {"PREFECT_HOME": str(tmp_path), "HOME": "/root"}
    mine = resident.fingerprint_items(base, "http://a/api", stamp="1:1:1")
    theirs = resident.fingerprint_items({**base, "PREFECT_API_KEY": "pnu_secret"}, "http://a/api", stamp="1:1:1")
    assert {k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k)} == {"PREFECT_API_KEY"}
    assert "pnu_secret" not in json.dumps(theirs)  # values are hashed


def test_why_a_runner_refuses_is_said_in_words_and_an_absent_one_is_not_asked(tmp_path, monkeypatch):
    assert resident.refusal({"code": "a", "python": "p"}, {"code": "b", "python": "p"}) == ["code"]
    assert resident.refusal_text(["code"]) == "its code changed since it started"
    assert resident.refusal_text(["code", "code folder"]) == "it runs another checkout's code"
    assert resident.refusal_text(["PREFECT_LOGGING_LEVEL", "PYTHONWARNINGS"]) == (
        "its PREFECT_LOGGING_LEVEL, PYTHONWARNINGS settings differ from this shell's"
    )
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert resident.probe(tmp_path) is None  # nothing recorded
    resident.record_file(tmp_path).write_text(json.dumps({"pid": 1, "socket": str(tmp_path / "gone.sock")}))
    assert resident.probe(tmp_path) is None  # recorded, not listening (restarting after a code change)


def test_status_advises_a_restart_only_where_one_helps(monkeypatch):
    """A runner refusing a shell that asks for a temporary Prefect server is not helped by a restart."""
    from cli.server import _remedy

    monkeypatch.delenv("DOCREVIEW_PREFECT_SERVER", raising=False)
    assert _remedy(["code"]) == "restart with docreview server stop && docreview server start"
    monkeypatch.setenv("DOCREVIEW_PREFECT_SERVER", "temporary")
    assert _remedy(["PREFECT_API_URL"]).startswith("this shell sets DOCREVIEW_PREFECT_SERVER=temporary")
    assert _remedy(["code"]).startswith("restart")


def test_a_runner_started_again_by_a_command_gets_the_servers_settings(tmp_path, monkeypatch):
    """``server start`` records the import-time settings it ran with; a command with other ones that
    starts the runner again (the old one died) does not hand them on, or every ordinary command
    would be refused until the server restarts."""
    from cli import prefect_server

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    server_env = {"PREFECT_LOGGING_LEVEL": "INFO", "HOME": os.environ.get("HOME", "/root")}
    prefect_server.state_file(tmp_path).write_text(json.dumps({"pid": 1, "runner_env": server_env}))
    assert resident._server_runner_env(tmp_path) == server_env
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")  # the command that restarts it
    launched: dict[str, str] = {}

    class Recorded:
        def __init__(self, cmd, env, **kwargs):
            launched.update(env)
            self.pid = 4242

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    assert resident.start(tmp_path, "http://x/api", 1, resident._server_runner_env(tmp_path)) == 4242
    assert launched["PREFECT_LOGGING_LEVEL"] == "INFO" and launched["PREFECT_API_URL"] == "http://x/api"


def test_only_a_plain_review_is_handed_off(tmp_path, monkeypatch):
    """Nothing is recorded in this PREFECT_HOME, and the other cases never look: the command runs itself."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv(resident.RESIDENT_ENV, raising=False)
    for argv in (["review", "x"], ["watch", "x"], ["review", "x", "--verbose"], ["review", "--help"], []):
        assert resident.hand_off(argv) is None
    # a closed standard stream: the command runs itself (the socket would take its number)
    monkeypatch.setattr(os, "fstat", lambda fd: (_ for _ in ()).throw(OSError(9, "closed")) if fd == 0 else None)
    assert resident.hand_off(["review", "x"]) is None
    monkeypatch.undo()
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv(resident.RESIDENT_ENV, raising=False)
    # a record whose socket nobody listens on
    resident.record_file(tmp_path).write_text(json.dumps({"pid": 1, "socket": str(tmp_path / "gone.sock")}))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert resident.hand_off(["review", "x"]) is None
    monkeypatch.setenv(resident.RESIDENT_ENV, "off")
    assert resident.hand_off(["review", "x"]) is None


def test_ctrl_c_reaches_the_run_and_its_status_comes_back():
    """The command forwards SIGINT to the run's process (pid from the runner) and returns the status
    the runner reports: here a sleeping process stands in for the run and the test plays the runner."""
    # the stand-in takes SIGINT's default action itself: a CI job started in the background
    # inherits SIGINT ignored, and an ignored signal stays ignored across exec
    stand_in = (
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); print('ready', flush=True); time.sleep(60)"
    )
    run = subprocess.Popen([sys.executable, "-c", stand_in], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stdout.readline() == "ready\n"
    ours, runner = socket.socketpair()

    def play_runner() -> None:
        deadline = time.monotonic() + 60  # hang guard only
        while not callable(signal.getsignal(signal.SIGINT)) or signal.getsignal(signal.SIGINT).__name__ != "forward":
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the command's terminal
        status = run.wait(timeout=60)
        runner.sendall(json.dumps({"exit": 128 - status if status < 0 else status}).encode() + b"\n")

    before = signal.getsignal(signal.SIGINT)
    player = threading.Thread(target=play_runner, daemon=True)
    player.start()
    try:
        code = resident._wait_for_exit(ours, resident._answers(ours), run.pid)
    finally:
        run.kill()
        runner.close()
    player.join(timeout=60)
    run.stdout.close()
    assert run.wait() == -signal.SIGINT  # the run got the Ctrl-C
    assert code == 128 + signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is before  # the command's own handler is back


def test_a_runner_that_goes_away_mid_run_is_a_failure_said_once(capsys):
    ours, runner = socket.socketpair()
    runner.close()
    assert resident._wait_for_exit(ours, resident._answers(ours), os.getpid()) == 1
    assert "resident runner stopped during the run" in capsys.readouterr().err


@pytest.fixture
def runner(tmp_path, prefect_harness):
    """A runner for the session's Prefect API in a fresh PREFECT_HOME (the test process stands in
    for the local server whose life it follows); yields ``(env, home)``."""
    from prefect.settings import PREFECT_API_URL

    home = tmp_path / "prefect-home"
    home.mkdir()
    env = _env(PREFECT_HOME=str(home), PREFECT_API_URL=PREFECT_API_URL.value())
    with open(home / "runner.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.runner", "--home", str(home), "--server-pid", str(os.getpid())],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 180  # hang guard: the runner imports Prefect and docreview first
    while not resident.record_file(home).exists():
        assert proc.poll() is None, (home / "runner.log").read_text()
        assert time.monotonic() < deadline, (home / "runner.log").read_text()
        time.sleep(0.2)
    yield env, home
    proc.terminate()
    proc.wait(timeout=60)
    assert not resident.record_file(home).exists()  # it forgets itself on the way out


def _review(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli", "review", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.mark.integration
def test_a_review_handed_to_the_runner_is_the_review_itself(runner, tmp_path):
    from docreview_testing.samples import generate_samples

    env, home = runner
    generate_samples(tmp_path / "inbox", count=1)
    work = tmp_path / "work"
    work.mkdir()
    # relative paths: the run works in the command's directory, with the command's environment
    got = _review({**env, "DOCREVIEW_BACKEND": "rules"}, work, "../inbox", "--db", "sqlite:///r.db", "--out", "out")
    assert got.returncode == 0, got.stderr + got.stdout
    assert "Documents" in got.stdout and "Report:" in got.stdout  # its summary on the command's stdout
    report = json.loads((work / "out" / "report.json").read_text())
    assert report["run"]["backend"].startswith("rules") and (work / "r.db").exists()
    log = (home / "runner.log").read_text()
    assert "docreview review in " + str(work) in log and "exit 0 after" in log  # it ran in the runner

    missing = _review(env, work, "no-such-folder")
    assert missing.returncode == 2 and "source not found" in missing.stderr  # the status and stderr come back
    assert "exit 2 after" in (home / "runner.log").read_text()

    other = _review({**env, "PREFECT_CLIENT_MAX_RETRIES": "7"}, work, "../inbox", "--db", "sqlite:///r.db")
    assert other.returncode == 0, other.stderr  # another Prefect setting: refused, so it ran itself
    assert (
        "refused a command (it runs itself): its PREFECT_CLIENT_MAX_RETRIES differ" in (home / "runner.log").read_text()
    )
    assert (home / "runner.log").read_text().count("exit 0 after") == 1


def test_a_bad_resident_setting_stops_the_command_before_the_run(tmp_path):
    env = _env(PREFECT_HOME=str(tmp_path), DOCREVIEW_RESIDENT="sometimes", DOCREVIEW_BACKEND="rules")
    got = _review(env, tmp_path, str(tmp_path), "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert got.returncode == 2, got.stderr
    assert "DOCREVIEW_RESIDENT='sometimes': choose auto or off" in got.stderr
    assert not (tmp_path / "r.db").exists()  # nothing ran


def test_a_runner_that_could_not_serve_this_code_is_not_started_again(tmp_path, monkeypatch):
    """A runner that failed (its log says why) records ``disabled``: commands do not start it again
    for the same server and code, so each command does not pay a runner's imports; new code does."""
    started: list[int] = []
    monkeypatch.setattr(
        resident, "start", lambda home, api_url, server_pid, base: started.append(server_pid) or 99999999
    )
    monkeypatch.delenv(resident.RESIDENT_ENV, raising=False)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    record = {"pid": gone.pid, "server_pid": 42, "disabled": "boom", "code": resident.code_stamp()}
    resident.record_file(tmp_path).write_text(json.dumps(record))
    assert resident.ensure(tmp_path, "http://x/api", 42) is None and started == []
    resident.record_file(tmp_path).write_text(json.dumps({**record, "code": "0:0"}))  # the code changed since
    assert resident.ensure(tmp_path, "http://x/api", 42) == 99999999 and started == [42]
    assert json.loads(resident.record_file(tmp_path).read_text())["starting"] is True
    monkeypatch.setenv(resident.RESIDENT_ENV, "off")
    resident.record_file(tmp_path).unlink()
    assert resident.ensure(tmp_path, "http://x/api", 42) is None and started == [42]


@pytest.mark.integration
def test_a_run_whose_command_is_killed_is_interrupted(stub_env, runner, tmp_path):
    """The run is the runner's child, not the command's: when the command dies (SIGKILL, a closed
    terminal) the runner sees its connection close and interrupts the run (SIGINT, as Ctrl-C would),
    so no run goes on unseen. The test double holds the run's model answers, so it is still running."""
    from docreview_testing.samples import generate_samples

    env, home = runner
    generate_samples(tmp_path / "inbox", count=1)
    stub_env.stub.hold_first_token()
    try:
        command = subprocess.Popen(
            [sys.executable, "-m", "cli", "review", str(tmp_path / "inbox"), "--backend", "anthropic"]
            + ["--db", f"sqlite:///{tmp_path / 'r.db'}", "--out", str(tmp_path / "out")],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300  # hang guard only
        while stub_env.stub.in_flight == 0:  # the run is waiting on a held answer
            assert command.poll() is None and time.monotonic() < deadline, (home / "runner.log").read_text()
            time.sleep(0.1)
        log = (home / "runner.log").read_text()
        run_pid = int(log.rsplit("docreview review in", 1)[0].rsplit("pid ", 1)[1].split(":")[0])
        command.kill()
        command.wait(timeout=60)
        while f"pid {run_pid}: exit" not in (home / "runner.log").read_text():
            assert time.monotonic() < deadline, (home / "runner.log").read_text()
            time.sleep(0.2)
    finally:
        stub_env.stub.release_first_token()
    log = (home / "runner.log").read_text()
    assert f"pid {run_pid}: its command went away: interrupting the run" in log
    assert f"pid {run_pid}: exit 0" not in log  # it did not run to its end


@pytest.mark.integration
def test_server_status_says_when_the_runner_will_not_serve_this_checkout(runner, monkeypatch, capsys):
    """``server status`` asks the runner itself (the check it makes of every command): serving, or
    running but refusing this checkout and why; a command it refuses says so in one line and runs itself.
    Each answer is awaited: a file saved in this checkout meanwhile makes the runner restart itself."""
    from typer.testing import CliRunner

    from cli import prefect_server
    from cli.app import app

    env, home = runner
    # the test process stands in for the local server the runner follows (its pid, the session's API)
    state = {"pid": os.getpid(), "port": 0, "api_url": env["PREFECT_API_URL"], "ui_url": "u", "log": "l"}
    prefect_server.state_file(home).write_text(json.dumps(state))

    def this_shell(**extra: str) -> None:  # the runner's environment, and extra settings
        for name in list(os.environ):
            if name.startswith(("PREFECT_", "DOCREVIEW_")):
                monkeypatch.delenv(name)
        for name, value in {
            "PREFECT_HOME": env["PREFECT_HOME"],
            "PREFECT_API_URL": env["PREFECT_API_URL"],
            **extra,
        }.items():
            monkeypatch.setenv(name, value)

    def status_until(wanted: str) -> str:
        deadline = time.monotonic() + 120  # hang guard: a runner restarting after a code change imports again
        while True:
            got = CliRunner().invoke(app, ["server", "status"], env={"COLUMNS": "300"})
            said = " ".join(got.output.split())
            assert got.exit_code == 0, said
            if wanted in said or time.monotonic() > deadline:
                return said
            time.sleep(0.5)

    this_shell()
    pid = json.loads(resident.record_file(home).read_text())["pid"]
    assert f"Resident runner: serving (pid {pid})" in status_until("serving")
    # this checkout's code changed since the runner started (here: as this process computes it)
    monkeypatch.setattr(resident, "code_stamp", lambda root=None: "0:0:0")
    said = status_until("will not serve")
    assert (
        f"Resident runner: running (pid {pid}) but will not serve this checkout: its code changed since it started"
        in said
    )
    assert "(restart with docreview server stop && docreview server start)" in said and "serving" not in said
    capsys.readouterr()
    deadline = time.monotonic() + 120
    while True:  # refused: the command runs itself, and says why in one line
        assert resident.hand_off(["review", "inbox"]) is None
        err = capsys.readouterr().err
        if err or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # it did not answer (restarting after a file of this checkout changed): no line
    assert err.count("\n") == 1 and "the resident runner will not run this command" in err, err
    assert "its code changed since it started" in err
    monkeypatch.undo()
    this_shell(PREFECT_CLIENT_MAX_RETRIES="7")  # a Prefect setting of this shell only
    refusals = (home / "runner.log").read_text().count("refused a command")
    said = status_until("will not serve")
    assert "will not serve this checkout: " in said  # (its code too, when a file changed meanwhile)
    assert "its PREFECT_CLIENT_MAX_RETRIES setting differs from this shell's" in said and "=7" not in said
    assert (home / "runner.log").read_text().count("refused a command") == refusals  # asking is not logged
