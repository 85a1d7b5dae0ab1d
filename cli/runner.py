"""The resident runner's process (``python -m cli.runner --home HOME --server-pid PID``): it imports
the review path's libraries once, then forks a child per ``docreview review`` handed to it
(:func:`cli.resident.hand_off`) and runs the command there. What it does and when a command is
handed to it: :mod:`cli.resident`. Started by ``docreview server start`` (:func:`cli.resident.ensure`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

from cli.prefect_server import alive, quiet_defaults
from cli.resident import (
    ANSWER_TIMEOUT_S,
    _write_record,
    code_stamp,
    fingerprint_items,
    record_file,
    refusal,
    socket_path,
)

#: What the runner imports before it waits: the libraries of the review path, not ``cli.common``
#: or ``cli.app`` (their consoles detect the terminal when created: each run creates its own).
PRELOAD = (
    "typer",
    "rich.console",
    "rich.progress",
    "rich.table",
    "pydantic",
    "prefect",
    "prefect.flows",
    "prefect.tasks",
    "prefect.client.orchestration",
    "prefect.futures",
    "sqlmodel",
    "sqlalchemy.dialects.sqlite",
    "flows.review",
    "flows.progress",
    "flows.runners",
    "flows.deploy",
    "prefect.task_engine",
    "prefect.concurrency.sync",
    "prefect.utilities.visualization",
    "anyio._backends._asyncio",
    "sqlite3",
    "tasks.store.persist",
    "tasks.ingest.backoff",
    "tasks.review.backends.rules",
    "tasks.review.backends.filing_rules",
    "tasks.review.backends.anthropic_backend",
    "tasks.observe.report",
    "tasks.observe.plots",
    "matplotlib.backends.backend_svg",
    "PIL.features",
    "encodings.idna",
    "http.cookies",
)
#: Descriptors of the runner's loop that a forked child closes (the wake-up pipe, the selector).
_CLOSE_IN_CHILD: list[int] = []
#: Seconds between the runner's checks that its server is alive and its code unchanged.
CHECK_EVERY_S = 2.0
#: Largest request (argv, directory, environment) a runner reads, bytes.
MAX_REQUEST_BYTES = 4 * 1024 * 1024


def _log(message: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} docreview-runner[{os.getpid()}] {message}\n")
    sys.stderr.flush()


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(data) < 4:
        raise ValueError("short request")
    (size,) = struct.unpack("!I", data[:4])
    if size > MAX_REQUEST_BYTES:
        raise ValueError(f"request of {size} bytes")
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("truncated request")
        body += chunk
    return json.loads(body), list(fds)


def _run_child(conn: socket.socket, listener: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the command (descriptors, directory, environment, argv), run it
    and exit with its status (:func:`_exit_now`); never returns."""
    listener.close()
    conn.close()
    _die_with_runner()
    signal.set_wakeup_fd(-1)
    for fd in _CLOSE_IN_CHILD:
        with contextlib.suppress(OSError):
            os.close(fd)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.reconfigure(line_buffering=stream.isatty())  # type: ignore[union-attr]
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    # with the quiet defaults the runner imported Prefect under (the fingerprint checked the rest):
    # the command's prepare_environment then finds its logging configured as it would set it
    os.environ.update(quiet_defaults(request["env"], verbose=False))
    sys.argv = list(request["argv"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(s, signal.SIG_DFL)
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()
    from cli.app import main

    code = 0
    try:
        main()
    except SystemExit as exc:
        code = _exit_status(exc)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # what the interpreter would print before exiting 1
        import traceback

        traceback.print_exc()
        code = 1
    _exit_now(code)


def _die_with_runner() -> None:
    """Linux: SIGKILL this child when the runner dies (``prctl(PR_SET_PDEATHSIG)``), so a runner
    killed outright leaves no orphaned run (a runner stopped normally interrupts its runs first).
    Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def _exit_status(exc: SystemExit) -> int:
    """The status the interpreter gives ``exc``: None is 0, an int itself, anything else is printed
    and is 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _exit_now(code: int) -> None:
    """End the child as the interpreter would — join the threads that are not daemons, run the
    ``atexit`` handlers (Prefect's log and event flush, temporary files), flush the streams — but
    without tearing down every module: that last step takes a second or more with Prefect,
    SQLAlchemy and matplotlib loaded, and nothing of it is visible to the command's user."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _warm() -> None:
    """What every run would otherwise do first, done once here and inherited by each child: the
    fact-check's support model and the router's scorer read, the database migrations imported (Alembic
    and the revision scripts: what a run on a new database needs, 0.2-0.4 s of CPU), and the report's
    figures drawn once from made-up data (matplotlib's font and text-layout caches). Nothing here
    starts a thread."""
    import schemas.migrations  # noqa: F401 - Alembic, for a run whose database is new
    from tasks.check.support import load_model
    from tasks.observe import plots
    from tasks.review.route import load_model as load_router

    with contextlib.suppress(ValueError):
        load_model()
    with contextlib.suppress(ValueError):
        load_router()
    plots.warm()
    finding = {"clause_label": "Governing Law", "verdict": "verified"}
    with contextlib.suppress(Exception):  # a warm-up only: a run draws its own figures
        plots.findings_plot([{"findings": [finding, {**finding, "verdict": "needs_review"}]}])
        plots.latency_plot([120.0, 900.0, 2400.0], [80.0, 300.0])
        plots.cost_plot({"a.pdf": 0.01, "b.pdf": 0.02})
        plots.trend_plot([], "")


def serve(home: Path, server_pid: int) -> None:
    """The runner's loop (``python -m cli.runner --home HOME --server-pid PID``): preload, listen,
    fork a child per command, report each child's exit status; exit when the server ``server_pid``
    stops, re-execute itself when docreview's code changes. Never returns in a child."""
    import importlib
    import threading

    os.environ.update(quiet_defaults(dict(os.environ), verbose=False))
    api_url = os.environ.get("PREFECT_API_URL", "")
    stamp = code_stamp()
    started = time.perf_counter()
    for name in PRELOAD:
        importlib.import_module(name)
    _warm()
    if threading.active_count() != 1:
        raise RuntimeError(f"importing started {threading.active_count() - 1} thread(s); a fork would copy them")
    # Everything loaded so far lives as long as the runner: out of the garbage collector's sight, each
    # run's collections no longer walk it (a four-10-K run: GC CPU 0.45-0.54 s -> 0.17-0.21 s) nor
    # write to its pages, which the children then keep sharing with the runner.
    gc.collect()
    gc.freeze()
    expected = fingerprint_items(os.environ, api_url, stamp)
    path = socket_path(home)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    listener.listen(16)
    listener.setblocking(False)
    # a finished child wakes the loop at once (SIGCHLD through a wake-up pipe); otherwise it sleeps
    # until a command connects or goes away, or the next check is due: an idle runner costs no CPU
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    _CLOSE_IN_CHILD[:] = [wake_r, wake_w, selector.fileno()]
    owner = os.getpid()
    _write_record(home, {"pid": owner, "socket": str(path), "server_pid": server_pid, "api_url": api_url})
    _log(f"ready in {time.perf_counter() - started:.1f} s (socket {path}, API {api_url})")
    children: dict[int, _Child] = {}
    next_check = time.monotonic() + CHECK_EVERY_S
    try:
        while True:
            _reap(children, selector)
            _interrupt_abandoned(children, selector)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + CHECK_EVERY_S
                if not alive(server_pid):
                    _log(f"the Prefect server (pid {server_pid}) stopped: exiting")
                    return
                if code_stamp() != stamp and not children:
                    _log("docreview's code or packages changed: restarting")
                    listener.close()  # the record stays: the same pid serves again once imported
                    os.execv(sys.executable, [sys.executable, "-m", "cli.runner", *sys.argv[1:]])
            selector.select(timeout=max(0.0, next_check - time.monotonic()))
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            conn.setblocking(True)
            _serve_one(conn, listener, expected, children, selector)
            if os.getpid() != owner:  # pragma: no cover - a child returns only through SystemExit
                os._exit(1)
    finally:
        if os.getpid() == owner:
            _stop_children(children)
            _forget(home, path, owner)


@dataclasses.dataclass
class _Child:
    """A run's process: the command's connection, when it was forked, when its command went away."""

    conn: socket.socket
    forked_at: float
    gone_at: float | None = None


#: Seconds a run whose command went away (killed, or its terminal closed) has to stop after SIGINT
#: (it marks itself interrupted, as on Ctrl-C) before SIGKILL; also the runner's wait for its runs
#: when it is stopped.
ABANDONED_GRACE_S = 20.0


def _serve_one(
    conn: socket.socket,
    listener: socket.socket,
    expected: dict[str, str],
    children: dict[int, _Child],
    selector: selectors.BaseSelector,
) -> None:
    """Read one command's request; refuse it or fork its child (which never returns here). A probe
    (``docreview server status``, :func:`cli.resident.probe`) gets the same check's answer, unlogged."""
    conn.settimeout(ANSWER_TIMEOUT_S)
    fds: list[int] = []
    try:
        request, fds = _read_request(conn)
        differ = refusal(request.get("items") or {}, expected)
        answer = {"refused": "fingerprint", "differ": differ} if differ else {"serves": True}
        if request.get("probe"):
            conn.sendall(json.dumps(answer).encode() + b"\n")
            raise ValueError("probe")
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} descriptor(s) passed, 3 expected")
        if differ:
            conn.sendall(json.dumps(answer).encode() + b"\n")
            _log(f"refused a command (it runs itself): its {', '.join(differ)} differ from this runner's")
            raise ValueError("fingerprint")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if str(exc) not in ("fingerprint", "probe"):
            _log(f"bad request: {exc}")
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        _run_child(conn, listener, request, fds)
    for fd in fds:
        os.close(fd)
    conn.settimeout(None)
    try:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:
        pass
    children[pid] = _Child(conn, time.monotonic())
    conn.setblocking(False)
    selector.register(conn, selectors.EVENT_READ)  # readable only when the command goes away
    _log(f"pid {pid}: {' '.join(request['argv'][:2])} in {request['cwd']}")


def _interrupt_abandoned(children: dict[int, _Child], selector: selectors.BaseSelector) -> None:
    """A run whose command went away (its connection closed: the command was killed, or timed out
    waiting for its pid) gets SIGINT, as Ctrl-C would have sent it, then SIGKILL after
    :data:`ABANDONED_GRACE_S`: no run outlives its command unseen."""
    now = time.monotonic()
    for pid, child in children.items():
        if child.gone_at is None:
            try:
                if child.conn.recv(1, socket.MSG_PEEK):
                    continue  # the command wrote something: not gone
            except BlockingIOError:
                continue
            except OSError:
                pass
            child.gone_at = now
            with contextlib.suppress(KeyError, ValueError):
                selector.unregister(child.conn)
            _log(f"pid {pid}: its command went away: interrupting the run")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        elif now - child.gone_at > ABANDONED_GRACE_S:
            _log(f"pid {pid}: still running {ABANDONED_GRACE_S:g} s after SIGINT: killed")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            child.gone_at = float("inf")  # killed once


def _stop_children(children: dict[int, _Child]) -> None:
    """The runner is stopping: SIGINT to every run (it marks itself interrupted), up to
    :data:`ABANDONED_GRACE_S` for them to end, then SIGKILL."""
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + ABANDONED_GRACE_S
    while children and time.monotonic() < deadline:
        _reap(children, None)
        time.sleep(0.1)
    for pid in list(children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _log(f"pid {pid}: killed as the runner stopped")
    _reap(children, None)


def _reap(children: dict[int, _Child], selector: selectors.BaseSelector | None) -> None:
    """Collect finished children and send each command its exit status."""
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        child = children.pop(pid, None)
        wall_s = time.monotonic() - child.forked_at if child else 0.0
        if child is not None:
            if selector is not None and child.gone_at is None:
                with contextlib.suppress(KeyError, ValueError):
                    selector.unregister(child.conn)
            with contextlib.suppress(OSError):
                child.conn.setblocking(True)
                child.conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
            child.conn.close()
        _log(f"pid {pid}: exit {code} after {wall_s:.2f} s ({usage.ru_utime + usage.ru_stime:.2f} s CPU)")


def _forget(home: Path, path: Path, owner: int) -> None:
    """Remove the socket and the record when they are still this runner's."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(record_file(home).read_text(encoding="utf-8")).get("pid") == owner:
            record_file(home).unlink()
            path.unlink()


def _main(args: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m cli.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="PREFECT_HOME of the local server")
    parser.add_argument("--server-pid", type=int, required=True, help="pid of the local Prefect server")
    ns = parser.parse_args(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(ns.home, ns.server_pid)
    except Exception as exc:  # the runner is an optimisation: commands run themselves without it
        _log(f"not serving: {type(exc).__name__}: {exc}")
        # recorded, so commands do not start it again for this server until docreview's code changes
        _write_record(
            ns.home,
            {"pid": os.getpid(), "server_pid": ns.server_pid, "disabled": str(exc), "code": code_stamp()},
        )


if __name__ == "__main__":
    _main(sys.argv[1:])
