"""The review flow as a Prefect flow whose plain parameters are recorded without FastAPI.

Prefect records a flow run's parameters (shown in its UI) through
``Flow.serialize_parameters``, which passes each value to FastAPI's ``jsonable_encoder``: the
first run in a process imports FastAPI (and Starlette) for that alone, about 0.2 s of CPU of
every ``docreview review``. For a string, number, boolean or ``None`` that encoder returns the
value itself, so :class:`PlainParametersFlow` returns such values as they are and leaves any
other parameters (a resilience policy, a Prefect future) to Prefect: the recorded parameters are
the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Flow

P = ParamSpec("P")
R = TypeVar("R")

#: The types ``jsonable_encoder`` returns unchanged (exact types: an ``Enum`` subclass of ``str``
#: is encoded to its value, so it goes to Prefect).
PLAIN_TYPES = (str, int, float, bool, type(None))


class PlainParametersFlow(Flow[P, R]):
    """A :class:`prefect.Flow` that records plain parameters without importing FastAPI."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        if all(type(value) in PLAIN_TYPES for value in parameters.values()):
            return dict(parameters)
        return super().serialize_parameters(parameters)


def flow(**options: Any) -> Callable[[Callable[P, R]], Flow[P, R]]:
    """``prefect.flow(**options)`` building a :class:`PlainParametersFlow`."""

    def decorate(fn: Callable[P, R]) -> Flow[P, R]:
        return PlainParametersFlow(fn=fn, **options)

    return decorate
