"""The resident runner: ``docreview review`` without the import cost.

A ``docreview review`` process spends most of a one-contract run importing Prefect, SQLModel and
docreview itself (about 3.5 s of 5 s on two quiet cores, 5–6 s under load) before it reads a page.
The resident runner pays that once: ``docreview server start`` starts it beside the local Prefect
server (``python -m cli.runner``, :mod:`cli.runner`; its own session, log
``$PREFECT_HOME/docreview-runner.log``).
It imports those libraries and nothing else — no thread, no event loop, no database engine, no
console — and waits on a Unix socket. A ``docreview review`` command (:func:`hand_off`, called by
:mod:`cli.launch` before anything heavy is imported) connects, sends its argv, working directory,
environment and umask, and passes its standard input, output and error as file descriptors
(``SCM_RIGHTS``). The runner forks; the child takes those descriptors, that directory and that
environment and runs the command as the command itself would have, writing to the user's terminal;
the runner sends back the child's pid, then its exit status. The command forwards SIGINT, SIGTERM
and SIGHUP to the child, so Ctrl-C still stops a run (exit 130). Every run is a process of its own
(fork), so runs share no state; the Prefect UI shows them as before.

The hand-off happens only when it cannot change what the command does, otherwise the command runs
itself as before (nothing is lost, only the time):

- ``DOCREVIEW_RESIDENT`` is ``auto`` (the default; ``off`` starts no runner) and the command is
  ``review`` without ``--verbose``;
- a runner is recorded in ``$PREFECT_HOME/docreview-runner.json`` and accepts the connection, and
  its process belongs to this user (``SO_PEERCRED``; the socket is also mode 0600);
- the runner's **fingerprint** equals the command's: the same interpreter, the same docreview code
  (newest modification time and count of its ``.py`` files) and installed packages (the
  site-packages directory's modification time), the same ``PREFECT_*``, ``PYTHON*``, ``HOME`` and
  ``DO_NOT_TRACK`` variables (read by Prefect at import time) and the same Prefect API (the local
  server the command would report to). When docreview's code changes the runner restarts itself.
  A refused command says so in one line on standard error; ``docreview server status`` asks the
  runner the same check (:func:`probe`) and says why it would refuse this checkout.

The runner exits when the local server it was started for stops (``docreview server stop`` stops
both). Only the standard library is imported at module level: :func:`hand_off` costs milliseconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import sysconfig
from pathlib import Path
from typing import Any

#: ``auto`` (default: hand ``review`` to a runner when one can run it; ``docreview server start``
#: starts one) or ``off`` (no runner started, every command runs itself).
RESIDENT_ENV = "DOCREVIEW_RESIDENT"
RESIDENT_MODES = ("auto", "off")
#: The commands a runner may run (a long-running ``watch`` or ``serve`` gains nothing from it).
HANDED_OFF = ("review",)
#: Packages whose code the fingerprint covers.
CODE_PACKAGES = ("cli", "flows", "tasks", "schemas")
#: Seconds a command waits for the runner's first answer (its child's pid) before running itself
#: (a run forked meanwhile is interrupted when the runner sees the command gone).
ANSWER_TIMEOUT_S = 30.0
#: Seconds ``docreview server status`` waits for the runner's answer to whether it would serve.
PROBE_TIMEOUT_S = 5.0


def mode() -> str:
    """``DOCREVIEW_RESIDENT`` (``auto`` when unset or empty). Raises ``ValueError`` for another value."""
    from cli.prefect_server import choice

    return choice(RESIDENT_ENV, RESIDENT_MODES)


def _enabled() -> bool:
    try:
        return mode() == "auto"
    except ValueError:
        return False  # the command itself says what is wrong (exit 2)


def _home(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("PREFECT_HOME") or "~/.prefect").expanduser()


def record_file(home: Path | None = None) -> Path:
    """Where the runner is recorded: ``$PREFECT_HOME/docreview-runner.json`` (pid, socket, fingerprint)."""
    return (home or _home()) / "docreview-runner.json"


def socket_path(home: Path) -> Path:
    """The runner's socket: ``$PREFECT_HOME/docreview-runner.sock``, or a name under the temporary
    folder derived from ``home`` when that path is too long for a Unix socket (108 bytes on Linux)."""
    path = home / "docreview-runner.sock"
    if len(os.fsencode(path)) < 100:
        return path
    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    return Path("/tmp") / f"docreview-runner-{os.getuid()}-{digest}.sock"


def code_stamp(root: Path | None = None) -> str:
    """``<count>:<total bytes>:<newest change ns>`` of the files of docreview's packages under
    ``root`` (the folder holding ``cli/``: code, and the model files read at run time) and the
    site-packages folder (it changes when a package is installed, upgraded or removed). A file's
    change time is the later of its modification and inode change times: a copy that keeps an old
    modification time (``cp -p``, ``rsync -a``, ``tar x``) still changes the stamp. About a millisecond."""
    root = root or Path(__file__).resolve().parent.parent
    count, size, newest = 0, 0, 0
    for package in CODE_PACKAGES:
        for folder, dirs, files in os.walk(root / package):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith((".pyc", ".pyo")):
                    st = os.stat(os.path.join(folder, name))
                    count, size = count + 1, size + st.st_size
                    newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    with contextlib.suppress(OSError, KeyError):
        st = os.stat(sysconfig.get_paths()["purelib"])
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return f"{count}:{size}:{newest}"


def fingerprint_items(env: dict[str, str] | os._Environ[str], api_url: str, stamp: str | None = None) -> dict[str, str]:
    """What a command and a runner must share for a hand-off, item by item (name → sha256 hex of
    its value, so a refusal can name what differs without logging a value): the interpreter, the
    code's folder and stamp (:func:`code_stamp`), the Prefect API, ``PREFECT_HOME`` as the folder it
    resolves to (set or not) and the variables read at import time
    (:func:`cli.prefect_server.import_time_env`)."""
    from cli.prefect_server import import_time_env

    items = {
        **import_time_env(env),
        "PREFECT_HOME": str(_home(env).resolve()),
        "PREFECT_API_URL": api_url,
        "python": f"{sys.executable} {sys.version}",
        "code": stamp or code_stamp(),
        "code folder": str(Path(__file__).resolve().parent.parent),  # another checkout is other code
    }
    return {k: hashlib.sha256(v.encode()).hexdigest() for k, v in sorted(items.items())}


def refusal(theirs: dict[str, str], expected: dict[str, str]) -> list[str]:
    """The names of the :func:`fingerprint_items` that differ between a command's (``theirs``) and a
    runner's (``expected``), sorted; empty when the runner serves the command. The runner's check of
    every request (:func:`cli.runner._serve_one`), which ``docreview server status`` asks it to make."""
    return sorted(k for k in set(theirs) | set(expected) if theirs.get(k) != expected.get(k))


def refusal_text(differ: list[str]) -> str:
    """Why a runner refuses, in words, from :func:`refusal`'s names (never a value):
    ``"its code changed since it started"``, ``"its PREFECT_LOGGING_LEVEL setting differs from this shell's"``."""
    reasons = []
    if "code folder" in differ:
        reasons.append("it runs another checkout's code")
    elif "code" in differ:
        reasons.append("its code changed since it started")  # docreview's files or the installed packages
    if "python" in differ:
        reasons.append("it runs another Python")
    if "PREFECT_API_URL" in differ:
        reasons.append("commands here report to another Prefect API")
    if "PREFECT_HOME" in differ:
        reasons.append("commands here use another PREFECT_HOME")
    settings = [k for k in differ if k not in ("code", "code folder", "python", "PREFECT_API_URL", "PREFECT_HOME")]
    if settings:
        reasons.append(
            f"its {', '.join(settings)} setting{'s' if len(settings) > 1 else ''} differ"
            f"{'' if len(settings) > 1 else 's'} from this shell's"
        )
    return "; ".join(reasons) or "its fingerprint differs"


def fingerprint(env: dict[str, str] | os._Environ[str], api_url: str, stamp: str | None = None) -> str:
    """sha256 hex of :func:`fingerprint_items`: equal for a command and a runner that may share a run."""
    return hashlib.sha256(json.dumps(fingerprint_items(env, api_url, stamp)).encode()).hexdigest()


def effective_env(env: dict[str, str], verbose: bool = False) -> tuple[dict[str, str], str | None]:
    """``env`` with the defaults :func:`cli.common.prepare_environment` sets before Prefect is
    imported, and the Prefect API the command would use (None: a temporary server of its own)."""
    from cli.prefect_server import mode, quiet_defaults, running

    env = quiet_defaults(dict(env), verbose)
    if env.get("PREFECT_API_URL"):
        return env, env["PREFECT_API_URL"]
    if mode() == "temporary":  # raises ValueError for a bad value: the command says so itself
        return env, None
    state = running(_home(env))
    return env, (str(state["api_url"]) if state else None)


# --- the command's side ------------------------------------------------------------------------


def _send(sock: socket.socket, payload: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(payload).encode()
    frame = struct.pack("!I", len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], fds)
        sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)


def _answers(sock: socket.socket):
    """The runner's answers: one JSON object per line."""
    buffer = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def _peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``), None where not available."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[2]


