"""Task runners for the review flow: Prefect's thread pool (default) or a Dask cluster.

``docreview review --task-runner dask`` runs the flow's submitted tasks (fingerprint, extract,
review-chunk, fact-check, review-batch) on Dask through prefect-dask's ``DaskTaskRunner``: on a
temporary ``distributed.LocalCluster`` by default, or on a running scheduler with
``--dask-address tcp://HOST:8786``. The flow itself, and every database write it makes, stays
in the flow's process.

What crosses to a Dask worker is pickled (cloudpickle): task arguments are pydantic models,
plain values and the review backend. Backends holding SDK clients (anthropic, bedrock) drop the
client when pickled and open their own in the worker (:mod:`tasks.review.backends`); secrets travel as
``SecretStr`` inside those objects only when the worker needs them, never in Prefect's stored
parameters. Each worker process opens at most one pooled engine per database URL
(:func:`tasks.store.persist.get_engine`), so its PostgreSQL connections are bounded.
"""

from __future__ import annotations

import copyreg
import importlib
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from prefect import Flow
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

if TYPE_CHECKING:
    from prefect_dask import DaskTaskRunner

TaskRunnerName = Literal["thread", "dask"]

#: LocalCluster shape used when no ``--dask-address`` is given: worker processes and threads each.
LOCAL_DASK_WORKERS = 2
LOCAL_DASK_THREADS_PER_WORKER = 2


def make_task_runner(name: str = "thread", dask_address: str | None = None, max_workers: int = 8) -> TaskRunner[Any]:
    """The task runner called ``name``: ``thread`` (a ``ThreadPoolTaskRunner`` of ``max_workers``)
    or ``dask`` (a ``DaskTaskRunner`` on ``dask_address``, else on a new local cluster of
    :data:`LOCAL_DASK_WORKERS` processes × :data:`LOCAL_DASK_THREADS_PER_WORKER` threads, no dashboard).

    Raises ``ValueError`` for another name, or for ``dask_address`` with the thread runner, and
    ``ImportError`` (with the install command) when prefect-dask is missing.
    """
    if name == "thread":
        if dask_address:
            raise ValueError("--dask-address needs --task-runner dask")
        return ThreadPoolTaskRunner(max_workers=max_workers)
    if name != "dask":
        raise ValueError(f"unknown task runner {name!r} (choose thread or dask)")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # before distributed is imported
    register_pickling()
    runner_class = _dask_runner_class()
    if dask_address:
        return runner_class(address=dask_address)
    return runner_class(
        cluster_kwargs={
            "n_workers": LOCAL_DASK_WORKERS,
            "threads_per_worker": LOCAL_DASK_THREADS_PER_WORKER,
            "processes": True,
            "dashboard_address": None,
        }
    )


def _dask_runner_class() -> type[DaskTaskRunner]:
    """prefect-dask's ``DaskTaskRunner``, unwrapping ``quote``-d task parameters.

    Dask's graph parser rebuilds tuples it finds in task arguments as plain tuples, and
    ``prefect.utilities.annotations.quote`` (which the flow uses for large arguments, so Prefect
    does not search them for futures) is a named tuple: the task would receive ``(value,)``. The
    value is sent as itself instead. The review flow passes no futures as parameters, so the
    stock swap of Prefect futures for Dask futures is not needed.
    """
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise ImportError("the dask task runner needs prefect-dask: pip install prefect-dask") from exc

    class ReviewDaskTaskRunner(DaskTaskRunner):
        """``DaskTaskRunner`` that sends ``quote``-d parameters as their values (see above) and
        connects once however many threads submit at the same moment: the review flow's document
        pipelines submit from several threads, and prefect-dask creates its client (and a local
        cluster) lazily on first use without a lock, so two first submissions started two clusters."""

        _connect_lock = threading.Lock()

        @property
        def client(self) -> Any:
            with self._connect_lock:
                return super().client

        def _optimize_futures(self, expr: Any) -> Any:
            from prefect.utilities.annotations import quote

            if isinstance(expr, dict):
                return {k: v.unquote() if isinstance(v, quote) else v for k, v in expr.items()}
            return expr

    return ReviewDaskTaskRunner


