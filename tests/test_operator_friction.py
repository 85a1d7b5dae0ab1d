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
