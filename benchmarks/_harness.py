"""Shared machinery of the pipeline benchmarks (throughput, overhead, cost, memory).

- :func:`workload`: the mixed-size PDFs of :func:`docreview_testing.samples.generate_workload`, cached by
  ``(count, long_share, seed)`` under ``benchmarks/results/cache/`` (rendering ~1,700 pages
  takes minutes; the bytes are deterministic, so a cached copy is the same workload).
- :class:`StubProcess`: ``docreview stub-llm`` (the local Messages-API test double) as a
  subprocess with a latency model: ``ttft_ms`` before the first token plus ``token_ms`` per
  output token.
- :class:`StubThread`: the same double served from the benchmark's own process, so its count of
  requests in flight (``StubLLM.max_in_flight``) can be read after the run.
- :func:`run_review`: one ``review-documents`` flow run in a child process
  (``python -m benchmarks._harness``). The child times every Prefect task body by stage
  (:data:`STAGES`), samples what the flow's main thread is doing, and records its RSS when
  the 250th, 500th, ... document ends; it writes those figures as JSON.
- :func:`llm_stats`: the run's ``llm_calls`` rows summed (calls, mean call latency, tokens, USD).
- :func:`emit`: print the benchmark's one JSON line and append it to ``benchmarks/results/results.jsonl``.

Nothing here is a timed test: figures are printed side by side for a reader (or CI) to judge.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: Where each benchmark's JSON line is appended (gitignored, like the workload cache).
RESULTS_FILE = RESULTS / "results.jsonl"
#: The shared data (``../shared/data`` beside the checkout; elsewhere ``DOCREVIEW_SHARED_DATA``, as in the tests).
SHARED_DATA = ROOT.parent / "shared" / "data"
if not SHARED_DATA.exists():
    SHARED_DATA = Path(os.environ.get("DOCREVIEW_SHARED_DATA", "/work/shared/data"))
CUAD_PDF = SHARED_DATA / "cuad" / "pdf"

#: Prefect task name -> stage of the overhead split. Tasks not listed count as ``other``.
STAGES: dict[str, str] = {
    "list-source-objects": "ingest",
    "fingerprint-document": "ingest",
    "extract-document": "ingest",
    "chunk-document": "chunk",
    "route-chunks": "route",
    "screen-document": "route",
    "review-chunk": "review",
    "review-chunks-offline": "review",
    "review-batch": "review",
    "cached-review": "review",
    "fact-check-findings": "fact_check",
    "fact-check-document": "fact_check",
    "check-support-in-document": "fact_check",
    "check-consistency": "fact_check",
    "start-run": "persist",
    "save-document-outcome": "persist",
    "save-chunks": "persist",
    "save-findings": "persist",
    "save-llm-calls": "persist",
    "save-absences": "persist",
    "mark-document-reviewed": "persist",
    "store-review": "persist",
    "save-source-object": "persist",
    "record-drift": "persist",
    "claim-document": "persist",
    "finish-run": "persist",
    "write-report": "report",
    "publish-artifacts": "report",
    "evaluate-alerts": "report",
    "emit-document-events": "report",
    "tag-flow-run": "report",
}
#: RSS is recorded when this many documents have ended (and every multiple of it), by default.
RSS_EVERY = 250


def emit(result: dict[str, Any]) -> dict[str, Any]:
    """Print ``result`` as one JSON line and append it (with a UTC timestamp) to :data:`RESULTS_FILE`."""
    line = json.dumps(result)
    print(line, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamped = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **result}
    with RESULTS_FILE.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(stamped) + "\n")
    return result


def workload(count: int, long_share: float = 0.2, seed: int | None = None, cache: bool = True) -> Path:
    """Folder holding the ``count``-document mixed workload (generated once, then reused).

    Returns the folder; ``cache=False`` renders into a fresh temporary folder (the caller
    removes it). The cache is keyed by count, long share and seed, and written atomically.
    """
    from docreview_testing.samples import SAMPLE_SEED, generate_workload

    seed = SAMPLE_SEED if seed is None else seed
    if not cache:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="docreview-workload-"))
        generate_workload(folder, count, long_share, seed)
        return folder
    folder = RESULTS / "cache" / f"workload-{count}-{long_share:g}-{seed}"
    if not (folder / ".complete").exists():
        partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        generate_workload(partial, count, long_share, seed)
        (partial / ".complete").write_text("")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder


def workload_pages(folder: Path) -> tuple[int, int]:
    """``(documents, pages)`` of the PDFs in ``folder`` (page counts read with pypdf)."""
    import pypdf

    pdfs = sorted(folder.glob("*.pdf"))
    return len(pdfs), sum(len(pypdf.PdfReader(p).pages) for p in pdfs)


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (chosen by the OS)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StubProcess:
    """``docreview stub-llm`` in a subprocess, with latency ``ttft_ms`` + ``token_ms`` × output tokens.

    Use as a context manager; :attr:`url` is the base URL. Raises ``RuntimeError`` when the
    server does not answer ``/health`` within 60 s.
    """

    def __init__(self, ttft_ms: float = 0.0, token_ms: float = 0.0, port: int | None = None) -> None:
        self.ttft_ms, self.token_ms = ttft_ms, token_ms
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> StubProcess:
        import httpx

        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "stub-llm",
                "--port",
                str(self.port),
                "--ttft-ms",
                str(self.ttft_ms),
                "--token-ms",
                str(self.token_ms),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"stub-llm exited with {self._proc.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"stub-llm did not answer on {self.url}")

    def __exit__(self, *exc: Any) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()

    def env(self) -> dict[str, str]:
        """Environment for a review run against this double (anthropic backend)."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "test-key-not-secret",
            "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
        }