def hand_off(argv: list[str]) -> int | None:
    """Run ``docreview`` ``argv`` (without the program name) in the resident runner; returns the
    command's exit status, or None when it was not handed off (see the module docstring: the
    caller then runs the command itself). Never raises for a missing, stale or refusing runner."""
    if not _enabled() or not argv or argv[0] not in HANDED_OFF:
        return None
    if any(a in ("--verbose", "-v", "--help") for a in argv):
        return None
    try:
        for fd in (0, 1, 2):  # a closed one would be taken by the socket and passed on as the run's
            os.fstat(fd)
        record = json.loads(record_file().read_text(encoding="utf-8"))
        address = str(record["socket"])
        env, api_url = effective_env(dict(os.environ))
        if api_url is None:
            return None
        request = {
            "argv": ["docreview", *argv],
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _current_umask(),
            "items": fingerprint_items(env, api_url),
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_TIMEOUT_S)
        sock.connect(address)
        if _peer_uid(sock) not in (None, os.getuid()):
            raise PermissionError("the runner's socket belongs to another user")
        _send(sock, request, [0, 1, 2])
        answers = _answers(sock)
        first = next(answers, None)
        if first and "refused" in first:  # another fingerprint: run here, and say why (one dim line)
            _say_refused(first.get("differ") or [])
        if not first or "pid" not in first:
            raise ConnectionRefusedError("refused")
    except (OSError, ValueError):
        sock.close()
        return None
    sock.settimeout(None)
    return _wait_for_exit(sock, answers, int(first["pid"]))


