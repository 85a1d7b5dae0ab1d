"""A background server started by a test ends with the test run, even when the run is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_OWNER = """
import subprocess, sys, time
from docreview_testing.reaper import start_owned
proc = start_owned([sys.executable, "-c", "import time; time.sleep(120)"])
print(proc.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is gone for our purpose
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_a_killed_owner_takes_its_server_with_it():
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    server = int(owner.stdout.readline())
    assert _alive(server)
    owner.send_signal(signal.SIGKILL)  # no finally block runs in the owner
    owner.wait()
    owner.stdout.close()
    deadline = time.monotonic() + 30
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(server)
