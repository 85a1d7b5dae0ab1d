"""Review: pick the backend for a run and review one chunk per task.

The ``review-chunk`` task is where LLM I/O happens, so it is the one retry layer: exponential
backoff with jitter, and a condition (:func:`tasks.retry.retry_condition`) that refuses to retry
what cannot succeed. Backends themselves never retry.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from schemas.documents import Chunk
from schemas.settings import Settings
from tasks.backends.base import ChunkReview, ReviewBackend
from tasks.retry import retry_condition

#: Attempts after the first, and the base of the exponential backoff (seconds).
REVIEW_RETRIES = 3
REVIEW_BACKOFF_BASE_S = 2


class BackendConfigError(ValueError):
    """The selected backend cannot run with the given settings (e.g. no API key)."""


def make_backend(settings: Settings) -> ReviewBackend:
    """Build the backend named by ``settings.resolved_backend()``.

    Raises :class:`BackendConfigError` when ``anthropic`` is chosen without an API key.
    """
    name = settings.resolved_backend()
    if name == "rules":
        from tasks.backends.rules import RulesBackend

        return RulesBackend()
    if name == "anthropic":
        if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
            raise BackendConfigError("the anthropic backend needs ANTHROPIC_API_KEY to be set")
        from tasks.backends.anthropic_backend import AnthropicBackend

        return AnthropicBackend(
            settings.anthropic_api_key.get_secret_value(),
            settings.anthropic_model,
            base_url=settings.anthropic_base_url,
            timeout_s=settings.llm_timeout_s,
            max_tokens=settings.llm_max_tokens,
        )
    if name == "bedrock":
        from tasks.backends.bedrock_backend import BedrockBackend

        return BedrockBackend(
            settings.bedrock_model_id,
            region=settings.bedrock_region,
            endpoint_url=settings.bedrock_endpoint_url,
            timeout_s=settings.llm_timeout_s,
            max_tokens=settings.llm_max_tokens,
        )
    raise BackendConfigError(f"unknown backend {name!r}")


@task(
    name="review-chunk",
    cache_policy=NO_CACHE,
    retries=REVIEW_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=REVIEW_BACKOFF_BASE_S),
    retry_jitter_factor=0.5,
    retry_condition_fn=retry_condition,
)
def review_chunk(backend: ReviewBackend, chunk: Chunk, document_name: str) -> ChunkReview:
    """Prefect task: findings for one chunk from ``backend`` (see :class:`ChunkReview`)."""
    return backend.review_chunk(chunk, document_name)
