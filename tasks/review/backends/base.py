"""The review backend interface shared by the ``rules``, ``anthropic`` and ``bedrock`` backends.

A backend turns one :class:`~schemas.documents.Chunk` into a :class:`ChunkReview`: findings in
the shared :class:`~schemas.findings.Finding` schema plus a record of every model call made.
Backends do not retry: retries belong to the Prefect task that calls them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from schemas.documents import Chunk
from schemas.review import ChunkReview


@runtime_checkable
class ReviewBackend(Protocol):
    """A reviewer of chunks.

    ``name`` is the backend id (``rules``, ``anthropic``, ``bedrock``); ``model`` is the model
    id (or the rules version), part of the review idempotency key.
    """

    name: str
    model: str

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        """Review ``chunk`` of the document called ``document_name``.

        Raises backend-specific transport errors (connection, timeout, HTTP status); the
        calling task classifies them for retry.
        """
        ...
