"""The local Prefect server that runs share: started on first use, ``docreview server start|stop|status``.

Without ``PREFECT_API_URL`` Prefect would start a temporary server for every run (its own process:
an import of the whole server, the database check, 10-20 s on two cores) and stop it when the run
ends, its UI off. A server started once and kept running instead makes every later run start at
once (with the resident runner, :mod:`cli.resident`, in about two seconds in all), and its UI shows
every run while it is up. This module starts such a server (``prefect server start``, UI on, in its
own session so it outlives the command), records it in ``$PREFECT_HOME/docreview-server.json`` (pid,
port, API and UI addresses) and finds it again: :func:`use_local_server` is called by every command
before Prefect is imported (:func:`cli.common.prepare_environment`), so ``docreview review``,
``watch``, ``serve`` and ``eval`` all report to the same server.

Which API a command uses (``DOCREVIEW_PREFECT_SERVER``, default ``auto``):

- ``PREFECT_API_URL`` set (environment or Prefect profile): that API, always.
- ``auto``: the recorded local server when it answers ``/api/health``; when none does, the command
  starts one first and leaves it running for the next commands (the first command on a machine, or
  the first after ``docreview server stop``, says so and waits for it once; ``docreview server
  stop`` stops it). When it cannot start, the command says why and uses a temporary server.
- ``keep``: the same, but a server that cannot start ends the command (exit 2).
- ``temporary``: Prefect's temporary server for this run, even when a local one is running; nothing
  is started or left running (tests, CI, a one-off container).

Only the standard library is imported here: finding the server costs milliseconds, and
nothing of Prefect is loaded before :func:`cli.common.prepare_environment` has set its defaults.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The environment variable choosing how a command finds its Prefect API (see the module docstring).
MODE_ENV = "DOCREVIEW_PREFECT_SERVER"
MODES = ("auto", "keep", "temporary")
#: Prefect's own default port for ``prefect server start``; another free port when it is taken.
DEFAULT_PORT = 4200
#: Seconds ``start`` waits for the new server to answer ``/api/health``.
START_TIMEOUT_S = 120.0
#: Seconds a health check of a recorded server may take before it counts as not running.
HEALTH_TIMEOUT_S = 2.0


_QUIET_ENV = {
    # The temporary Prefect server logs its own shutdown at ERROR; keep that out of a normal run.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Prefect's client telemetry (and its first-run notice on a terminal): off unless asked for.
    "DO_NOT_TRACK": "1",
    # The flow run's log keeps what an operator reads (documents not reviewed, breaker changes,
    # run summary) instead of one "Finished in state Completed()" line per task run.
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
    # Prefect's temporary server takes about 10 s to start on two cores; on a loaded machine it has
    # taken over 60 s, and a run that cannot reach it fails before it reads a document.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


def import_time_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The variables of ``env`` that Python and Prefect read when they start or are imported
    (``PREFECT_*`` but the API URL and home, ``PYTHON*``, ``HOME``, ``DO_NOT_TRACK``): what the
    resident runner must share with a command it runs (:mod:`cli.resident`)."""
    return {
        k: v
        for k, v in env.items()
        if (k.startswith(("PREFECT_", "PYTHON")) or k in ("HOME", "DO_NOT_TRACK"))
        and k not in ("PREFECT_API_URL", "PREFECT_HOME")
    }


def quiet_defaults(env: dict[str, str], verbose: bool) -> dict[str, str]:
    """``env`` with Prefect's quiet defaults added where unset (variables Prefect reads when it is
    imported): no telemetry, no per-task-run log lines and, unless ``verbose``, no Prefect log lines
    on the console (the API handler keeps INFO, so the Prefect UI still shows every line)."""
    env = dict(env)
    for key, value in _QUIET_ENV.items():
        env.setdefault(key, value)
    if not verbose:
        # Prefect's console handler reads its level from the environment (logging.yml).
        env.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
        # Prefect's internal services (e.g. the events worker) log to stderr through its `debug`
        # handler; in a normal run those lines go to the run's log file only.
        env.setdefault("PREFECT_LOGGING_HANDLERS_DEBUG_LEVEL", "CRITICAL")
    return env


def prefect_home() -> Path:
    """``PREFECT_HOME`` as Prefect resolves it from the environment (default ``~/.prefect``)."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def state_file(home: Path | None = None) -> Path:
    """Where the local server is recorded: ``$PREFECT_HOME/docreview-server.json``."""
    return (home or prefect_home()) / "docreview-server.json"


def choice(name: str, choices: tuple[str, ...]) -> str:
    """The environment variable ``name``, stripped and lower-cased; the first of ``choices`` when it
    is unset or empty. Raises ``ValueError`` naming the variable and the choices for another value."""
    value = (os.environ.get(name) or choices[0]).strip().lower()
    if value not in choices:
        raise ValueError(f"{name}={value!r}: choose {', '.join(choices[:-1])} or {choices[-1]}")
    return value


def mode() -> str:
    """``DOCREVIEW_PREFECT_SERVER`` (``auto`` when unset). Raises ``ValueError`` for another value."""
    return choice(MODE_ENV, MODES)


def healthy(api_url: str, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """True when ``GET {api_url}/health`` answers 200 within ``timeout_s`` seconds."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout_s) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended: a child of this process that has exited
    (a zombie until reaped, which this reaps) is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return True