def _say_refused(differ: list[str]) -> None:
    """One line on standard error (dim on a terminal) when the runner refused this command."""
    line = (
        f"the resident runner will not run this command ({refusal_text(differ)}): it runs here, with its "
        "start-up cost; see docreview server status"
    )
    with contextlib.suppress(OSError, ValueError):
        tty = sys.stderr.isatty()
        sys.stderr.write(f"\x1b[2m{line}\x1b[0m\n" if tty else f"{line}\n")
        sys.stderr.flush()


def probe(home: Path) -> list[str] | None:
    """Ask the runner recorded in ``home`` whether it would run a ``docreview review`` of this
    process's environment and checkout (it makes its own check, :func:`refusal`, and runs nothing):
    the names that differ, empty when it would; None when it does not answer (not listening:
    starting, or restarting itself after a code change)."""
    try:
        record = json.loads(record_file(home).read_text(encoding="utf-8"))
        address = str(record["socket"])
        env, api_url = effective_env(dict(os.environ))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if api_url is None:  # commands here start a temporary Prefect server: they never hand off
        return ["PREFECT_API_URL"]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(PROBE_TIMEOUT_S)
        sock.connect(address)
        _send(sock, {"probe": True, "items": fingerprint_items(env, api_url)})
        answer = next(_answers(sock), None)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    if not answer:
        return None
    return [str(k) for k in answer.get("differ") or []] if "refused" in answer else []


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _wait_for_exit(sock: socket.socket, answers, pid: int) -> int:
    """Forward SIGINT, SIGTERM and SIGHUP to the run's process until the runner reports its exit
    status; 128 + signal number when it was killed, 1 when the runner went away first."""

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                answer = next(answers, None)
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries recv itself
                continue
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
    if answer is None or "exit" not in answer:
        sys.stderr.write("error: the resident runner stopped during the run (see docreview-runner.log)\n")
        return 1
    return int(answer["exit"])


