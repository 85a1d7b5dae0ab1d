"""flows/heartbeat.py: the flow run's heartbeat thread emits as Prefect's does and ends with the run."""

from __future__ import annotations

import inspect
import threading
import time
from typing import Any

import prefect.flow_engine as flow_engine

import flows.review  # noqa: F401 - installs the heartbeat (flows.review imports flows.heartbeat)
from flows import heartbeat


class FakeEngine:
    """What ``_send_heartbeats`` reads of a flow run engine; records the heartbeats it emits."""

    def __init__(self, seconds: int | None = 30) -> None:
        import logging

        self.heartbeat_seconds = seconds
        self.flow_run = None
        self.logger = logging.getLogger("test.heartbeat")
        self.emitted: list[tuple[Any, Any]] = []
        self.first = threading.Event()

    def _build_heartbeat_event_template(self) -> tuple[dict[str, str], list[Any]]:
        return {"prefect.resource.id": "prefect.flow-run.test"}, []

    def _emit_flow_run_heartbeat(self, resource: Any, related: Any) -> None:
        self.emitted.append((resource, related))
        self.first.set()


def test_installed_for_the_flow_runs_of_the_process():
    assert heartbeat.install() is True
    assert flow_engine._send_heartbeats is heartbeat._send_heartbeats


def test_follows_prefects_signature():
    """The engine calls it as Prefect's own (``engine``, ``join_on_exit``)."""
    original = heartbeat.prefect_send_heartbeats
    assert original is not None and original is not heartbeat._send_heartbeats
    assert list(inspect.signature(original).parameters) == list(
        inspect.signature(heartbeat._send_heartbeats).parameters
    )


def test_emits_at_start_and_stops_with_the_run_without_sleeping(monkeypatch):
    """A heartbeat at once, none after the run; the thread waits on the stop event (Prefect's
    sleeps one second at a time, so its thread outlived the run by up to a second)."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda s: slept.append(s))
    engine = FakeEngine()
    before = set(threading.enumerate())
    with heartbeat._send_heartbeats(engine):
        assert engine.first.wait(30)
        started = set(threading.enumerate()) - before
        assert len(started) == 1
    assert not any(t.is_alive() for t in started)
    assert len(engine.emitted) == 1
    assert engine.emitted[0][0] == {"prefect.resource.id": "prefect.flow-run.test"}
    assert slept == []


def test_no_heartbeats_when_prefect_has_them_off():
    engine = FakeEngine(seconds=None)
    before = set(threading.enumerate())
    with heartbeat._send_heartbeats(engine):
        assert set(threading.enumerate()) == before
    assert engine.emitted == []
