"""Start-up: ``docreview review`` wall time for one contract and for four 10-Ks, by Prefect mode.

``python -m benchmarks.startup [--repeat 3] [--contract PDF]`` runs the command line itself
(``python -m cli review SOURCE --backend rules``, a fresh SQLite database and ``--rereview`` each
time) the way an operator or an S3 event's run does, and reports the wall time of the whole
process (interpreter start to exit; median of ``--repeat`` runs) in two modes:

- ``temporary``: no ``PREFECT_API_URL`` and no local server, so Prefect starts a temporary server
  for the run (``DOCREVIEW_PREFECT_SERVER=temporary``; the behaviour before ``docreview server``);
- ``local_server``: ``docreview server start`` once before (not timed; its own ``PREFECT_HOME``),
  then every run finds it through ``$PREFECT_HOME/docreview-server.json`` and reports to it, as
  with ``PREFECT_API_URL`` set to a running server.

In each mode a first run is a warm-up, not timed (it creates Prefect's database in that mode's
``PREFECT_HOME``, as any earlier use of docreview on the machine has).

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


def _review(source: Path, work: Path, env: dict[str, str], tag: str) -> dict[str, Any]:
    """One ``docreview review`` process; ``wall_s`` (process start to exit) and the flow's ``work_s``."""
    out = work / f"out-{tag}"
    cmd = [sys.executable, "-m", "cli", "review", str(source), "--backend", "rules", "--rereview"]
    cmd += ["--db", f"sqlite:///{work / f'{tag}.db'}", "--out", str(out)]
    cpu = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu
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
        base = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "DOCREVIEW_PREFECT_SERVER")}
        base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT))
        temporary_env = {**base, "PREFECT_HOME": str(work / "home-temporary"), "DOCREVIEW_PREFECT_SERVER": "temporary"}
        local_env = {**base, "PREFECT_HOME": str(work / "home-local")}
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
        line["pdfium_4_10ks_s"] = round(pdfium_s, 2)
        for mode in ("temporary", "local_server"):
            line[mode]["ratio_10k"] = round(line[mode]["four_10ks"]["wall_s"] / pdfium_s, 2)
        line["targets"] = {"one_contract_wall_s": 3.0, "ratio_10k": 4.0}
        return line
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