@contextmanager
def prefect_api_for_workers() -> Iterator[str | None]:
    """Make sure task runs in other processes (Dask workers) report to the flow's Prefect API.

    With ``PREFECT_API_URL`` set this does nothing. Otherwise Prefect would give every worker
    process a temporary server of its own, so this starts Prefect's temporary server for this
    process now and sets ``PREFECT_API_URL`` to it for the block (the flow-run context sent to
    the workers carries the setting). Yields the API URL in use (None if none is configured).
    A worker on another host must reach that URL: use a Prefect server with ``--dask-address``.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = PREFECT_API_URL.value()
    if url:
        yield url
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the same singleton Prefect's own temporary mode uses
    server.start()
    with temporary_settings({PREFECT_API_URL: server.api_url}):
        yield server.api_url


def register_pickling() -> None:
    """Teach pickle (and so cloudpickle and Dask) the process-local parts of the review flow.

    - Module-level flows pickle by reference (module and name), not by value. prefect-dask sends
      the flow-run context, which holds the flow, with every task; a flow's function is not
      importable under its own name (the module attribute is the ``Flow``), so cloudpickle would
      copy the function and every global it uses. The worker imports the flow instead. Flows not
      defined at module level pickle as before.
    - :data:`tasks.review.resilience.counters` (retries, breaker openings; it holds a lock and is
      captured by the review task's retry condition) and
      :data:`tasks.review.resilience.misconfiguration` (the stop on refused requests) unpickle as
      the receiving process's own. Retries made on a Dask worker are therefore counted in that worker, not in the
      run's ``retries`` metric (see docs/scaling.md, "Dask").
    - Model backends (anthropic, bedrock) unpickle as the receiving process's own backend of the
      same name and model (:func:`_worker_backend`): neither the SDK client nor the API key is
      sent.
    """
    from tasks.review.backends.anthropic_backend import AnthropicBackend
    from tasks.review.backends.bedrock_backend import BedrockBackend
    from tasks.review.resilience import Misconfiguration, RunCounters

    copyreg.pickle(Flow, _reduce_flow)
    copyreg.pickle(RunCounters, _reduce_counters)
    copyreg.pickle(Misconfiguration, _reduce_misconfiguration)
    for backend_class in (AnthropicBackend, BedrockBackend):
        copyreg.pickle(backend_class, _reduce_backend)


def _reduce_backend(backend: Any) -> Any:
    return _worker_backend, (backend.name, backend.model)


_worker_backends: dict[tuple[str, str], Any] = {}
_worker_backends_lock = threading.Lock()


def _worker_backend(name: str, model: str) -> Any:
    """The model backend ``name`` of this process, built once from its own environment.

    Model backends hold an SDK client (connections, locks) and the API key: they are not sent
    to Dask workers. A worker builds its own from ``ANTHROPIC_*`` / ``AWS_*`` / ``DOCREVIEW_*``
    (a ``LocalCluster`` inherits the flow's environment; give remote workers the same).
    Raises ``RuntimeError`` when the worker's settings name another model than the run's.
    """
    from schemas.settings import Settings
    from tasks.review.reviewer import make_backend

    with _worker_backends_lock:
        backend = _worker_backends.get((name, model))
        if backend is None:
            backend = make_backend(Settings(backend=name, redact_pii=False))
            if backend.model != model:
                raise RuntimeError(
                    f"this Dask worker's settings select model {backend.model!r} but the run uses "
                    f"{model!r}: give the workers the same DOCREVIEW_* environment as the flow"
                )
            _worker_backends[(name, model)] = backend
        return backend


def _reduce_counters(_counters: Any) -> Any:
    return _process_counters, ()


def _process_counters() -> Any:
    """This process's :data:`tasks.review.resilience.counters`."""
    from tasks.review.resilience import counters

    return counters


def _reduce_misconfiguration(_gate: Any) -> Any:
    return _process_misconfiguration, ()


def _process_misconfiguration() -> Any:
    """This process's :data:`tasks.review.resilience.misconfiguration` (on a Dask worker, refusals
    are counted per worker process; the flow's start-up check still runs in the flow process)."""
    from tasks.review.resilience import misconfiguration

    return misconfiguration


def _reduce_flow(flow: Flow) -> Any:
    module, name = flow.fn.__module__, flow.fn.__name__
    target = getattr(sys.modules.get(module), name, None)
    if isinstance(target, Flow) and target.fn is flow.fn:
        return _import_flow, (module, name)
    return flow.__reduce_ex__(pickle.DEFAULT_PROTOCOL)


def _import_flow(module: str, name: str) -> Flow:
    """The flow ``name`` of ``module`` (the other end of :func:`register_pickling`)."""
    return getattr(importlib.import_module(module), name)


def dask_setup(*_: Any) -> None:
    """Dask preload hook: ``dask scheduler --preload flows.runners`` and ``dask worker …
    --preload flows.runners`` register :func:`register_pickling` in those processes too, so a
    scheduler started on its own can (de)serialise the review flow's tasks."""
    register_pickling()
