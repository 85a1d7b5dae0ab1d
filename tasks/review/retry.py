"""Which errors a retry can fix. Used as the ``retry_condition_fn`` of the LLM task.

Retryable (transient): connection errors, timeouts, HTTP 408/409/429/5xx/529 and an
``overloaded_error`` or ``api_error`` whose message says "Overloaded" (PITFALLS: overload
detection). Never retried: other 4xx (bad request, authentication, permission, not found),
``enforced_spend_limit_reached`` and context-window overflow (which needs re-chunking, not a
retry). Sources: Anthropic API errors reference (error types and status codes) and the AWS
Bedrock Runtime error list (ThrottlingException, ServiceUnavailableException, ModelTimeoutException).
"""

from __future__ import annotations

from typing import Any

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_NEVER_MESSAGES = (
    "enforced_spend_limit_reached",
    "prompt is too long",
    "input is too long",
    "context window",
    "context_length",
)
_RETRYABLE_AWS_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
        "InternalServerException",
        "ModelNotReadyException",
        "TooManyRequestsException",
        "ModelStreamErrorException",
    }
)


def status_of(exc: BaseException) -> int | None:
    """HTTP status carried by an SDK error (anthropic ``status_code`` or botocore metadata)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        meta = response.get("ResponseMetadata") or {}
        code = meta.get("HTTPStatusCode")
        if isinstance(code, int):
            return code
    return None


def is_retryable(exc: BaseException) -> bool:
    """True when another attempt of the same call may succeed."""
    message = str(exc)
    lowered = message.lower()
    if any(m in lowered for m in _NEVER_MESSAGES):
        return False
    name = type(exc).__name__
    if name in {
        "APIConnectionError",
        "APITimeoutError",
        "ConnectTimeout",
        "ReadTimeout",
        "ConnectError",
        "EndpointConnectionError",
        "ConnectionClosedError",
        "ReadTimeoutError",
        "TimeoutError",
        "ConnectionError",
    }:
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str((response.get("Error") or {}).get("Code") or "")
        # ConverseStream reports mid-stream errors in lower camel case ("throttlingException").
        if code[:1].upper() + code[1:] in _RETRYABLE_AWS_CODES:
            return True
    if "overloaded" in lowered:
        return True
    status = status_of(exc)
    return status in RETRYABLE_STATUS


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked to wait before retrying, from ``retry-after-ms`` or
    ``retry-after`` (seconds or an HTTP date, RFC 9110 §10.2.3); None when absent or unparseable.

    Reads anthropic/httpx errors (``exc.response.headers``) and botocore ``ClientError``s
    (``exc.response["ResponseMetadata"]["HTTPHeaders"]``, lower-case names).
    """
    import email.utils
    import time

    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        headers: Any = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    else:
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        raw = headers.get("retry-after")
        if raw is None:
            return None
        try:
            return max(0.0, float(raw))
        except ValueError:
            return max(0.0, email.utils.parsedate_to_datetime(raw).timestamp() - time.time())
    except Exception:
        return None


def retry_condition(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the task's exception is retryable."""
    try:
        state.result()
    except Exception as exc:
        return is_retryable(exc)
    return False


#: Status codes of requests the API refuses for what they are, not for the moment they were sent:
#: 400 invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error
#: (Anthropic API errors reference). The same request fails again, whatever the document.
PERMANENT_STATUS = frozenset({400, 401, 403, 404})
#: Bedrock Runtime errors that no retry fixes (AWS Bedrock Runtime API reference, "Errors").
PERMANENT_AWS_CODES = frozenset(
    {
        "AccessDeniedException",
        "ValidationException",
        "ResourceNotFoundException",
        "UnrecognizedClientException",
        "ExpiredTokenException",
    }
)
#: Refusals that belong to one document (its text is too long), not to the run's configuration.
_DOCUMENT_MESSAGES = (
    "prompt is too long",
    "input is too long",
    "context window",
    "context_length",
    "exceed context limit",
    "too many tokens",
)


def is_permanent(exc: BaseException) -> bool:
    """True when the API refuses the run's requests whatever the document: a bad or revoked key,
    no access to the model, an unknown model id, a request (schema, parameters) it does not
    accept, a spend limit. A context overflow is the document's, not the run's; transient errors
    (see :func:`is_retryable`) are never permanent."""
    if is_retryable(exc):
        return False
    lowered = str(exc).lower()
    if any(m in lowered for m in _DOCUMENT_MESSAGES):
        return False
    if _aws_code(exc) in PERMANENT_AWS_CODES:
        return True
    return status_of(exc) in PERMANENT_STATUS


def refusal_cause(exc: BaseException) -> str:
    """``"<status> <error type>: <message>"`` of a refused request, e.g. ``"404 not_found_error:
    model: claude-x"`` (Anthropic error body) or ``"400 ValidationException: …"`` (botocore)."""
    status = status_of(exc)
    kind, message = _aws_code(exc), ""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        error = inner if isinstance(inner, dict) else body
        kind = str(error.get("type") or kind or "")
        message = str(error.get("message") or "")
    response = getattr(exc, "response", None)
    if not message and isinstance(response, dict):
        message = str((response.get("Error") or {}).get("Message") or "")
    message = " ".join((message or str(exc)).split())[:300]
    return " ".join(p for p in (str(status) if status else "", f"{kind or type(exc).__name__}:") if p) + f" {message}"


def _aws_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str((response.get("Error") or {}).get("Code") or "")
        return code[:1].upper() + code[1:]
    return ""
