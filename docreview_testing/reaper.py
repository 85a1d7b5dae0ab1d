"""Background servers started by the tests end with the test run, even when it is killed.

:func:`start_owned` starts a command in a new session (its own process group) together with a
small watchdog process (``python -m docreview_testing.reaper OWNER PGID``) that waits for the
owning process (the test run) to disappear and then ends the whole group: SIGTERM, and SIGKILL
10 s later. A test run ended by SIGKILL, which runs no ``finally`` block, therefore leaves no
``prefect server``, Dask cluster or ``docreview serve`` behind. Normal teardown still stops the
process itself; the watchdog then finds nothing left and exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

#: Seconds between checks that the owner is still alive, and the grace before SIGKILL.
POLL_S = 1.0
GRACE_S = 10.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def reap(owner: int, pgid: int) -> None:
    """Wait until process ``owner`` is gone (or the group ``pgid`` ended), then end the group."""
    while _alive(owner) and _group_alive(pgid):
        time.sleep(POLL_S)
    if not _group_alive(pgid):
        return
    os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _group_alive(pgid):
        os.killpg(pgid, signal.SIGKILL)


def start_owned(cmd: list[str], **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(cmd, start_new_session=True, **popen_kwargs)`` plus a watchdog that ends
    the new process group when this process disappears (see the module docstring)."""
    proc = subprocess.Popen(cmd, start_new_session=True, **popen_kwargs)
    own_group(proc.pid)
    return proc


def own_group(pgid: int) -> None:
    """Start a watchdog that ends process group ``pgid`` (a server some command under test started in
    its own session, e.g. the local Prefect server) when this process disappears. The watchdog is
    started through a shell that exits at once, so no ``Popen`` of it outlives this call."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(
        [
            "/bin/sh",
            "-c",
            '"$@" </dev/null >/dev/null 2>&1 &',
            "sh",
            sys.executable,
            "-m",
            "docreview_testing.reaper",
            str(os.getpid()),
            str(pgid),
        ],
        cwd=root,
        check=True,
        start_new_session=True,
    )


if __name__ == "__main__":  # pragma: no cover - the watchdog process
    reap(int(sys.argv[1]), int(sys.argv[2]))
