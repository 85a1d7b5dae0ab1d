"""Start-up: ``docreview review`` wall time for one contract and for four 10-Ks, by Prefect mode.

``python -m benchmarks.startup [--repeat 3] [--contract PDF]`` runs the command line itself
(``python -m cli review SOURCE --backend rules``, a fresh SQLite database and ``--rereview`` each
time) the way an operator, a cron job or an S3 event's run does, and reports the wall time of the
whole process (interpreter start to exit; median of ``--repeat`` runs) in three modes:

- ``first_use`` (what a user gets, the headline): a fresh ``PREFECT_HOME``, no ``PREFECT_API_URL``, no
  server and nothing else started beforehand, the default ``DOCREVIEW_PREFECT_SERVER``. The first
  review starts the local Prefect server and its resident runner (``cli/prefect_server.py``,
  ``cli/resident.py``) and is timed on its own (``first_run_s``, once per machine); the timed runs
  after it find the server and are handed to the runner when it serves (``handed_off`` counts them).
  ``runner_ready_s`` is the time from the first review's start until the runner serves.
  ``docreview server stop`` ends both afterwards.
- ``temporary``: ``DOCREVIEW_PREFECT_SERVER=temporary``: Prefect starts a temporary server for every
  run and nothing is left running (an untimed first run creates Prefect's database in that mode's
  ``PREFECT_HOME``).
- ``local_server``: ``docreview server start`` once before (not timed), each run imports Prefect and
  docreview itself (``DOCREVIEW_RESIDENT=off``): what the resident runner saves.

Sources: one CUAD contract (read in place through a symlink) and the four 10-Ks of
``review_vs_extraction`` (3M 2018, Boeing 2018, Johnson & Johnson 2022, Nike 2021): a plain
PDFium extraction of them, timed right before each of their reviews (so both at the same load), gives
``ratio_10k`` = median review wall / median PDFium wall (target ≤ 3); ``pdfium_4_10ks_s`` is the one
measured at the line's start. ``work_s`` is the flow's own wall time (``metrics.wall_s`` from ``report.json``: run start
to last document), the rest of ``wall_s`` is start-up and reporting; ``cpu_s`` is the CPU seconds of
the review process and the children it reaped (a temporary server's included) plus, for a run handed
to the resident runner, that run's process there (the runner's log), steadier than wall time on a
busy machine. Every figure carries the load average (1/5/15 min) at its start and end: the machine
is shared. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import CUAD_PDF, ROOT, emit

FILINGS_PDF = CUAD_PDF.parent.parent / "filings" / "pdf"
TEN_KS = ("3M_2018_10K.pdf", "BOEING_2018_10K.pdf", "JOHNSON_JOHNSON_2022_10K.pdf", "NIKE_2021_10K.pdf")
#: The contract of the one-document run (any CUAD PDF works; this one has 9 pages).
CONTRACT = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.PDF"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _runner_cpu_s(env: dict[str, str]) -> float:
    """CPU seconds of the last run the resident runner of ``env``'s ``PREFECT_HOME`` reported in its log
    (``pid N: exit S after W s (C s CPU)``); 0.0 when it ran none."""
    import re

    log = Path(env["PREFECT_HOME"]) / "docreview-runner.log"
    found = re.findall(r"exit -?\d+ after [\d.]+ s \(([\d.]+) s CPU\)", log.read_text()) if log.exists() else []
    return float(found[-1]) if found else 0.0


def _review(source: Path, work: Path, env: dict[str, str], tag: str) -> dict[str, Any]:
    """One ``docreview review`` process; ``wall_s`` (process start to exit) and the flow's ``work_s``;
    ``cpu_s`` includes the run's process in the resident runner when it was handed off (``handed_off``)."""
    out = work / f"out-{tag}"
    cmd = [sys.executable, "-m", "cli", "review", str(source), "--backend", "rules", "--rereview"]
    cmd += ["--db", f"sqlite:///{work / f'{tag}.db'}", "--out", str(out)]
    handed = _runner_runs(env)
    cpu = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu
    handed_off = _runner_runs(env) > handed
    if handed_off:
        cpu += _runner_cpu_s(env)
    if proc.returncode != 0:
        raise RuntimeError(f"review exited {proc.returncode}: {proc.stderr[-1500:]}")
    metrics = json.loads((out / "report.json").read_text())["run"]["metrics"]
    return {"wall_s": wall, "cpu_s": cpu, "work_s": float(metrics.get("wall_s", 0.0)), "handed_off": handed_off}


def _runner_runs(env: dict[str, str]) -> int:
    """Runs the resident runner of ``env``'s ``PREFECT_HOME`` has reported ending in its log so far."""
    import re

    log = Path(env["PREFECT_HOME"]) / "docreview-runner.log"
    return len(re.findall(r"exit -?\d+ after", log.read_text())) if log.exists() else 0


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's reaped children so far: a review process and
    what it reaped (its extraction children, and a temporary Prefect server it stopped)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _series(
    source: Path, work: Path, env: dict[str, str], tag: str, repeat: int, pdfium: list[Path] | None = None
) -> dict[str, Any]:
    """``repeat`` reviews of ``source``; with ``pdfium`` files, each review is preceded by a plain
    PDFium extraction of them, so ``ratio`` (median review wall / median PDFium wall) compares the two
    at the same load."""
    from benchmarks.extraction import _pdfium_timed

    load_start = _load()
    runs, plain = [], []
    for i in range(repeat):
        if pdfium:
            plain.append(sum(_pdfium_timed(p)[1] for p in pdfium))
        runs.append(_review(source, work, env, f"{tag}-{i}"))
    extra: dict[str, Any] = {}
    if plain:
        extra = {
            "pdfium_s": round(statistics.median(plain), 2),
            "ratio": round(statistics.median(r["wall_s"] for r in runs) / statistics.median(plain), 2),
        }
    return {
        **extra,
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 2),
        "work_s": round(statistics.median(r["work_s"] for r in runs), 2),
        "runs_wall_s": [round(r["wall_s"], 2) for r in runs],
        "handed_off": sum(r["handed_off"] for r in runs),
        "load_avg": {"start": load_start, "end": _load()},
    }