class StubThread:
    """The Messages-API test double served from this process (a thread), with the same latency
    model and :meth:`env` as :class:`StubProcess`, and its :class:`~docreview_testing.stub_llm.StubLLM`
    readable as :attr:`stub`: ``stub.max_in_flight`` is the most model requests the API side
    answered at once, the figure a concurrency cap is checked against. The review runs in a child
    process (:func:`run_review`), so this process only serves the double while it waits.
    """

    def __init__(self, ttft_ms: float = 0.0, token_ms: float = 0.0) -> None:
        from docreview_testing.stub_llm import StubLLM, StubLLMServer

        self.stub = StubLLM(ttft_ms=ttft_ms, token_ms=token_ms)
        self._server = StubLLMServer("127.0.0.1", 0, self.stub)
        self.url = self._server.url

    def __enter__(self) -> StubThread:
        self._server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.stop()

    def env(self) -> dict[str, str]:
        """Environment for a review run against this double (anthropic backend)."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "test-key-not-secret",
            "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-4-6",
        }


class PrefectServer:
    """``prefect server start`` on a free port with a fresh ``PREFECT_HOME`` in ``home``, as a
    deployment has it running before any flow starts. Use as a context manager; :attr:`api_url`
    is the API URL (``PREFECT_API_URL``). On entry it waits for ``/api/health`` and then until the
    server is idle (its CPU time grows by under 0.05 s in a second, at most 30 s), so a measured
    run does not share the machine with the server's start-up. Started through
    :func:`docreview_testing.reaper.start_owned`: a killed benchmark does not leave it behind.
    Raises ``RuntimeError`` when it does not answer within 120 s.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self._proc: subprocess.Popen | None = None
        self._log: Any = None

    def __enter__(self) -> PrefectServer:
        from docreview_testing.reaper import start_owned

        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PREFECT_HOME": str(self.home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        }
        env.pop("PREFECT_API_URL", None)
        self._log = (self.home / "server.log").open("wb")
        try:
            self._proc = start_owned(
                [
                    str(Path(sys.executable).parent / "prefect"),
                    "server",
                    "start",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                env=env,
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
            self._wait_until_idle()
        except BaseException:  # Ctrl-C or a server that did not start: stop it, close the log
            self.__exit__()
            raise
        return self

    def _wait_until_idle(self) -> None:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prefect server did not start: {(self.home / 'server.log').read_text()[-1000:]}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        idle_by = time.monotonic() + 30
        before = self.cpu_s()
        while time.monotonic() < idle_by:
            time.sleep(1)
            now = self.cpu_s()
            if now - before < 0.05:
                break
            before = now

    def cpu_s(self) -> float:
        """CPU seconds the server's process has used so far (0.0 where ``/proc`` is not readable)."""
        try:
            fields = Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, AttributeError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: Any) -> None:
        if self._proc is not None:
            try:  # the whole process group, even when its leader has already exited
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(timeout=30)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
        if getattr(self, "_log", None) is not None:
            self._log.close()


def run_review(
    source: Path,
    workdir: Path,
    backend: str,
    routing: str = "auto",
    concurrency: int = 16,
    env: dict[str, str] | None = None,
    profile: bool = False,
    timeout_s: float = 3600,
    rss_every: int = RSS_EVERY,
    prefect_api_url: str | None = None,
) -> dict[str, Any]:
    """Run the ``review-documents`` flow over ``source`` in a child process; return its figures.

    The child uses a fresh SQLite database in ``workdir`` and a temporary Prefect server whose
    home is ``benchmarks/results/prefect-home`` (or the running Prefect API ``prefect_api_url``,
    else the one named by ``DOCREVIEW_BENCH_PREFECT_API_URL``). LLM calls are bounded by the in-process semaphore
    (``concurrency_scope="process"``) at ``concurrency`` calls. Returns the child's
    JSON (see :func:`_child`) plus ``process_wall_s`` (seconds, child start to exit) and
    ``db_url``. ``profile=True`` also writes a pyinstrument text profile to
    ``workdir/profile.txt``. Raises ``RuntimeError`` when the child fails (its stderr tail included).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    db_url = f"sqlite:///{workdir / 'bench.db'}"
    stats = workdir / "stats.json"
    policy = workdir / "policy.json"
    policy.write_text(
        json.dumps(
            {"llm_concurrency": concurrency, "attempts": 4, "backoff_base_s": 0.5, "concurrency_scope": "process"}
        )
    )
    # One Prefect home for every benchmark run: its database is migrated once, not per run.
    child_env = {
        **os.environ,
        **(env or {}),
        "PREFECT_HOME": str(RESULTS / "prefect-home"),
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    }
    child_env.pop("PREFECT_API_URL", None)  # a temporary Prefect server of the child's own ...
    if prefect_api_url or os.environ.get("DOCREVIEW_BENCH_PREFECT_API_URL"):  # ... unless one is named
        child_env["PREFECT_API_URL"] = prefect_api_url or os.environ["DOCREVIEW_BENCH_PREFECT_API_URL"]
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    cmd = [
        sys.executable,
        "-m",
        "benchmarks._harness",
        str(source),
        "--out",
        str(workdir / "out"),
        "--db",
        db_url,
        "--backend",
        backend,
        "--routing",
        routing,
        "--policy",
        str(policy),
        "--stats",
        str(stats),
        "--rss-every",
        str(rss_every),
    ]
    if profile:
        cmd += ["--profile", str(workdir / "profile.txt")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=child_env, capture_output=True, text=True, timeout=timeout_s)
    wall = time.perf_counter() - started
    if proc.returncode != 0 or not stats.exists():
        raise RuntimeError(f"review child exited {proc.returncode}: {proc.stderr[-2000:]}")
    result = json.loads(stats.read_text())
    result.update(process_wall_s=round(wall, 2), db_url=db_url)
    return result


def llm_stats(db_url: str, run_id: str) -> dict[str, float]:
    """The run's ``llm_calls`` summed: ``calls``, ``mean_call_s`` (mean latency, seconds),
    ``busy_s`` (summed latency, seconds), ``input_tokens`` (uncached input), ``cache_read_tokens``,
    ``cache_write_tokens``, ``output_tokens``, ``cost_usd`` (USD, as recorded per call)."""
    from sqlmodel import Session, select

    from schemas.tables import LLMCallRow
    from tasks.store.persist import dispose_engines, get_engine

    with Session(get_engine(db_url)) as session:
        rows = session.exec(select(LLMCallRow).where(LLMCallRow.run_id == run_id)).all()
    dispose_engines()
    calls = len(rows)
    busy = sum(r.latency_ms for r in rows) / 1000
    return {
        "calls": calls,
        "mean_call_s": busy / calls if calls else 0.0,
        "busy_s": busy,
        "input_tokens": sum(r.input_tokens for r in rows),
        "cache_read_tokens": sum(r.cache_read_input_tokens for r in rows),
        "cache_write_tokens": sum(r.cache_creation_input_tokens for r in rows),
        "output_tokens": sum(r.output_tokens for r in rows),
        "cost_usd": sum(r.cost_usd for r in rows),
    }


# ------------------------------------------------------------------------------------------
# The child: one flow run, instrumented
# ------------------------------------------------------------------------------------------


class _Meter:
    """Per-stage task-body time (thread-time summed over threads, seconds) and main-thread samples."""

    def __init__(self, rss_every: int = RSS_EVERY) -> None:
        self.rss_every = rss_every
        self.lock = threading.Lock()
        self.busy: dict[str, float] = defaultdict(float)
        self.runs: dict[str, int] = defaultdict(int)
        self.current: dict[int, str] = {}  # thread ident -> stage of the task body it runs
        self.main_samples: dict[str, int] = defaultdict(int)
        self.ended = 0
        self.rss: dict[int, dict[str, float]] = {}

    def wrap(self, name: str, fn: Any) -> Any:
        stage = STAGES.get(name, "other")

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            ident = threading.get_ident()
            outer = self.current.get(ident)
            self.current[ident] = stage
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                if outer is None:
                    self.current.pop(ident, None)
                    with self.lock:
                        self.busy[stage] += spent
                        self.runs[name] += 1
                else:
                    self.current[ident] = outer  # nested body: already counted by the outer one
                if name == "save-document-outcome":
                    self._document_ended()

        return timed

    def _document_ended(self) -> None:
        with self.lock:
            self.ended += 1
            if self.ended % self.rss_every == 0:
                self.rss[self.ended] = _rss_mb()

    def sample_main(self, stop: threading.Event, interval_s: float = 0.005) -> None:
        """Classify the main thread every ``interval_s``: in a task body (its stage), waiting for
        an event (``idle``), or anything else (``orchestration``: flow control and Prefect's engine)."""
        main = threading.main_thread().ident
        while not stop.wait(interval_s):
            frame = sys._current_frames().get(main)
            if frame is None:
                continue
            stage = self.current.get(main)
            if stage is None:
                stage = "orchestration"
                depth = 0
                while frame is not None and depth < 12:
                    code = frame.f_code
                    if code.co_name in ("get", "wait") and code.co_filename.endswith(
                        ("queue.py", "threading.py", "_base.py")
                    ):
                        stage = "idle"
                        break
                    frame, depth = frame.f_back, depth + 1
            self.main_samples[stage] += 1


def _rss_mb() -> dict[str, float]:
    """Current and peak resident set size of this process, MiB (``/proc/self/status``)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out["rss_mb" if line.startswith("VmRSS") else "peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    return out


def _instrument(meter: _Meter) -> None:
    """Wrap the body (``fn``) of every Prefect task the flow uses with :meth:`_Meter.wrap`."""
    from prefect import Task

    import flows.review  # noqa: F401 - imports every task module the flow uses

    seen: set[int] = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(("tasks.", "flows.")) or module is None:
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, Task) and id(obj) not in seen:
                seen.add(id(obj))
                obj.fn = meter.wrap(obj.name, obj.fn)


def _child(argv: list[str]) -> int:
    """Run one instrumented flow and write its figures as JSON to ``--stats``.

    JSON: ``run_id``, ``metrics`` (the report's run metrics), ``flow_wall_s`` (seconds around the
    flow call), ``flow_cpu_s`` (CPU seconds of this process and of the children it reaped
    during the flow call: the extraction workers, not a Prefect server it started), ``busy_s`` (task-body seconds per stage, summed over threads), ``task_runs``
    (count per task name), ``main_thread`` (share of samples per state), ``rss`` (document count
    -> ``{"rss_mb", "peak_rss_mb"}``), ``rss_end`` and ``children_peak_rss_mb`` (largest
    extraction child, MiB).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks._harness")
    parser.add_argument("source")
    parser.add_argument("--out", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--backend", default="rules")
    parser.add_argument("--routing", default="auto")
    parser.add_argument("--policy", required=True)
    parser.add_argument("--stats", required=True)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--rss-every", type=int, default=RSS_EVERY)
    args = parser.parse_args(argv)

    import resource

    from schemas.policy import ResiliencePolicy

    meter = _Meter(args.rss_every)
    _instrument(meter)
    from flows.review import review_documents

    policy = ResiliencePolicy.model_validate_json(Path(args.policy).read_text())
    stop = threading.Event()
    sampler = threading.Thread(target=meter.sample_main, args=(stop,), daemon=True)
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(async_mode="disabled")
        profiler.start()
    sampler.start()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = review_documents(
        source=args.source,
        out_dir=args.out,
        database_url=args.db,
        backend=args.backend,
        routing=args.routing,
        policy=policy,
    )
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    flow_cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(cpu_after, cpu_before))
    stop.set()
    sampler.join()
    if profiler is not None:
        profiler.stop()
        Path(args.profile).write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    total = sum(meter.main_samples.values()) or 1
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    Path(args.stats).write_text(
        json.dumps(
            {
                "run_id": result["run_id"],
                "metrics": result["metrics"],
                "flow_wall_s": round(wall, 3),
                "flow_cpu_s": round(flow_cpu, 3),
                "busy_s": {k: round(v, 4) for k, v in sorted(meter.busy.items())},
                "task_runs": dict(meter.runs),
                "main_thread": {k: round(v / total, 4) for k, v in sorted(meter.main_samples.items())},
                "rss": meter.rss,
                "rss_end": _rss_mb(),
                "documents_ended": meter.ended,
                "children_peak_rss_mb": round(children, 1),
            }
        )
    )
    from tasks.store.persist import dispose_engines

    dispose_engines()
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