def running(home: Path | None = None) -> dict[str, Any] | None:
    """The recorded local server (``pid``, ``port``, ``api_url``, ``ui_url``, ``log``,
    ``started_at``) when its process is alive and its API answers; else None. A record whose
    process has gone is removed."""
    path = state_file(home)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        pid, api_url = int(state["pid"]), str(state["api_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not alive(pid):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return state if healthy(api_url) else None


def _free_port(host: str, preferred: int) -> int:
    """``preferred`` when it can be bound on ``host``, else a port the OS chooses.

    The probe sets ``SO_REUSEADDR`` as the server (uvicorn) does, so a port whose last connections
    are in TIME_WAIT after ``docreview server stop`` counts as free and a restarted server keeps
    its address."""
    for port in (preferred, 0):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError(f"no free port on {host}")  # pragma: no cover


@contextlib.contextmanager
def _locked(home: Path):
    """An exclusive lock on ``$PREFECT_HOME/docreview-server.lock``: two commands starting at
    once start one server."""
    import fcntl

    home.mkdir(parents=True, exist_ok=True)
    with open(home / "docreview-server.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def start(
    host: str = "127.0.0.1", port: int = DEFAULT_PORT, home: Path | None = None, timeout_s: float = START_TIMEOUT_S
) -> tuple[dict[str, Any], bool]:
    """Start the local server unless one is recorded and answering; returns ``(state, started)``.

    The server is ``prefect server start`` (UI on) in a new session, so it keeps running after
    this process ends and a Ctrl-C in the terminal does not reach it; its output goes to
    ``$PREFECT_HOME/docreview-server.log``. Raises ``RuntimeError`` (with the log's tail) when it
    exits or does not answer within ``timeout_s`` seconds.
    """
    home = home or prefect_home()
    with _locked(home):
        state = running(home)
        if state is not None:
            return state, False
        port = _free_port(host, port)
        log = home / "docreview-server.log"
        env = {
            **os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": os.environ.get("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
        }
        env.pop("PREFECT_API_URL", None)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        state = {
            "pid": proc.pid,
            "host": host,
            "port": port,
            "api_url": f"http://{shown}:{port}/api",
            "ui_url": f"http://{shown}:{port}",
            "log": str(log),
            # what the resident runner is started with, whichever command (re)starts it later
            "runner_env": import_time_env(quiet_defaults(dict(os.environ), verbose=False)),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        deadline = time.monotonic() + timeout_s
        while not healthy(state["api_url"], timeout_s=1.0):
            if proc.poll() is not None or time.monotonic() > deadline:
                _stop_pid(proc.pid)
                tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
                raise RuntimeError(f"the Prefect server did not start (log {log}):\n{tail}")
            time.sleep(0.25)
        tmp = state_file(home).with_suffix(f".json.{os.getpid()}")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        tmp.replace(state_file(home))
        return state, True


def _stop_pid(pid: int, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group (the server leads its session), SIGKILL after ``timeout_s``."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child: reap it
                    return
            if not alive(pid):
                return
            time.sleep(0.1)


def stop(home: Path | None = None) -> dict[str, Any] | None:
    """Stop the recorded local server and remove its record; returns what was recorded (None when
    nothing was)."""
    home = home or prefect_home()
    with _locked(home):
        path = state_file(home)
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        with contextlib.suppress(KeyError, TypeError, ValueError):
            _stop_pid(int(state["pid"]))
        with contextlib.suppress(OSError):
            path.unlink()
        return state


def _profile_api_url() -> str | None:
    """The API URL a Prefect profile or settings file configures (environment unset)."""
    from prefect.settings import get_current_settings

    return get_current_settings().api.url


def use_local_server(say: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """Point this process at the local server (``PREFECT_API_URL``), starting it when none answers
    (modes ``auto`` and ``keep``); returns its record, or None when the command keeps Prefect's own
    choice (an API configured in the environment or a Prefect profile, mode ``temporary``, or in
    ``auto`` a server that could not start). ``say`` receives what the command should tell its user
    (plain text, one line each): that the server is being started, once it answers, or why it could
    not start.

    Called before Prefect is imported, except to check that no Prefect profile names another API;
    Prefect's settings are refreshed after the change. Raises ``ValueError`` for a bad
    ``DOCREVIEW_PREFECT_SERVER`` and ``RuntimeError`` when a ``keep`` server does not start.
    """
    if os.environ.get("PREFECT_API_URL"):
        return None
    chosen = mode()
    if chosen == "temporary":
        return None
    state = running()
    if _profile_api_url():  # a profile or prefect.toml names the API: it wins, as it always has
        return None
    if state is None:
        tell = say or (lambda _text: None)
        tell(
            f"Starting docreview's local Prefect server in {prefect_home()} (the first run here; once, 10-30 s on a quiet machine): "
            "later runs reuse it and start at once."
        )
        try:
            state, _ = start()
        except RuntimeError as exc:
            if chosen == "keep":
                raise
            tell(f"The local Prefect server did not start ({str(exc).splitlines()[0]}); this run uses a temporary one.")
            return None
        tell(
            f"Local Prefect server running: UI {state['ui_url']} (`docreview server status`; "
            "`docreview server stop` stops it, DOCREVIEW_PREFECT_SERVER=temporary runs without it)."
        )
    os.environ["PREFECT_API_URL"] = state["api_url"]
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()
    return state
