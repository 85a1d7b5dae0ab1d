"""Retries, circuit breaking and concurrency for LLM calls, driven by a ResiliencePolicy.

- **Retries** are Prefect task retries (the one retry layer): :func:`retry_options` gives the
  ``with_options`` arguments; :func:`make_retry_condition` retries only what can succeed
  (:func:`tasks.review.retry.is_retryable`) and honours ``retry-after`` (values above 60 s too, capped),
  logging the wait.
- **Circuit breaker**: pybreaker (maintained; sync, which fits threaded Prefect tasks; ships a
  Redis state storage so workers share one breaker; purgatory is asyncio-first and aiobreaker
  has had no release since 2021). Only retryable failures count; opening and closing are logged
  and emitted as Prefect events ``docreview.breaker.opened`` / ``.half-open`` / ``.closed``.
- **Concurrency**: a Prefect global concurrency limit with slot leases
  (:func:`llm_slot`), so a killed worker cannot hold a slot for ever. Once
  :func:`ensure_concurrency_limit` has created or found the limit (at flow start, or at a worker
  process's first slot), slots are taken with ``strict=True``:
  a limit that has gone missing is an error, never a silent "no limit" (Prefect's
  ``concurrency(..., strict=False)`` proceeds without limiting when the limit does not exist).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pybreaker

from schemas.policy import ResiliencePolicy
from tasks.review.retry import is_permanent, is_retryable, refusal_cause, retry_after_s

logger = logging.getLogger("docreview.resilience")

_breakers: dict[tuple[str, str], pybreaker.CircuitBreaker] = {}
_lock = threading.Lock()


class RunCounters:
    """Process-wide counters for the current run: ``retries``, ``breaker_openings``,
    ``breaker_closings``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.retries = 0
        self.breaker_openings = 0
        self.breaker_closings = 0

    def add(self, name: str, n: int = 1) -> None:
        """Increment counter ``name`` by ``n``."""
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def reset(self) -> dict[str, int]:
        """Return the counts and set them to zero (called at the start and end of a run)."""
        with self._lock:
            out = {
                "retries": self.retries,
                "breaker_openings": self.breaker_openings,
                "breaker_closings": self.breaker_closings,
            }
            self.retries = self.breaker_openings = self.breaker_closings = 0
            return out


counters = RunCounters()


class RunMisconfigured(RuntimeError):
    """The API refused the run's requests for what they are (see
    :func:`tasks.review.retry.is_permanent`); ``cause`` is ``"<status> <type>: <message>"``."""

    def __init__(self, cause: str) -> None:
        super().__init__(f"the API refused the requests: {cause}")
        self.cause = cause


class Misconfiguration:
    """Stops a run's LLM calls once the API has refused :attr:`limit` of them the same way.

    Until one call of the run has succeeded, and again after any permanent refusal, calls go one
    at a time (:meth:`admit`), so a run whose key, model id or request the API refuses makes at
    most :attr:`limit` calls, not one per LLM slot (plus, when the refusals start mid-run, the
    calls already in flight); after a success they run at full concurrency. Different refusals (one odd
    document) are counted apart and do not stop the run. One per process, reset by each run.
    """

    #: Identical permanent refusals that stop the run (one odd response is not fatal).
    limit = 3

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probe = threading.Lock()
        self._confirmed = threading.Event()
        self._counts: dict[str, int] = {}
        self.cause: str | None = None

    def reset(self) -> None:
        """Forget the previous run's refusals and successes."""
        with self._lock:
            self._counts.clear()
            self.cause = None
            self._confirmed.clear()

    @property
    def tripped(self) -> bool:
        """True once the run is known to be misconfigured."""
        return self.cause is not None

    def check(self) -> None:
        """Raise :class:`RunMisconfigured` once tripped."""
        if self.cause is not None:
            raise RunMisconfigured(self.cause)

    def record(self, exc: BaseException) -> None:
        """Count ``exc`` when it is a permanent refusal; trips at :attr:`limit` identical ones."""
        if not is_permanent(exc):
            return
        cause = refusal_cause(exc)
        self._confirmed.clear()  # back to one call at a time until a call succeeds again
        with self._lock:
            self._counts[cause] = self._counts.get(cause, 0) + 1
            if self.cause is None and self._counts[cause] >= self.limit:
                self.cause = cause
                logger.error("stopping the run's model calls: %s", cause)

    def trip(self, exc: BaseException) -> None:
        """Trip at once (a refused start-up check: nothing was reviewed yet)."""
        with self._lock:
            self.cause = self.cause or refusal_cause(exc)

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Around one LLM call: raises :class:`RunMisconfigured` once tripped; one call at a time
        until a call has succeeded; records the call's refusal, if any."""
        self.check()
        probing = not self._confirmed.is_set()
        if probing:
            self._probe.acquire()
        try:
            self.check()
            yield
            self._confirmed.set()
        except Exception as exc:
            self.record(exc)
            raise
        finally:
            if probing:
                self._probe.release()


