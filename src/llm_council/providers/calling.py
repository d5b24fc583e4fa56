"""Retries and timeouts for provider calls, written once for every provider.

Policy: retry only errors the provider classified as retryable (rate limits, 5xx,
timeouts, dropped connections), wait the server's ``retry-after`` when given and
otherwise exponential backoff plus up to 1 s of random jitter (tenacity's
``wait_exponential_jitter``), cap each attempt with a timeout, and
report how many attempts a call took so a retried call is never counted twice.
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

from llm_council.errors import ProviderError
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


async def call_with_retries(
    provider: Provider, request: CompletionRequest, policy: RetryPolicy | None = None
) -> CallOutcome:
    """Call ``provider`` under ``policy``; never raises for provider failures."""
    policy = policy or RetryPolicy()
    started = time.perf_counter()
    attempts = 0
    try:
        await provider.prepare()  # building an SDK client is not part of any attempt's timeout
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
    except ProviderError as error:
        return CallOutcome(None, error, attempts, time.perf_counter() - started)
    except Exception as error:  # an unclassified bug in a provider module: do not crash the session
        wrapped = ProviderError(
            f"{provider.spec}: unexpected {type(error).__name__}: {error}",
            provider=provider.provider_name,
        )
        return CallOutcome(None, wrapped, attempts, time.perf_counter() - started)
