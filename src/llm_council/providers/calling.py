"""Retries and timeouts for provider calls, written once for every provider.

Policy: retry only errors the provider classified as retryable (rate limits, 5xx,
timeouts, dropped connections), wait the server's ``retry-after`` when given and
otherwise exponential backoff plus up to 1 s of random jitter (tenacity's
``wait_exponential_jitter``), cap each attempt with a timeout, and
report how many attempts a call took so a retried call is never counted twice.

Every call of a session passes one :class:`CallGate`: the session's concurrency limit and
its deadline. A call still waiting or running at the deadline is given up with a
non-retryable ``ProviderError`` ("session deadline ... reached"): per-attempt timeouts
cannot catch a server that trickles one byte a second, a wall-clock deadline can.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from llm_council.errors import ProviderError, SessionDeadlineError
from llm_council.providers.base import Completion, CompletionRequest, Provider


@dataclass(frozen=True)
class RetryPolicy:
    """How hard the core tries one call."""

    max_attempts: int = 4
    timeout_s: float = 120.0
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0


@dataclass(frozen=True)
class CallOutcome:
    """The result of one logical call: a completion or the final error, and the attempts used."""

    completion: Completion | None
    error: ProviderError | None
    attempts: int
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.completion is not None


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, ProviderError) and error.retryable


class _RetryAfterOrBackoff:
    """tenacity wait: the server's retry-after when present, else exponential jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._backoff = wait_exponential_jitter(
            initial=policy.initial_backoff_s, max=policy.max_backoff_s
        )

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after is not None:
            return float(min(max(error.retry_after, 0.0), self._policy.max_retry_after_s))
        return float(self._backoff(retry_state))


async def _attempt(provider: Provider, request: CompletionRequest, timeout_s: float) -> Completion:
    try:
        async with asyncio.timeout(timeout_s):
            return await provider.complete(request)
    except TimeoutError as exc:
        raise ProviderError(
            f"{provider.spec}: no answer within {timeout_s:g} s",
            provider=provider.provider_name,
            retryable=True,
        ) from exc


SESSION_DEADLINE_ERROR = "session deadline"


def deadline_error(provider: Provider, deadline_s: float) -> SessionDeadlineError:
    """The error of a call given up at the session deadline."""
    return SessionDeadlineError(
        f"{provider.spec}: {SESSION_DEADLINE_ERROR} of {deadline_s:g} s reached",
        provider=provider.provider_name,
    )


async def call_with_retries(
    provider: Provider,
    request: CompletionRequest,
    policy: RetryPolicy | None = None,
    *,
    deadline_at: float | None = None,
    deadline_s: float = 0.0,
) -> CallOutcome:
    """Call ``provider`` under ``policy``; never raises for provider failures.

    ``deadline_at`` (event-loop time, see :meth:`asyncio.loop.time`) bounds the whole call,
    retries and backoff included; ``deadline_s`` is only quoted in the error.
    """
    policy = policy or RetryPolicy()
    started = time.perf_counter()
    attempts = 0
    try:
        async with asyncio.timeout_at(deadline_at):
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(policy.max_attempts),
                wait=_RetryAfterOrBackoff(policy),
                retry=retry_if_exception(_is_retryable),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    completion = await _attempt(provider, request, policy.timeout_s)
        return CallOutcome(completion, None, attempts, time.perf_counter() - started)
    except TimeoutError:  # only the deadline's: _attempt turns its own timeout into ProviderError
        error = deadline_error(provider, deadline_s)
        return CallOutcome(None, error, attempts, time.perf_counter() - started)
    except ProviderError as error:
        return CallOutcome(None, error, attempts, time.perf_counter() - started)
    except Exception as error:  # an unclassified bug in a provider module: do not crash the session
        wrapped = ProviderError(
            f"{provider.spec}: unexpected {type(error).__name__}: {error}",
            provider=provider.provider_name,
        )
        return CallOutcome(None, wrapped, attempts, time.perf_counter() - started)


class CallGate:
    """What every provider call of one session passes: its concurrency limit and deadline.

    Counts the calls it gave up at the deadline (``given_up``), so the session can say
    whether the deadline cut anything without reading error messages.
    """

    def __init__(
        self,
        semaphore: asyncio.Semaphore,
        deadline_at: float | None = None,
        deadline_s: float = 0.0,
    ) -> None:
        self.semaphore = semaphore
        self.deadline_at = deadline_at  # event-loop time; None: no deadline
        self.deadline_s = deadline_s  # the configured deadline, for messages
        self.given_up = 0

    @classmethod
    def for_session(cls, max_concurrency: int, deadline_s: float) -> CallGate:
        """A gate whose deadline is ``deadline_s`` from now (call inside the event loop)."""
        deadline_at = asyncio.get_running_loop().time() + deadline_s
        return cls(asyncio.Semaphore(max_concurrency), deadline_at, deadline_s)

    def _past_deadline(self) -> bool:
        now = asyncio.get_running_loop().time()
        return self.deadline_at is not None and now >= self.deadline_at

    def _give_up(self, provider: Provider, attempts: int, started: float) -> CallOutcome:
        self.given_up += 1
        error = deadline_error(provider, self.deadline_s)
        return CallOutcome(None, error, attempts, time.perf_counter() - started)

    async def call(
        self, provider: Provider, request: CompletionRequest, policy: RetryPolicy
    ) -> CallOutcome:
        """Wait for a slot, then :func:`call_with_retries`; both bounded by the deadline."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout_at(self.deadline_at):
                await self.semaphore.acquire()
        except TimeoutError:
            return self._give_up(provider, 0, started)
        try:
            if self._past_deadline():
                # a free slot is taken without suspending, so the timeout above cannot fire
                return self._give_up(provider, 0, started)
            outcome = await call_with_retries(
                provider, request, policy, deadline_at=self.deadline_at, deadline_s=self.deadline_s
            )
        finally:
            self.semaphore.release()
        if isinstance(outcome.error, SessionDeadlineError):
            self.given_up += 1
        return outcome