def measure(repeat: int = 3, contract: Path | None = None) -> dict[str, Any]:
    """The ``startup`` line (see the module docstring)."""
    from benchmarks.extraction import _pdfium_timed

    contract = contract or CUAD_PDF / CONTRACT
    filings = [FILINGS_PDF / name for name in TEN_KS]
    missing = [str(p) for p in [contract, *filings] if not p.exists()]
    if missing:
        return {"benchmark": "startup", "skipped": f"not found: {missing}"}
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        one, four = work / "one", work / "four"
        one.mkdir()
        four.mkdir()
        (one / contract.name).symlink_to(contract)
        for path in filings:
            (four / path.name).symlink_to(path)
        pdfium_s = sum(_pdfium_timed(p)[1] for p in filings)
        # PYTHONDONTWRITEBYTECODE is dropped: an installed docreview has its modules' bytecode
        # cached, while with it set every run compiled the project's ~100 modules from source
        # (0.2-0.3 s of CPU).
        dropped = ("PREFECT_API_URL", "DOCREVIEW_PREFECT_SERVER", "DOCREVIEW_RESIDENT", "PYTHONDONTWRITEBYTECODE")
        base = {k: v for k, v in os.environ.items() if k not in dropped}
        base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT))
        first_env = {**base, "PREFECT_HOME": str(work / "home-first-use")}
        temporary_env = {**base, "PREFECT_HOME": str(work / "home-temporary"), "DOCREVIEW_PREFECT_SERVER": "temporary"}
        local_env = {**base, "PREFECT_HOME": str(work / "home-local"), "DOCREVIEW_RESIDENT": "off"}
        line: dict[str, Any] = {"benchmark": "startup", "contract": contract.name, "ten_ks": list(TEN_KS)}
        server = [sys.executable, "-m", "cli", "server"]

        load_start, started = _load(), time.perf_counter()
        try:
            first = _review(one, work, first_env, "first-use")  # starts the local server and its runner
            first_s = time.perf_counter() - started
            ready_s = _wait_for_runner(Path(first_env["PREFECT_HOME"]))
            line["first_use"] = {
                "first_run_s": round(first_s, 2),
                "first_run_work_s": round(first["work_s"], 2),
                "runner_ready_s": round(time.perf_counter() - started, 2),
                "runner_imports_s": ready_s,
                "first_run_load_avg": {"start": load_start, "end": _load()},
                "one_contract": _series(one, work, first_env, "f1", repeat),
                "four_10ks": _series(four, work, first_env, "f4", repeat, filings),
            }
        finally:
            subprocess.run([*server, "stop"], cwd=ROOT, env=first_env, capture_output=True)

        # Prefect's database in this home is created and migrated by an untimed first run (as on a
        # machine that has run docreview before); a loaded machine may need minutes for that.
        temporary_env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "300"
        _review(one, work, temporary_env, "warm-up-temporary")
        line["temporary"] = {
            "one_contract": _series(one, work, temporary_env, "t1", repeat),
            "four_10ks": _series(four, work, temporary_env, "t4", repeat, filings),
        }
        started = time.perf_counter()
        subprocess.run([*server, "start", "--port", "0"], cwd=ROOT, env=local_env, check=True, capture_output=True)
        server_start_s = time.perf_counter() - started
        try:
            _review(one, work, local_env, "warm-up")  # a running server has served runs before
            line["local_server"] = {
                "server_start_s": round(server_start_s, 2),
                "one_contract": _series(one, work, local_env, "l1", repeat),
                "four_10ks": _series(four, work, local_env, "l4", repeat, filings),
            }
        finally:
            subprocess.run([*server, "stop"], cwd=ROOT, env=local_env, capture_output=True)
        line["pdfium_4_10ks_s"] = round(pdfium_s, 2)
        for mode in ("first_use", "temporary", "local_server"):
            line[mode]["ratio_10k"] = line[mode]["four_10ks"]["ratio"]
        line["targets"] = {"one_contract_wall_s": 3.0, "ratio_10k": 3.0}
        return line
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wait_for_runner(home: Path, timeout_s: float = 600.0) -> float | None:
    """Wait until the resident runner of ``home`` is recorded (its imports done); the seconds its log
    says the imports took (``ready in N s``), None when it gave no figure. Raises ``RuntimeError``
    after ``timeout_s``."""
    import re

    from cli.resident import record_file

    deadline = time.monotonic() + timeout_s
    while "socket" not in (json.loads(record_file(home).read_text()) if record_file(home).exists() else {}):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no resident runner in {home} after {timeout_s:g} s")
        time.sleep(0.2)
    found = re.findall(r"ready in ([\d.]+) s", (home / "docreview-runner.log").read_text())
    return float(found[-1]) if found else None


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per mode and source (median reported)")
    parser.add_argument("--contract", type=Path, default=None, help="the one-contract run's PDF")
    args = parser.parse_args(argv)
    emit(measure(args.repeat, args.contract))
    return 0


if __name__ == "__main__":
    sys.exit(main())
