"""A flow run's heartbeat thread that stops when the run ends, not up to a second later.

Prefect's flow engine (``prefect.flow_engine._send_heartbeats``) emits a
``prefect.flow-run.heartbeat`` event from a daemon thread every ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``
seconds (180 by default, at least 30), sleeping in steps of one second between events, and the
engine joins that thread when the flow run ends. Every ``docreview review`` process therefore
waited 0 to 1 s (0.5 s on average, more on a loaded machine) after its flow had finished before
it could print the summary and exit.

:func:`install` replaces that context manager with :func:`_send_heartbeats`: the same events at
the same times from the same kind of thread (the first at once, then one per interval, none once
the run is in a final state), the same join (at most 2 s) when the run ends, but the thread waits
on the stop event instead of sleeping, so it ends as soon as the run does. It replaces Prefect's
only in the release it was written against (:data:`PREFECT_SERIES`), where the engine looks the
function up by name when a flow run starts; in another release Prefect's own stays.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

#: The Prefect release series whose ``_send_heartbeats`` this module's copy follows.
PREFECT_SERIES = "3.9."

#: Prefect's own ``_send_heartbeats``, once :func:`install` has replaced it.
prefect_send_heartbeats: Any = None


@contextmanager
def _send_heartbeats(engine: Any, join_on_exit: bool = True) -> Generator[None, None, None]:
    """Prefect 3.9's ``_send_heartbeats`` with one change: the thread waits on ``stop_event``
    between heartbeats instead of sleeping one second at a time."""
    from prefect.flow_engine import MINIMUM_HEARTBEAT_INTERVAL

    heartbeat_seconds = engine.heartbeat_seconds
    if heartbeat_seconds is None:
        yield
        return
    heartbeat_seconds = max(heartbeat_seconds, MINIMUM_HEARTBEAT_INTERVAL)
    resource, related = engine._build_heartbeat_event_template()
    stop_event = threading.Event()

    def heartbeat_loop() -> None:
        while not stop_event.is_set():
            if engine.flow_run and engine.flow_run.state and engine.flow_run.state.is_final():
                engine.logger.debug("Flow run in terminal state, stopping heartbeat")
                return
            try:
                engine._emit_flow_run_heartbeat(resource, related)
            except Exception:
                engine.logger.debug("Failed to emit heartbeat", exc_info=True)
            if stop_event.wait(heartbeat_seconds):
                return

    # The thread sees the calling thread's settings (PREFECT_API_URL), as in Prefect's own.
    heartbeat_ctx = contextvars.copy_context()
    thread = threading.Thread(target=heartbeat_ctx.run, args=(heartbeat_loop,), daemon=True)
    thread.start()
    engine.logger.debug("Started flow run heartbeat context")
    try:
        yield
    finally:
        stop_event.set()
        if join_on_exit:
            thread.join(timeout=2)
        engine.logger.debug("Stopped flow run heartbeat context")


def install() -> bool:
    """Use :func:`_send_heartbeats` for the flow runs of this process; True when it is in place
    (now or already), False when the installed Prefect is not of :data:`PREFECT_SERIES` or lacks
    the function (its own then stays)."""
    import prefect
    import prefect.flow_engine as flow_engine

    if not str(getattr(prefect, "__version__", "")).startswith(PREFECT_SERIES):
        return False
    current = getattr(flow_engine, "_send_heartbeats", None)
    if current is _send_heartbeats:
        return True
    if not callable(current):
        return False
    global prefect_send_heartbeats
    prefect_send_heartbeats = current
    flow_engine._send_heartbeats = _send_heartbeats
    return True