misconfiguration = Misconfiguration()


def _emit(event: str, breaker: pybreaker.CircuitBreaker, payload: dict[str, Any]) -> None:
    try:
        from prefect.events import emit_event

        emit_event(event=event, resource={"prefect.resource.id": f"docreview.breaker.{breaker.name}"}, payload=payload)
    except Exception:
        logger.debug("could not emit %s", event, exc_info=True)


def _run_log(message: str, *args: Any) -> None:
    """A WARNING in the flow run's log (shown in the Prefect UI) when a run is active, else in
    this module's log."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        get_run_logger().warning(message, *args)
    except MissingContextError:
        logger.warning(message, *args)


def _publish_state(name: str, state: str) -> None:
    """Keep the breaker's current state in the Prefect variable ``docreview_breaker_<name>``
    (closed | open | half-open), for operators and automations; skipped without a Prefect API."""
    import re

    from prefect.variables import Variable

    try:
        Variable.set(f"docreview_breaker_{re.sub(r'[^a-z0-9_]+', '_', name.lower())}"[:255], state, overwrite=True)
    except Exception:
        logger.debug("breaker state variable not set", exc_info=True)


class _BreakerEvents(pybreaker.CircuitBreakerListener):
    """Logs state changes and emits them as Prefect events; counts openings."""

    def state_change(self, cb: pybreaker.CircuitBreaker, old_state: Any, new_state: Any) -> None:
        old = getattr(old_state, "name", str(old_state))
        new = getattr(new_state, "name", str(new_state))
        if new == pybreaker.STATE_OPEN:
            counters.add("breaker_openings")
            _run_log(
                "circuit breaker %s opened after %d failures; LLM calls fail fast for %.0f s",
                cb.name,
                cb.fail_counter,
                cb.reset_timeout,
            )
        else:
            if new == pybreaker.STATE_CLOSED:
                counters.add("breaker_closings")
            _run_log("circuit breaker %s: %s -> %s", cb.name, old, new)
        if cb.name is not None:  # docreview names every breaker (policy.breaker_name)
            _publish_state(cb.name, new)
        event = {"open": "opened", "half-open": "half-open", "closed": "closed"}.get(new, new)
        _emit(f"docreview.breaker.{event}", cb, {"from": old, "to": new})


class ConcurrentCircuitBreaker(pybreaker.CircuitBreaker):
    """A pybreaker breaker whose :meth:`call` does not hold the breaker's lock during the call.

    ``pybreaker.CircuitBreaker.call`` keeps its re-entrant lock for the whole guarded call, so
    every thread sharing one breaker runs its calls one at a time (pybreaker issue #55, open
    since 2021): 16 LLM slots would give one call in flight. Here the lock guards only the
    state check before the call and the success/failure bookkeeping after it. The states,
    counters, storages (memory or Redis), listeners and ``CircuitBreakerError`` are pybreaker's.
    One difference: while half-open, calls that start before the trial call's result is known
    also go through (at most ``llm_concurrency`` of them); the first failure re-opens.
    """

    def call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``func(*args, **kwargs)`` unless the circuit is open.

        Raises ``pybreaker.CircuitBreakerError`` while open (before ``reset_timeout`` has
        elapsed) and when this failure trips the breaker; otherwise re-raises ``func``'s error.
        The error that trips the breaker keeps the failed call's records: ``llm_calls`` of
        ``func``'s error is copied onto the ``CircuitBreakerError`` (chained ``from`` it), so the
        task stores that call like any other failed attempt.
        """
        with self._lock:
            if self.current_state == pybreaker.STATE_OPEN:
                opened_at = self._state_storage.opened_at
                if opened_at and datetime.now(UTC) < opened_at + timedelta(seconds=self.reset_timeout):
                    raise pybreaker.CircuitBreakerError("Timeout not elapsed yet, circuit breaker still open")
                self.half_open()
            for listener in self.listeners:
                listener.before_call(self, func, *args, **kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            with self._lock:
                try:
                    self.state._handle_error(exc)  # re-raises exc, or CircuitBreakerError when it trips
                except pybreaker.CircuitBreakerError as tripped:
                    if tripped is not exc and getattr(exc, "llm_calls", None) is not None:
                        tripped.llm_calls = exc.llm_calls  # type: ignore[attr-defined]
                    raise tripped from exc
            raise
        with self._lock:
            self.state._handle_success()
        return result


def get_breaker(policy: ResiliencePolicy) -> pybreaker.CircuitBreaker:
    """The breaker shared by every LLM task of this process for ``policy``'s name and storage.

    With ``breaker_storage="redis://..."`` its state lives in Redis, shared by all workers.
    """
    key = (policy.breaker_name, policy.breaker_storage)
    with _lock:
        breaker = _breakers.get(key)
        if breaker is None:
            storage = None
            if policy.breaker_storage != "memory":
                import redis

                client = redis.Redis.from_url(policy.breaker_storage)
                storage = pybreaker.CircuitRedisStorage(pybreaker.STATE_CLOSED, client, namespace=policy.breaker_name)
            breaker = ConcurrentCircuitBreaker(
                fail_max=policy.breaker_failure_threshold,
                reset_timeout=policy.breaker_reset_timeout_s,
                success_threshold=policy.breaker_half_open_successes,
                exclude=[lambda exc: not is_retryable(exc)],
                listeners=[_BreakerEvents()],
                state_storage=storage,
                name=policy.breaker_name,
            )
            _breakers[key] = breaker
        return breaker


def reset_breakers() -> None:
    """Forget every in-process breaker (tests, or a new policy)."""
    with _lock:
        _breakers.clear()


def make_retry_condition(policy: ResiliencePolicy) -> Callable[[Any, Any, Any], bool]:
    """A Prefect ``retry_condition_fn`` for ``policy``.

    Retries only retryable errors. When the error carries ``retry-after`` longer than the
    backoff Prefect is about to wait, it sleeps the difference first (capped at
    ``retry_after_cap_s``) and logs it, so the total wait honours the server's hint.
    """
    delays = policy.retry_delays()

    def condition(task: Any, task_run: Any, state: Any) -> bool:
        try:
            state.result()
        except Exception as exc:
            if not is_retryable(exc):
                return False
            attempt = max(1, getattr(task_run, "run_count", 1))
            counters.add("retries")
            hint = retry_after_s(exc) if policy.honour_retry_after else None
            if hint is not None:
                planned = delays[min(attempt, len(delays)) - 1] if delays else 0.0
                extra = min(hint, policy.retry_after_cap_s) - planned
                if extra > 0:
                    logger.warning(
                        "retry-after %.1f s from the API: waiting %.1f s before attempt %d",
                        hint,
                        extra + planned,
                        attempt + 1,
                    )
                    time.sleep(extra)
            return True
        return False

    return condition


def retry_options(policy: ResiliencePolicy) -> dict[str, Any]:
    """Prefect task options implementing ``policy``'s retries."""
    return {
        "retries": policy.attempts - 1,
        "retry_delay_seconds": policy.retry_delays() or 0,
        "retry_jitter_factor": policy.jitter_factor,
        "retry_condition_fn": make_retry_condition(policy),
    }


def model_caller(send: Callable[..., Any], policy: ResiliencePolicy | None = None) -> Callable[..., Any]:
    """``send`` (an SDK client's ``messages.create``, boto3's ``converse``) with ``policy``'s retries, for the
    calls made outside the chunk review: the verifier's and the page reads'. ``caller(**request)`` returns
    what ``send(**request)`` returns, or raises the last attempt's error.

    The same rules as the review task's Prefect retries (:func:`retry_options`): at most
    ``policy.attempts`` attempts, only for what can succeed (:func:`tasks.review.retry.is_retryable`: 429,
    529, 5xx, timeouts; never a 400/401/403/404), waiting ``policy.retry_delays()`` with up to
    ``jitter_factor`` added at random, or the ``retry-after`` the API sent when longer (capped at
    ``retry_after_cap_s``); each retry is counted in the run's ``retries``. It is these calls' one retry
    layer: the SDK clients have their own off, and the task they run in does not retry them. (A Prefect task
    per call was measured first: with a Prefect server each nested task run serialised on the API and a
    six-document run took 122 s instead of 37 s.)"""
    import random

    chosen = policy or ResiliencePolicy()
    delays = chosen.retry_delays()

    def caller(**request: Any) -> Any:
        attempt = 0
        while True:
            try:
                return send(**request)
            except Exception as exc:
                if attempt >= len(delays) or not is_retryable(exc):
                    raise
                wait = delays[attempt] * (1 + random.uniform(0, chosen.jitter_factor))
                hint = retry_after_s(exc) if chosen.honour_retry_after else None
                if hint is not None:
                    wait = max(wait, min(hint, chosen.retry_after_cap_s))
                counters.add("retries")
                logger.warning(
                    "%s from the API: retrying in %.1f s (attempt %d of %d)",
                    type(exc).__name__,
                    wait,
                    attempt + 2,
                    len(delays) + 1,
                )
                time.sleep(wait)
                attempt += 1

    return caller


def uses_prefect_limit(policy: ResiliencePolicy) -> bool:
    """Whether LLM calls take slots of the Prefect global concurrency limit.

    ``concurrency_scope="auto"`` uses it only when a Prefect server is configured
    (``PREFECT_API_URL``): a temporary local server keeps slot leases in its own memory, so slots
    of a killed run would stay taken in the persistent database after that server stops. Without
    a server, a process-wide semaphore bounds the calls instead.
    """
    if policy.concurrency_scope == "auto":
        from prefect.settings import PREFECT_API_URL

        return bool(PREFECT_API_URL.value())
    return policy.concurrency_scope == "prefect"


#: Names of the global concurrency limits this process created or found (see :func:`llm_slot`).
_limits_ready: set[str] = set()


def ensure_concurrency_limit(policy: ResiliencePolicy) -> bool:
    """Create or update the Prefect global concurrency limit for LLM calls (when used).

    Returns False (and logs) when the Prefect API cannot be reached or the limit is not used;
    calls are then bounded by a process-wide semaphore.
    """
    if not uses_prefect_limit(policy):
        return False
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
        from prefect.exceptions import ObjectAlreadyExists

        with get_client(sync_client=True) as client:
            try:
                current = client.read_global_concurrency_limit_by_name(policy.concurrency_limit_name)
            except Exception:
                current = None
            if current is None:
                try:
                    client.create_global_concurrency_limit(
                        GlobalConcurrencyLimitCreate(
                            name=policy.concurrency_limit_name, limit=policy.llm_concurrency, active=True
                        )
                    )
                except ObjectAlreadyExists:  # another run (worker) created it meanwhile
                    pass
            elif current.limit != policy.llm_concurrency or not current.active:
                client.update_global_concurrency_limit(
                    policy.concurrency_limit_name,
                    GlobalConcurrencyLimitUpdate(limit=policy.llm_concurrency, active=True),
                )
        with _lock:
            _limits_ready.add(policy.concurrency_limit_name)
        return True
    except Exception as exc:
        logger.warning("could not set the LLM concurrency limit: %s", exc or type(exc).__name__)
        return False


class SlotWaitTimeout(TimeoutError):
    """No LLM slot became free within ``slot_wait_s``; retryable (the call never started)."""


_semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def _local_semaphore(policy: ResiliencePolicy) -> threading.BoundedSemaphore:
    key = (policy.concurrency_limit_name, policy.llm_concurrency)
    with _lock:
        return _semaphores.setdefault(key, threading.BoundedSemaphore(policy.llm_concurrency))


@contextmanager
def llm_slot(policy: ResiliencePolicy) -> Iterator[None]:
    """Hold one LLM slot around a call: a leased slot of the Prefect global concurrency limit
    (see :func:`uses_prefect_limit`) or of a process-wide semaphore.

    The wait is bounded by ``slot_wait_s`` (then :class:`SlotWaitTimeout`, which the task
    retries) and logged once when it lasts over 5 s.
    """
    waiting = threading.Timer(
        5.0,
        logger.info,
        args=("waiting for an LLM slot (limit %s = %d calls)", policy.concurrency_limit_name, policy.llm_concurrency),
    )
    waiting.daemon = True
    waiting.start()
    try:
        if uses_prefect_limit(policy):
            from prefect.concurrency.sync import concurrency

            with ExitStack() as stack:
                try:
                    # strict once the limit is known to exist: a deleted limit then fails the call
                    # (retried by the task) instead of letting every call through unlimited.
                    with _lock:
                        strict = policy.concurrency_limit_name in _limits_ready
                    if not strict:  # first slot in this process (a worker): make sure the limit exists
                        strict = ensure_concurrency_limit(policy)
                    stack.enter_context(
                        concurrency(
                            policy.concurrency_limit_name,
                            occupy=1,
                            timeout_seconds=policy.slot_wait_s,
                            lease_duration=policy.slot_lease_s,
                            strict=strict,
                        )
                    )
                except TimeoutError as exc:
                    raise SlotWaitTimeout(f"no LLM slot free within {policy.slot_wait_s:g} s") from exc
                finally:
                    waiting.cancel()
                yield
            return
        semaphore = _local_semaphore(policy)
        acquired = semaphore.acquire(timeout=policy.slot_wait_s)
        waiting.cancel()
        if not acquired:
            raise SlotWaitTimeout(f"no LLM slot free within {policy.slot_wait_s:g} s")
        try:
            yield
        finally:
            semaphore.release()
    finally:
        waiting.cancel()
