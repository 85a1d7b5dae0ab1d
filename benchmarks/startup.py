"""Start-up: ``docreview review`` wall time for one contract and for four 10-Ks, by Prefect mode.

``python -m benchmarks.startup [--repeat 3] [--contract PDF]`` runs the command line itself
(``python -m cli review SOURCE --backend rules``, a fresh SQLite database and ``--rereview`` each
time) the way an operator or an S3 event's run does, and reports the wall time of the whole
process (interpreter start to exit; median of ``--repeat`` runs) in two modes:

- ``temporary``: no ``PREFECT_API_URL`` and no local server, so Prefect starts a temporary server
  for the run (``DOCREVIEW_PREFECT_SERVER=temporary``; the behaviour before ``docreview server``);
- ``local_server``: ``docreview server start`` once before (not timed; its own ``PREFECT_HOME``),
  then every run finds it through ``$PREFECT_HOME/docreview-server.json`` and reports to it, as
  with ``PREFECT_API_URL`` set to a running server; each run imports Prefect and docreview itself
  (``DOCREVIEW_RESIDENT=off``);
- ``resident``: the same with the resident runner :func:`cli.prefect_server.start` starts beside
  the server (:mod:`cli.resident`): every run is handed to a process that has imported them
  already (the default when a local server runs). ``runner_ready_s`` is the wait from ``server
  start`` until the runner serves; ``cpu_s`` adds the run's process in the runner (its log).

In each mode a first run is a warm-up, not timed (it creates Prefect's database in that mode's
``PREFECT_HOME``, as any earlier use of docreview on the machine has, and the bytecode of
docreview's modules: ``PYTHONDONTWRITEBYTECODE`` is not passed on).

Sources: one CUAD contract (read in place through a symlink) and the four 10-Ks of
``review_vs_extraction`` (3M 2018, Boeing 2018, Johnson & Johnson 2022, Nike 2021), whose plain
PDFium extraction time in the same run gives ``ratio_10k`` = review wall / PDFium wall (target
≤ 4). ``work_s`` is the flow's own wall time (``metrics.wall_s`` from ``report.json``: run start
to last document), the rest of ``wall_s`` is start-up and reporting; ``cpu_s`` is the CPU seconds of
the review process and the children it reaped (a temporary server's included), steadier than wall
time on a busy machine. Every figure carries the
load average (1/5/15 min) at its start and end: the machine is shared. Not a timed test.
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
    ``cpu_s`` includes the run's process in the resident runner when it was handed off."""
    out = work / f"out-{tag}"
    cmd = [sys.executable, "-m", "cli", "review", str(source), "--backend", "rules", "--rereview"]
    cmd += ["--db", f"sqlite:///{work / f'{tag}.db'}", "--out", str(out)]
    cpu = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu
    if env.get("DOCREVIEW_RESIDENT") != "off" and env.get("DOCREVIEW_PREFECT_SERVER") != "temporary":
        cpu += _runner_cpu_s(env)
    if proc.returncode != 0:
        raise RuntimeError(f"review exited {proc.returncode}: {proc.stderr[-1500:]}")
    metrics = json.loads((out / "report.json").read_text())["run"]["metrics"]
    return {"wall_s": wall, "cpu_s": cpu, "work_s": float(metrics.get("wall_s", 0.0))}


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's reaped children so far: a review process and
    what it reaped (its extraction children, and a temporary Prefect server it stopped)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _series(source: Path, work: Path, env: dict[str, str], tag: str, repeat: int) -> dict[str, Any]:
    load_start = _load()
    runs = [_review(source, work, env, f"{tag}-{i}") for i in range(repeat)]
    return {
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 2),
        "work_s": round(statistics.median(r["work_s"] for r in runs), 2),
        "runs_wall_s": [round(r["wall_s"], 2) for r in runs],
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
        # cached (the warm-up run writes it), while with it set every run compiled the project's
        # ~100 modules from source (0.2-0.3 s of CPU).
        dropped = ("PREFECT_API_URL", "DOCREVIEW_PREFECT_SERVER", "PYTHONDONTWRITEBYTECODE")
        base = {k: v for k, v in os.environ.items() if k not in dropped}
        base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT))
        temporary_env = {**base, "PREFECT_HOME": str(work / "home-temporary"), "DOCREVIEW_PREFECT_SERVER": "temporary"}
        local_env = {**base, "PREFECT_HOME": str(work / "home-local"), "DOCREVIEW_RESIDENT": "off"}
        resident_env = {**base, "PREFECT_HOME": str(work / "home-resident")}
        line: dict[str, Any] = {"benchmark": "startup", "contract": contract.name, "ten_ks": list(TEN_KS)}
        # Prefect's database in each home is created and migrated by an untimed first run (as on a
        # machine that has run docreview before); a loaded machine may need minutes for that.
        temporary_env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "300"
        _review(one, work, temporary_env, "warm-up-temporary")
        line["temporary"] = {
            "one_contract": _series(one, work, temporary_env, "t1", repeat),
            "four_10ks": _series(four, work, temporary_env, "t4", repeat),
        }
        server = [sys.executable, "-m", "cli", "server"]
        started = time.perf_counter()
        subprocess.run([*server, "start", "--port", "0"], cwd=ROOT, env=local_env, check=True, capture_output=True)
        server_start_s = time.perf_counter() - started
        try:
            _review(one, work, local_env, "warm-up")  # a running server has served runs before
            line["local_server"] = {
                "server_start_s": round(server_start_s, 2),
                "one_contract": _series(one, work, local_env, "l1", repeat),
                "four_10ks": _series(four, work, local_env, "l4", repeat),
            }
        finally:
            subprocess.run([*server, "stop"], cwd=ROOT, env=local_env, capture_output=True)
        started = time.perf_counter()
        subprocess.run([*server, "start", "--port", "0"], cwd=ROOT, env=resident_env, check=True, capture_output=True)
        resident_start_s = time.perf_counter() - started
        try:
            ready_s = _wait_for_runner(Path(resident_env["PREFECT_HOME"]))
            runner_ready_s = time.perf_counter() - started
            _review(one, work, resident_env, "warm-up-resident")
            line["resident"] = {
                "server_start_s": round(resident_start_s, 2),
                "runner_ready_s": round(runner_ready_s, 2),
                "runner_imports_s": ready_s,
                "one_contract": _series(one, work, resident_env, "r1", repeat),
                "four_10ks": _series(four, work, resident_env, "r4", repeat),
            }
        finally:
            subprocess.run([*server, "stop"], cwd=ROOT, env=resident_env, capture_output=True)
        line["pdfium_4_10ks_s"] = round(pdfium_s, 2)
        for mode in ("temporary", "local_server", "resident"):
            line[mode]["ratio_10k"] = round(line[mode]["four_10ks"]["wall_s"] / pdfium_s, 2)
        line["targets"] = {"one_contract_wall_s": 3.0, "ratio_10k": 4.0}
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
