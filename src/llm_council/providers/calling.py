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
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from llm_council.errors import ProviderError, SessionDeadlineError
from llm_council.infra import tracing
from llm_council.providers.base import Completion, CompletionRequest, Provider

if TYPE_CHECKING:
    from llm_council.call_pricing import SessionCosts


@dataclass(frozen=True)
class RetryPolicy:
    """How hard the core tries one call."""

    max_attempts: int = 4
    timeout_s: float = 120.0
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        """Refuse values that make every call fail or never wait (issue 26 item 4).

        A ``ValueError`` names the field and quotes the value; the config loader prefixes
        the file and ``[retry]``. Booleans are refused although ``bool`` is an ``int``.
        """
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"max_attempts: must be an integer >= 1 (got {attempts!r})")
        _check_seconds("timeout_s", self.timeout_s, allow_zero=False)
        for name in ("initial_backoff_s", "max_backoff_s", "max_retry_after_s"):
            _check_seconds(name, getattr(self, name), allow_zero=True)


def _check_seconds(name: str, value: object, *, allow_zero: bool) -> None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= 0 if allow_zero else value > 0)
    )
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: must be a finite number {bound} (got {value!r})")


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
# How far into the session deadline each stage may run (fractions of it, from the start):
# a member hanging in stage 1 leaves the reviews and the chairman time of their own.
STAGE_DEADLINE_SHARES = {"answer": 0.5, "review": 0.8, "synthesize": 1.0, "bias_check": 1.0}


def deadline_error(
    provider: Provider, deadline_s: float | None, stage: str = ""
) -> SessionDeadlineError:
    """The error of a call given up at the session deadline (``stage``: whose share ran out)."""
    share = STAGE_DEADLINE_SHARES.get(stage)
    where = f" (the {stage} stage may use {share:.0%} of it)" if share and share < 1 else ""
    return SessionDeadlineError(
        f"{provider.spec}: {SESSION_DEADLINE_ERROR} of {deadline_s or 0:g} s reached{where}",
        provider=provider.provider_name,
    )


async def call_with_retries(
    provider: Provider,
    request: CompletionRequest,
    policy: RetryPolicy | None = None,
    *,
    deadline_at: float | None = None,
    deadline_s: float | None = None,
    stage: str = "",
    trace_attributes: Mapping[str, Any] | None = None,
) -> CallOutcome:
    """Call ``provider`` under ``policy``; never raises for provider failures.

    ``deadline_at`` (event-loop time, see :meth:`asyncio.loop.time`) bounds the whole call,
    retries and backoff included; ``deadline_s`` and ``stage`` are only quoted in the error.
    The call is one ``chat`` span when tracing is on (:mod:`llm_council.infra.tracing`), each
    retried attempt an event on it; ``trace_attributes`` are added to the span.
    """
    policy = policy or RetryPolicy()
    with tracing.chat_span(
        provider.provider_name, provider.model_name, request, trace_attributes or {}
    ) as span:
        outcome = await _call_with_retries(
            provider, request, policy, deadline_at, deadline_s, stage, span
        )
        if outcome.completion is not None:
            tracing.record_completion(span, outcome.completion, outcome.attempts)
        elif outcome.error is not None:
            tracing.record_failure(span, outcome.error, outcome.attempts)
    return outcome


