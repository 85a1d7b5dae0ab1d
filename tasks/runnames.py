"""Task-run names that carry the document's file name, so the Prefect UI shows one document's path.

The review flow runs each document's steps inside :func:`document_scope`; a task declared with
``task_run_name=for_document("extract")`` is then named ``extract · contract.pdf`` in the Prefect
UI, whose task-run list can be searched by file name. Tasks submitted from inside the scope carry
it along (Prefect's thread-pool runner copies the caller's context). Outside a scope, or on a Dask
worker (the scope is not sent there), the name is the stage alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from prefect.tasks import TaskRunNameCallbackWithParameters

#: File name of the document whose steps the current thread runs (None outside a document).
CURRENT_DOCUMENT: ContextVar[str | None] = ContextVar("docreview_current_document", default=None)


class for_document(TaskRunNameCallbackWithParameters):
    """A ``task_run_name`` callable: ``"<stage> · <file name>"``, plus ``" · <detail(parameters)>"``
    when ``detail`` is given (it receives the task run's resolved parameters by name).

    A class, not a closure, so a task pickled to another process (a Dask worker) carries only the
    stage and detail; the file name is read from :data:`CURRENT_DOCUMENT` where the name is made.
    It subclasses Prefect's protocol for such callables (``task(task_run_name=...)`` is typed with it).
    """

    def __init__(self, stage: str, detail: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.stage, self.detail = stage, detail

    def __call__(self, parameters: dict[str, Any]) -> str:
        """The task run's name."""
        parts = [self.stage]
        document = CURRENT_DOCUMENT.get()
        if document:
            parts.append(document)
        if self.detail is not None:
            try:
                parts.append(self.detail(parameters))
            except Exception:
                pass
        return " · ".join(parts)


@contextmanager
def document_scope(file_name: str) -> Iterator[None]:
    """Name the task runs started in this block (and the tasks they submit) after ``file_name``."""
    token = CURRENT_DOCUMENT.set(file_name)
    try:
        yield
    finally:
        CURRENT_DOCUMENT.reset(token)
