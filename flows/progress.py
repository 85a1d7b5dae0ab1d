"""Progress reporting from a running flow to whoever started it (the CLI's progress bar).

The flow calls :func:`begin` and :func:`advance`; a listener registered with :func:`listen`
receives the events in the flow's process. With no listener (a deployment run), nothing happens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]

_listeners: list[Listener] = []
_lock = threading.Lock()


def listen(listener: Listener) -> Callable[[], None]:
    """Register ``listener(event, data)``; returns a function that unregisters it."""
    with _lock:
        _listeners.append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def emit(event: str, **data: Any) -> None:
    """Send ``event`` with ``data`` to every listener; a failing listener is ignored."""
    with _lock:
        targets = list(_listeners)
    for listener in targets:
        try:
            listener(event, data)
        except Exception:
            pass


def begin(total: int) -> None:
    """The run found ``total`` documents."""
    emit("begin", total=total)


def advance(name: str, status: str) -> None:
    """One document reached its terminal ``status``."""
    emit("advance", name=name, status=status)
