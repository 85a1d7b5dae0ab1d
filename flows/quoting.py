"""Prefect's :class:`~prefect.utilities.annotations.quote`, typed as the value the task receives.

A flow passes ``quote(x)`` to a task so Prefect neither walks ``x`` for futures nor hashes it: the
task gets ``x`` itself. Prefect types ``quote(x)`` as ``quote[T]``, which its own ``Task.__call__``
and ``Task.submit`` (typed with the task function's parameters) do not accept; this function is
Prefect's ``quote`` with the type the task sees.
"""

from __future__ import annotations

from typing import TypeVar, cast

from prefect.utilities.annotations import quote as prefect_quote

T = TypeVar("T")


def quote(value: T) -> T:
    """``prefect.utilities.annotations.quote(value)``, typed as ``value``'s type."""
    return cast(T, prefect_quote(value))
