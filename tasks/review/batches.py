"""Message Batches mode: review every deep chunk of a run in Anthropic Message Batches.

Batch requests cost half the price of the same Messages API calls and finish within 24 hours
(Anthropic "Batch processing" docs: 50% discount on input and output tokens; results are kept
for 29 days), which suits the nightly deployment. Each request is the ``messages.create``
keyword arguments the ``anthropic`` backend builds for a chunk (:meth:`AnthropicBackend.request`),
and each reply goes through the same parse as a non-streaming call
(:func:`tasks.review.backends.anthropic_backend.parse_tool_reply`).

- ``custom_id`` comes from stable identifiers only (:func:`custom_id`): the document sha256, the
  chunk index and a hash of prompt version and model, so the same pending work always gives the
  same ids.
- The requests are split into batches under the API's limits (:func:`split_requests`: at most
  100,000 requests and 256 MB per batch; Anthropic "Batch processing", "Batch limitations"),
  in input order, so the same pending work always gives the same batches.
- Each batch is stored (``message_batches`` table, :class:`schemas.tables.BatchRow`) under the
  sha256 of its requests (:func:`batch_key`: every ``custom_id`` with its params) *before* polling,
  so a run killed between submit and results resumes the same batch instead of submitting (and paying
  for) it again — but only while its results can still exist: results are kept 29 days after creation
  (:data:`RESULTS_KEPT_DAYS`); an older stored batch, or one the API answers 404 for
  (:func:`batch_exists`), is submitted again.
- The cached prefix is marked with a 1-hour cache TTL (``cache_control.ttl = "1h"``): batch
  requests are processed over minutes to hours, past the default 5-minute lifetime (Anthropic
  "Batch processing": "use the 1-hour cache duration" with batches); 1-hour writes cost 2x input.
- No follow-up calls: a truncated reply, a refusal or invalid tool input is the chunk's outcome
  (the document is then deferred or failed by the flow, as for a single call).
- The SDK client has ``max_retries=0`` and an explicit timeout; the ``review-batch`` task is the
  one retry layer, and it is safe to retry because submitting resumes the stored batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlmodel import Session, select

from schemas.documents import Chunk
from schemas.findings import PROMPT_VERSION
from schemas.review import ChunkReview, LLMCallRecord, ReviewOutcome
from schemas.tables import BatchRow, utcnow
from tasks.review.retry import retry_condition

logger = logging.getLogger("docreview.llm")

#: Batch price as a fraction of the Messages API price (Anthropic pricing page, "Batch processing").
BATCH_PRICE_FACTOR = 0.5

#: ``custom_id`` rule of the Message Batches API.
CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: Most requests in one Message Batch (Anthropic "Batch processing", "Batch limitations").
MAX_BATCH_REQUESTS = 100_000

#: Largest Message Batch request body, bytes (256 MB; same source). A margin of 1 MiB is kept for
#: the JSON envelope and the HTTP encoding.
MAX_BATCH_BYTES = 256 * 1024 * 1024 - 1024 * 1024

#: Days a batch's results can be retrieved after the batch is created (same source: "Results are
#: available for 29 days after creation"). A stored batch older than this is submitted again.
RESULTS_KEPT_DAYS = 29

#: Prompt-cache lifetime in batch mode (see the module docstring).
BATCH_CACHE_TTL = "1h"


class BatchTimeoutError(RuntimeError):
    """The batch did not end within the polling timeout. Not retried by the task (the batch keeps
    running on the API side; the documents are deferred and the next run resumes the same batch)."""


def custom_id(chunk: Chunk, prompt_version: str, model: str) -> str:
    """``{sha256[:16]}-{chunk index}-{sha256(prompt_version + model)[:8]}``: stable across runs,
    unique across documents and chunks, at most 64 characters of ``[a-zA-Z0-9_-]``."""
    tag = hashlib.sha256(f"{prompt_version}{model}".encode()).hexdigest()[:8]
    cid = f"{chunk.document_sha256[:16]}-{chunk.index}-{tag}"
    if not CUSTOM_ID_RE.match(cid):  # pragma: no cover - sha256 hex and ints always match
        raise ValueError(f"invalid custom_id {cid!r}")
    return cid


def batch_key(requests: list[dict[str, Any]]) -> str:
    """sha256 (hex, 64 chars) of the requests (``[{"custom_id", "params"}]``) in ``custom_id`` order, each
    as canonical JSON: the stable key of a set of pending requests. A change to anything a request sends
    (model, ``max_tokens``, schema, thinking, cache lifetime) gives another key, so a stored batch is
    resumed only for exactly the requests it was made of."""
    digest = hashlib.sha256()
    for request in sorted(requests, key=lambda r: str(r.get("custom_id"))):
        digest.update(json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def split_requests(
    requests: list[dict[str, Any]], max_requests: int = MAX_BATCH_REQUESTS, max_bytes: int = MAX_BATCH_BYTES
) -> list[list[dict[str, Any]]]:
    """``requests`` in consecutive groups of at most ``max_requests`` requests and ``max_bytes``
    bytes of JSON each (the size of one request is its compact UTF-8 JSON plus a separator).
    Order is kept. Raises ``ValueError`` when one request alone is larger than ``max_bytes``."""
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for request in requests:
        n = len(json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()) + 1
        if n > max_bytes:
            raise ValueError(f"batch request {request.get('custom_id')} is {n} bytes, over the {max_bytes}-byte limit")
        if current and (len(current) >= max_requests or size + n > max_bytes):
            groups.append(current)
            current, size = [], 0
        current.append(request)
        size += n
    if current:
        groups.append(current)
    return groups


def with_cache_ttl(params: dict[str, Any], ttl: str = BATCH_CACHE_TTL) -> dict[str, Any]:
    """A copy of ``messages.create`` keyword arguments whose ``cache_control`` breakpoints (system
    blocks and tools) carry ``ttl``."""
    out = dict(params)
    for key in ("system", "tools"):
        if isinstance(out.get(key), list):
            out[key] = [
                dict(b, cache_control={**b["cache_control"], "ttl": ttl})
                if isinstance(b, dict) and "cache_control" in b
                else b
                for b in out[key]
            ]
    return out


def results_may_exist(created_at: datetime | None, now: datetime | None = None) -> bool:
    """Whether a batch created at ``created_at`` (UTC; naive values are read as UTC) still has
    retrievable results: less than :data:`RESULTS_KEPT_DAYS` days old."""
    if created_at is None:
        return False
    if created_at.tzinfo is None:
        created_at = created_at.replace(tzinfo=UTC)
    return (now or datetime.now(UTC)) - created_at < timedelta(days=RESULTS_KEPT_DAYS)


def batch_exists(client: Any, batch_id: str) -> bool:
    """Whether the API still knows batch ``batch_id``: False on a 404 ``not_found_error`` (the errors page:
    "The requested resource was not found. Check the endpoint path and any resource IDs in the request
    URL"; for example a batch made under another workspace's key), logged; True otherwise. Any other error
    is raised (the task's retry policy decides)."""
    import anthropic

    try:
        client.messages.batches.retrieve(batch_id)
    except anthropic.NotFoundError:
        logger.warning("stored message batch %s is not found by the API (404): submitting the requests again", batch_id)
        return False
    return True


def submit_batch(client: Any, requests: list[dict[str, Any]]) -> str:
    """Create a Message Batch from ``requests`` (``[{"custom_id", "params"}]``, ``params`` being
    ``messages.create`` keyword arguments); returns the batch id. Raises the SDK's errors."""
    batch = client.messages.batches.create(requests=requests)
    logger.info("submitted message batch %s with %d request(s)", batch.id, len(requests))
    return batch.id


def poll_batch(client: Any, batch_id: str, interval_s: float = 60.0, timeout_s: float = 86_400.0) -> Any:
    """Retrieve the batch every ``interval_s`` seconds until ``processing_status == "ended"``;
    returns the SDK ``MessageBatch``. Raises :class:`BatchTimeoutError` after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        batch = client.messages.batches.retrieve(batch_id)
        if batch.processing_status == "ended":
            return batch
        if time.monotonic() >= deadline:
            raise BatchTimeoutError(f"message batch {batch_id} still {batch.processing_status} after {timeout_s:.0f} s")
        time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))


def fetch_results(
    client: Any,
    batch_id: str,
    chunk_indexes: dict[str, int] | None = None,
    prices: dict[str, tuple[float, float, float, float]] | None = None,
    mode: str = "tool",
    cache_ttl: str | None = None,
    profiles: Mapping[str, str] | None = None,
) -> dict[str, ChunkReview]:
    """Results of an ended batch: ``{custom_id: ChunkReview}``.

    ``chunk_indexes`` maps ``custom_id`` to the chunk index (else it is read from the id). A
    ``succeeded`` result is parsed like a non-streaming reply (``parse_tool_reply`` for ``mode``,
    ``tool`` or ``json_schema``) with one :class:`LLMCallRecord` whose ``cost_usd`` is
    :data:`BATCH_PRICE_FACTOR` times the Messages API price (cache writes at the 1-hour price when
    ``cache_ttl == "1h"``; Anthropic pricing page: the prompt-caching multipliers stack with the
    batch discount); ``errored``, ``canceled`` or ``expired``
    results become ``ReviewOutcome.error``. ``profiles`` maps ``custom_id`` to its chunk's review
    profile (``contract`` when absent), which chooses the schema the reply is validated with.
    """
    from tasks.review.backends.anthropic_backend import _usage_dict, cost_usd, parse_tool_reply

    out: dict[str, ChunkReview] = {}
    for line in client.messages.batches.results(batch_id):
        cid = line.custom_id
        index = (chunk_indexes or {}).get(cid, None)
        if index is None:
            index = int(cid.split("-")[1])
        result = line.result
        if result.type != "succeeded":
            detail = f"batch request {result.type}"
            error = getattr(result, "error", None)
            if error is not None:
                inner = getattr(error, "error", None)
                detail += f": {getattr(inner, 'type', '')} {getattr(inner, 'message', '')}".rstrip()
            out[cid] = ChunkReview(chunk_index=index, outcome=ReviewOutcome.error, detail=detail)
            continue
        message = result.message
        usage = _usage_dict(message.usage)
        cost = BATCH_PRICE_FACTOR * cost_usd(message.model, message.usage, prices, cache_ttl)
        record = LLMCallRecord(
            backend="anthropic",
            model=message.model,
            request_id=message.id,
            stop_reason=message.stop_reason,
            **usage,
            cost_usd=cost,
        )
        out[cid] = parse_tool_reply(
            index,
            message.stop_reason,
            list(message.content),
            record,
            mode,  # type: ignore[arg-type]
            (profiles or {}).get(cid, "contract"),
        )
    return out


def find_batch(database_url: str, key: str) -> BatchRow | None:
    """The stored batch with ``batch_key == key`` whose results were not fetched yet and can still
    be retrieved (:func:`results_may_exist`), else None (an expired one is logged: the caller
    submits the requests again and the new id replaces it)."""
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        row = session.exec(select(BatchRow).where(BatchRow.batch_key == key)).first()
        if row is None or row.status == "fetched":
            return None
        if not results_may_exist(row.created_at):
            logger.warning(
                "stored message batch %s was created %s, over %d days ago: its results are gone, "
                "submitting the requests again",
                row.batch_id,
                row.created_at,
                RESULTS_KEPT_DAYS,
            )
            return None
        return row


def save_batch(database_url: str, key: str, batch_id: str, model: str, custom_ids: list[str], status: str) -> None:
    """Upsert the batch row for ``key`` (a new submission of the same key replaces the old id)."""
    from tasks.store.persist import get_engine, upsert

    with Session(get_engine(database_url)) as session:
        upsert(
            session,
            BatchRow,
            [
                {
                    "batch_key": key,
                    "batch_id": batch_id,
                    "model": model,
                    "prompt_version": PROMPT_VERSION,
                    "custom_ids": custom_ids,
                    "status": status,
                    "created_at": utcnow(),
                }
            ],
            keys=["batch_key"],
            update=["batch_id", "model", "prompt_version", "custom_ids", "status", "created_at"],
        )
        session.commit()


def set_batch_status(database_url: str, key: str, status: str) -> None:
    """Set the stored batch's ``status`` (``in_progress``, ``ended``, ``fetched``)."""
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        row = session.exec(select(BatchRow).where(BatchRow.batch_key == key)).first()
        if row is not None:
            row.status = status
            session.add(row)
            session.commit()


def batch_client(settings: Any) -> Any:
    """An ``anthropic.Anthropic`` client from ``settings`` with ``max_retries=0`` and the run's
    timeout (seconds). Raises ``ValueError`` without an API key."""
    import anthropic

    if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
        raise ValueError("batch mode needs ANTHROPIC_API_KEY")
    return anthropic.Anthropic(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
        max_retries=0,
        timeout=settings.llm_timeout_s,
    )


@task(name="review-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=30, retry_condition_fn=retry_condition)
def review_batch(
    backend: Any,
    chunks: list[tuple[Chunk, str]],
    database_url: str,
    poll_interval_s: float = 60.0,
    timeout_s: float = 86_400.0,
) -> list[tuple[str, int, ChunkReview]]:
    """Prefect task: review ``chunks`` (``(chunk, document name)`` pairs) in Message Batches.

    Splits the requests under the API limits (:func:`split_requests`); for each batch submits it,
    or resumes the stored one for the same pending requests while its results can exist (see module
    docstring), polls it every ``poll_interval_s`` seconds for at most ``timeout_s`` seconds; and
    returns ``[(document sha256, chunk index, ChunkReview)]`` in input order. ``backend`` must be
    an :class:`AnthropicBackend` (its ``request`` builds each ``params``). Raises
    :class:`BatchTimeoutError` when the batch does not end in time and the SDK's errors otherwise.
    """
    from schemas.settings import Settings

    if not chunks:
        return []
    requests, indexes, order, profiles = [], {}, [], {}
    for chunk, name in chunks:
        cid = custom_id(chunk, getattr(backend, "prompt_version", PROMPT_VERSION), backend.model)
        requests.append({"custom_id": cid, "params": with_cache_ttl(backend.request(chunk, name))})
        indexes[cid] = chunk.index
        profiles[cid] = chunk.profile
        order.append((chunk.document_sha256, chunk.index, cid))
    client = batch_client(Settings())
    results: dict[str, ChunkReview] = {}
    try:
        submitted: list[tuple[str, str]] = []  # (batch key, batch id): all submitted before any is polled
        for group in split_requests(requests):
            ids = [r["custom_id"] for r in group]
            key = batch_key(group)
            stored = find_batch(database_url, key)
            if stored is not None and not batch_exists(client, stored.batch_id):
                stored = None  # the API no longer knows it (404): its results cannot come; submit again
            if stored is not None:
                batch_id = stored.batch_id
                logger.info("resuming message batch %s (%d request(s)) instead of submitting again", batch_id, len(ids))
            else:
                batch_id = submit_batch(client, group)
                save_batch(database_url, key, batch_id, backend.model, ids, "in_progress")
            submitted.append((key, batch_id))
        for key, batch_id in submitted:
            poll_batch(client, batch_id, poll_interval_s, timeout_s)
            set_batch_status(database_url, key, "ended")
            results.update(
                fetch_results(
                    client,
                    batch_id,
                    indexes,
                    getattr(backend, "prices", None),
                    getattr(backend, "mode", "tool"),
                    BATCH_CACHE_TTL,
                    profiles,
                )
            )
            set_batch_status(database_url, key, "fetched")
    finally:
        client.close()
    missing = ChunkReview(chunk_index=0, outcome=ReviewOutcome.error, detail="no result for this request in the batch")
    return [(sha, idx, results.get(cid) or missing.model_copy(update={"chunk_index": idx})) for sha, idx, cid in order]
