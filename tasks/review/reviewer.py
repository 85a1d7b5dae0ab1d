"""Review: pick the backend for a run and review one chunk per task.

The ``review-chunk`` task is where LLM I/O happens, so it is the one retry layer: exponential
backoff with jitter, and a condition (:func:`tasks.review.retry.retry_condition`) that refuses to retry
what cannot succeed. Backends themselves never retry. The offline ``rules`` backend does no I/O:
``review-chunks-offline`` reviews all of one document's chunks in one task run, never retried.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff
from sqlmodel import Session

from schemas.documents import Chunk
from schemas.policy import ResiliencePolicy
from schemas.review import ChunkReview
from schemas.settings import Settings
from tasks.review.backends.base import ReviewBackend
from tasks.review.resilience import get_breaker, llm_slot, misconfiguration
from tasks.review.retry import retry_condition
from tasks.runnames import for_document

#: Attempts after the first, and the base of the exponential backoff (seconds).
REVIEW_RETRIES = 3
REVIEW_BACKOFF_BASE_S = 2


class BackendConfigError(ValueError):
    """The selected backend cannot run with the given settings (e.g. no API key)."""


def make_backend(settings: Settings) -> ReviewBackend:
    """Build the backend named by ``settings.resolved_backend()``; with ``redact_pii`` a model
    backend is wrapped in :class:`tasks.review.pii.RedactingBackend` (with ``redact_pii_names``, names
    too: :class:`tasks.review.pii.NameDetector`, whose ``ValueError`` names the setting when its model is
    not installed).

    Raises :class:`BackendConfigError` when ``anthropic`` is chosen without an API key.
    """
    backend = _make_backend(settings)
    if settings.redact_pii and backend.name != "rules":
        from tasks.review.pii import NameDetector, RedactingBackend

        names = NameDetector(settings.pii_ner_model) if settings.redact_pii_names else None
        return RedactingBackend(backend, names=names)
    return backend


def bedrock_model_for(settings: Settings) -> str:
    """The Bedrock model id of a run: ``DOCREVIEW_BEDROCK_MODEL_ID`` when set; else, for a model served by
    the Messages-API endpoint (Claude in Amazon Bedrock), its ``anthropic.<model>`` id; else the
    inference-profile id of ``DOCREVIEW_ANTHROPIC_MODEL`` in ``DOCREVIEW_BEDROCK_INFERENCE_PROFILE``
    (:func:`tasks.review.backends.models.bedrock_model_id`). Raises ``ValueError`` naming the setting when
    the profile cannot be derived or the model has no such profile."""
    if settings.bedrock_model_id:
        return settings.bedrock_model_id
    from tasks.review.backends.models import bedrock_model_id, bedrock_route

    route = bedrock_route(settings.anthropic_model)
    if route.api == "messages":
        return route.base_id
    return bedrock_model_id(settings.anthropic_model, settings.bedrock_profile())


def _make_backend(settings: Settings) -> ReviewBackend:
    name = settings.resolved_backend()
    if name == "rules":
        from tasks.review.backends.rules import RulesBackend

        return RulesBackend()
    if name == "anthropic":
        if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
            raise BackendConfigError("the anthropic backend needs ANTHROPIC_API_KEY to be set")
        from tasks.review.backends.anthropic_backend import AnthropicBackend

        return AnthropicBackend(
            settings.anthropic_api_key.get_secret_value(),
            settings.anthropic_model,
            base_url=settings.anthropic_base_url,
            timeout_s=settings.llm_timeout_s,
            max_tokens=settings.llm_max_tokens,
            max_tokens_ceiling=settings.llm_max_tokens_ceiling,
            stream=settings.llm_stream,
            prices=settings.llm_prices,
            thinking_budget_tokens=settings.llm_thinking_budget_tokens,
            count_tokens_preflight=settings.llm_count_tokens_preflight,
            output_mode=None if settings.llm_output_mode == "auto" else settings.llm_output_mode,
            cache_ttl=settings.llm_cache_ttl,
            party=settings.review_party,
        )
    if name == "bedrock":
        from tasks.review.backends.bedrock_backend import bedrock_backend_for

        return bedrock_backend_for(
            bedrock_model_for(settings),
            region=settings.bedrock_region,
            endpoint_url=settings.bedrock_endpoint_url,
            timeout_s=settings.llm_timeout_s,
            max_tokens=settings.llm_max_tokens,
            max_tokens_ceiling=settings.llm_max_tokens_ceiling,
            stream=settings.llm_stream,
            prices=settings.llm_prices,
            thinking_budget_tokens=settings.llm_thinking_budget_tokens,
            output_mode=None if settings.llm_output_mode == "auto" else settings.llm_output_mode,
            cache_ttl=settings.llm_cache_ttl,
            party=settings.review_party,
        )
    raise BackendConfigError(f"unknown backend {name!r}")


@task(
    name="review-chunk",
    task_run_name=for_document("review", lambda p: f"chunk {p['chunk'].index + 1}"),
    cache_policy=NO_CACHE,
    retries=REVIEW_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=REVIEW_BACKOFF_BASE_S),
    retry_jitter_factor=0.5,
    retry_condition_fn=retry_condition,
)
def review_chunk(
    backend: ReviewBackend,
    chunk: Chunk,
    document_name: str,
    database_url: str | None = None,
    run_id: str | None = None,
    policy: ResiliencePolicy | None = None,
) -> ChunkReview:
    """Prefect task: findings for one chunk from ``backend`` (see :class:`ChunkReview`).

    With a ``policy`` and a model backend, the call goes through the run's shared circuit
    breaker (failing fast with ``pybreaker.CircuitBreakerError`` while it is open) and holds a
    slot of the global LLM concurrency limit. The flow sets this task's retries from the same
    policy (:func:`tasks.review.resilience.retry_options`).

    A run whose requests the API refuses for what they are stops calling after a few identical
    refusals (:data:`tasks.review.resilience.misconfiguration`): this task then raises
    :class:`tasks.review.resilience.RunMisconfigured` without a call.

    When the backend raises with call records attached (``exc.llm_calls``, the failed call
    included) and ``database_url``/``run_id`` are given, those records are stored in
    ``llm_calls`` before the exception goes on to the retry policy, so every attempt is recorded.
    """
    try:
        if policy is None or backend.name == "rules":
            return backend.review_chunk(chunk, document_name)
        breaker = get_breaker(policy)
        with misconfiguration.admit(), llm_slot(policy):
            return breaker.call(backend.review_chunk, chunk, document_name)
    except Exception as exc:
        calls = getattr(exc, "llm_calls", None)
        if calls and database_url and run_id:
            from tasks.store.persist import save_llm_calls, unit_of_work

            with unit_of_work(database_url) as session:
                save_llm_calls.fn(session, run_id, chunk.document_sha256, chunk.index, calls)
        raise


@task(
    name="store-review",
    task_run_name=for_document("store-review", lambda p: f"chunk {p['chunk'].index + 1}"),
    cache_policy=NO_CACHE,
)
def store_review(session: Session, chunk: Chunk, prompt_version: str, model: str, review: ChunkReview) -> None:
    """Prefect task: keep a successful model review of ``chunk`` for reuse (see :func:`cached_review`),
    written into ``session`` (the caller commits)."""
    from tasks.store.persist import chunk_cache_key, save_chunk_result

    save_chunk_result(
        session,
        chunk_cache_key(chunk.text, profile_version(prompt_version, chunk), model),
        prompt_version,
        model,
        [f.model_dump(mode="json") for f in review.findings],
    )


def profile_version(prompt_version: str, chunk: Chunk) -> str:
    """The prompt version a chunk's stored review is keyed on: ``prompt_version`` for a contract,
    ``prompt_version + "+filing"`` for a filing (another prompt and schema for the same text)."""
    return prompt_version if chunk.profile == "contract" else f"{prompt_version}+filing"


@task(
    name="cached-review",
    task_run_name=for_document("cached-review", lambda p: f"chunk {p['chunk'].index + 1}"),
    cache_policy=NO_CACHE,
)
def cached_review(session: Session, chunk: Chunk, prompt_version: str, model: str) -> ChunkReview | None:
    """Prefect task: the stored review of the same chunk content, prompt version and model, if any.

    Used when a chunk's review fails (breaker open or retries exhausted). Returns None when this
    content was never reviewed, and the chunk's document is then deferred.
    """
    from schemas.filings import FilingFinding
    from schemas.findings import Finding
    from tasks.store.persist import chunk_cache_key, load_chunk_result

    stored = load_chunk_result(session, chunk_cache_key(chunk.text, profile_version(prompt_version, chunk), model))
    if stored is None:
        return None
    kind = FilingFinding if chunk.profile == "filing" else Finding
    return ChunkReview(
        chunk_index=chunk.index,
        findings=[kind.model_validate(f) for f in stored],
        cached=True,
        detail="reused a stored review: the model call failed",
    )


@task(
    name="review-chunks-offline",
    cache_policy=NO_CACHE,
    task_run_name=for_document("review", lambda p: f"{len(p['chunks'])} chunks, offline"),
)
def review_chunks_offline(
    backend: ReviewBackend, chunks: list[Chunk], document_name: str
) -> list[tuple[ChunkReview | None, str | None]]:
    """Prefect task: the offline backend's review of every chunk of one document, in order.

    Returns one ``(review, None)`` or ``(None, "ErrorType: message")`` per chunk of ``chunks``: a
    chunk whose review raised is that chunk's problem, as a failed ``review-chunk`` run is for a
    model backend, and the other chunks are still reviewed. One task run per document, not per
    chunk: the offline review is local CPU work of about 1 ms per chunk, so a task run per chunk
    (several ms of orchestration each, and an event stream to the Prefect server) cost more than
    the review itself. Never retried: the same input gives the same result.
    """
    out: list[tuple[ChunkReview | None, str | None]] = []
    for chunk in chunks:
        try:
            out.append((backend.review_chunk(chunk, document_name), None))
        except Exception as exc:
            out.append((None, error_text(exc)))
    return out


def error_text(exc: BaseException) -> str:
    """How a failed review is recorded as a document's problem: ``"ErrorType: message"``, the
    message cut to 300 characters."""
    return f"{type(exc).__name__}: {str(exc)[:300]}"