def start(home: Path, api_url: str, server_pid: int, base_env: dict[str, str] | None = None) -> int:
    """Start a runner for the local server ``server_pid`` at ``api_url`` (its own session, output to
    ``$PREFECT_HOME/docreview-runner.log``), with ``base_env``'s import-time variables instead of
    this process's when given; returns its pid. It serves once its imports are done
    (seconds): until then commands run themselves."""
    import subprocess

    from cli.prefect_server import import_time_env

    env = dict(os.environ)
    if base_env is not None:  # the import-time settings recorded for this server, not this command's
        env = {k: v for k, v in env.items() if k not in import_time_env(env)} | base_env
    env.update(PREFECT_HOME=str(home), PREFECT_API_URL=api_url)
    with open(home / "docreview-runner.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.runner", "--home", str(home), "--server-pid", str(server_pid)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(Path(__file__).resolve().parent.parent),
            start_new_session=True,
        )
    return proc.pid


def ensure(home: Path, api_url: str, server_pid: int) -> int | None:
    """Start a runner for this server unless one is recorded and alive, one could not serve this
    code (recorded ``disabled``, with the reason in its log), or ``DOCREVIEW_RESIDENT`` is ``off``;
    returns the new runner's pid, or None."""
    from cli.prefect_server import _locked, alive

    if not _enabled():
        return None
    with _locked(home):  # two commands at once start one runner
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = json.loads(record_file(home).read_text(encoding="utf-8"))
            if int(record["server_pid"]) == server_pid:
                if alive(int(record["pid"])):
                    return None
                if record.get("disabled") and record.get("code") == code_stamp():
                    return None  # it could not serve this code (its log says why): not again
        pid = start(home, api_url, server_pid, _server_runner_env(home))
        # recorded at once as starting (no socket yet: commands run themselves until it serves)
        _write_record(home, {"pid": pid, "server_pid": server_pid, "api_url": api_url, "starting": True})
        return pid


def _server_runner_env(home: Path) -> dict[str, str] | None:
    """The import-time variables the local server's ``server start`` recorded for its runner (None
    for a server recorded without them): a command with other settings that starts the runner again
    does not give it those settings, which every ordinary command would then not match."""
    from cli.prefect_server import state_file

    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        recorded = json.loads(state_file(home).read_text(encoding="utf-8"))["runner_env"]
        return {str(k): str(v) for k, v in recorded.items()}
    return None


def _write_record(home: Path, record: dict[str, Any]) -> None:
    tmp = record_file(home).with_suffix(f".json.{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    tmp.replace(record_file(home))


def status(home: Path, server_pid: int) -> dict[str, Any] | None:
    """The runner recorded for the local server ``server_pid`` when its process is alive: its record
    (``pid``; ``starting`` while it imports, ``socket`` once it serves), else None."""
    from cli.prefect_server import alive

    try:
        record = json.loads(record_file(home).read_text(encoding="utf-8"))
        if int(record["server_pid"]) != server_pid or not alive(int(record["pid"])):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(record)


def stop(home: Path) -> None:
    """Stop the recorded runner (SIGTERM) and remove its record and socket."""
    try:
        record = json.loads(record_file(home).read_text(encoding="utf-8"))
        pid = int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(OSError):
        record_file(home).unlink()
    with contextlib.suppress(OSError, KeyError):
        Path(record["socket"]).unlink()