async def _call_with_retries(
    provider: Provider,
    request: CompletionRequest,
    policy: RetryPolicy,
    deadline_at: float | None,
    deadline_s: float | None,
    stage: str,
    span: tracing.SpanRecorder,
) -> CallOutcome:
    started = time.perf_counter()
    attempts = 0

    def before_retry(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait_s = state.next_action.sleep if state.next_action is not None else 0.0
        if error is not None:
            tracing.record_retry(span, state.attempt_number, error, wait_s)

    try:
        async with asyncio.timeout_at(deadline_at):
            # building an SDK client is not part of any attempt's timeout (but is of the deadline)
            await provider.prepare()
            # The first attempt runs before any retry machinery is built: most calls succeed
            # at once, and tenacity's set-up costs CPU on the event loop before the request
            # leaves (ADR 0035). A retryable failure hands over to tenacity, whose first
            # attempt replays that failure, so waits, attempt numbers and retry events are
            # exactly those of a loop that made the first call itself.
            attempts = 1
            try:
                completion = await _attempt(provider, request, policy.timeout_s)
            except ProviderError as failure:
                if not failure.retryable or policy.max_attempts <= 1:
                    raise
                first_failure: ProviderError | None = failure
            else:
                return CallOutcome(completion, None, attempts, time.perf_counter() - started)
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(policy.max_attempts),
                wait=_RetryAfterOrBackoff(policy),
                retry=retry_if_exception(_is_retryable),
                before_sleep=before_retry,
                reraise=True,
            ):
                with attempt:
                    if first_failure is not None:
                        replayed, first_failure = first_failure, None
                        raise replayed
                    attempts += 1
                    completion = await _attempt(provider, request, policy.timeout_s)
        return CallOutcome(completion, None, attempts, time.perf_counter() - started)
    except TimeoutError:  # only the deadline's: _attempt turns its own timeout into ProviderError
        error = deadline_error(provider, deadline_s, stage)
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

    The deadline is per stage (:data:`STAGE_DEADLINE_SHARES` of ``deadline_s`` after the
    session began). The gate counts the calls it gave up at the deadline (``given_up``),
    so the session can say whether the deadline cut anything, and adds up the token usage
    the providers reported (:meth:`token_usage`).

    A gate made with ``stage`` files every call under that stage whatever the caller says:
    the live bias checks get their own gate (ADR 0031), ``stage="bias_check"``, with its own
    slots and the whole session deadline from ``started_at`` (the counted calls' gate's
    start), so they never wait for, or make wait, a counted call.
    """

    def __init__(
        self,
        max_concurrency: int,
        deadline_s: float | None = None,
        *,
        started_at: float | None = None,
        stage: str | None = None,
        costs: SessionCosts | None = None,
    ) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency)
        # what each finished call cost; its budget stops reviews not yet sent (ADR 0058)
        self.costs = costs
        self.deadline_s = deadline_s  # None: no deadline
        self.started_at = asyncio.get_running_loop().time() if started_at is None else started_at
        self.stage = stage
        self.given_up = 0
        self._input_tokens = 0
        self._output_tokens = 0
        self._calls_without_usage = 0

    def token_usage(self) -> dict[str, int]:
        """Tokens over the session's successful calls; calls whose provider reported no
        counts are counted in ``calls_without_usage`` (so a total is never silently low)."""
        return {
            "input_tokens": self._input_tokens,
            "output_tokens": self._output_tokens,
            "calls_without_usage": self._calls_without_usage,
        }

    def _add_usage(self, outcome: CallOutcome) -> None:
        if outcome.completion is None:
            return
        usage = outcome.completion.usage
        if usage.input_tokens is None or usage.output_tokens is None:
            self._calls_without_usage += 1
        self._input_tokens += usage.input_tokens or 0
        self._output_tokens += usage.output_tokens or 0

    def stage_deadline_at(self, stage: str) -> float | None:
        """The event-loop time at which ``stage``'s calls are given up."""
        if self.deadline_s is None:
            return None
        return self.started_at + STAGE_DEADLINE_SHARES.get(stage, 1.0) * self.deadline_s

    def expired(self, stage: str) -> bool:
        """Whether ``stage``'s share of the deadline is over (this gate's own stage wins).

        Callers check it before CPU work of their own (building a review prompt over every
        answer costs more than the call it leads to with a CPU-bound simulated member), so
        the deadline bounds that work too, not only the provider calls (issue 26 item 5).
        """
        deadline_at = self.stage_deadline_at(self.stage or stage)
        return deadline_at is not None and asyncio.get_running_loop().time() >= deadline_at

    def give_up_unsent(self, provider: Provider, stage: str) -> CallOutcome:
        """The outcome of a call not even built because :meth:`expired` (0 attempts)."""
        return self._give_up(provider, self.stage or stage, 0, time.perf_counter())

    def _give_up(
        self, provider: Provider, stage: str, attempts: int, started: float
    ) -> CallOutcome:
        self.given_up += 1
        error = deadline_error(provider, self.deadline_s, stage)
        return CallOutcome(None, error, attempts, time.perf_counter() - started)

    async def call(
        self,
        provider: Provider,
        request: CompletionRequest,
        policy: RetryPolicy,
        stage: str,
        member: str = "",
    ) -> CallOutcome:
        """Wait for a slot, then :func:`call_with_retries`; both bounded by the stage deadline.

        With a budget (``costs.max_cost_usd``) a review is sent only while its most fits:
        the spend so far, the calls in flight and this review's reservation
        (:meth:`~llm_council.call_pricing.SessionCosts.reserve`); else it is not sent.
        """
        stage = self.stage or stage
        started = time.perf_counter()
        held = None
        if self.costs is not None and stage.startswith("review"):  # either review order
            prompt_chars = len(request.system or "") + len(request.prompt_text)
            held = self.costs.reserve(provider.spec, prompt_chars, request.max_tokens)
            if held is None:
                error = self.costs.stop(stage, member or provider.spec, provider.provider_name)
                return CallOutcome(None, error, 0, time.perf_counter() - started)
        try:
            outcome = await self._call_in_slot(provider, request, policy, stage, member, started)
        finally:
            if held is not None and self.costs is not None:
                self.costs.release(held)
        if self.costs is not None and outcome.completion is not None:
            self.costs.add(stage, member or provider.spec, provider.spec, outcome.completion.usage)
        return outcome

    async def _call_in_slot(
        self,
        provider: Provider,
        request: CompletionRequest,
        policy: RetryPolicy,
        stage: str,
        member: str,
        started: float,
    ) -> CallOutcome:
        deadline_at = self.stage_deadline_at(stage)
        if self.semaphore.locked():
            try:
                async with asyncio.timeout_at(deadline_at):
                    await self.semaphore.acquire()
            except TimeoutError:
                return self._give_up(provider, stage, 0, started)
        else:  # a free slot is taken without suspending: no timer to set up
            await self.semaphore.acquire()
        try:
            if deadline_at is not None and asyncio.get_running_loop().time() >= deadline_at:
                # a free slot is taken without suspending, so the timeout above cannot fire
                return self._give_up(provider, stage, 0, started)
            outcome = await call_with_retries(
                provider,
                request,
                policy,
                deadline_at=deadline_at,
                deadline_s=self.deadline_s,
                stage=stage,
                trace_attributes={"llm_council.member": member, "llm_council.stage": stage},
            )
        finally:
            self.semaphore.release()
        if isinstance(outcome.error, SessionDeadlineError):
            self.given_up += 1
        self._add_usage(outcome)
        return outcome
