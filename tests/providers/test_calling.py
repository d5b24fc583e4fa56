"""The core's retry loop, driven by a scripted fake provider registered like any other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llm_council.errors import ProviderError
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.calling import CallOutcome, RetryPolicy, call_with_retries
from llm_council.providers.registry import create_provider, register_provider, unregister_provider

FAST = {"initial_backoff_s": 0.001, "max_backoff_s": 0.001}


class ScriptedProvider(Provider):
    """Plays back a script: each call raises the next exception or returns the next text;
    ``"hang"`` sleeps far longer than any test timeout."""

    provider_name = "scripted"

    def __init__(self, model_name: str, script: list[Any]) -> None:
        super().__init__(model_name)
        self.script = list(script)
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        step = self.script.pop(0)
        if step == "hang":
            await asyncio.sleep(60)
        if isinstance(step, BaseException):
            raise step
        return Completion(text=str(step), model=self.model_name)


@pytest.fixture
def scripted() -> Iterator[None]:
    register_provider("scripted", lambda model, options: ScriptedProvider(model, options["script"]))
    yield
    unregister_provider("scripted")


def _run(script: list[Any], policy: RetryPolicy) -> tuple[CallOutcome, ScriptedProvider]:
    provider = create_provider("scripted:fake-1", {"script": script})
    assert isinstance(provider, ScriptedProvider)
    outcome = asyncio.run(call_with_retries(provider, CompletionRequest.from_prompt("q"), policy))
    return outcome, provider


def _retryable(retry_after: float | None = None) -> ProviderError:
    return ProviderError("busy", provider="scripted", retryable=True, retry_after=retry_after)


def test_success_on_first_attempt(scripted):
    outcome, provider = _run(["fine"], RetryPolicy(**FAST))
    assert outcome.ok and outcome.completion.text == "fine"
    assert (outcome.attempts, provider.calls) == (1, 1)
    assert outcome.error is None


def test_non_retryable_error_is_not_retried(scripted):
    refused = ProviderError("bad request", provider="scripted", retryable=False, status_code=400)
    outcome, provider = _run([refused, "never reached"], RetryPolicy(max_attempts=4, **FAST))
    assert not outcome.ok and outcome.error is refused
    assert (outcome.attempts, provider.calls) == (1, 1)


def test_retryable_error_then_success(scripted):
    outcome, provider = _run([_retryable(), _retryable(), "third time"], RetryPolicy(**FAST))
    assert outcome.ok and outcome.completion.text == "third time"
    assert (outcome.attempts, provider.calls) == (3, 3)


def test_retryable_errors_exhaust_max_attempts(scripted):
    errors = [_retryable() for _ in range(5)]
    outcome, provider = _run(errors, RetryPolicy(max_attempts=3, **FAST))
    assert outcome.error is errors[2]  # the last attempt's error is reported
    assert (outcome.attempts, provider.calls) == (3, 3)


def test_retry_after_is_capped_by_the_policy(scripted):
    started = time.perf_counter()
    outcome, _ = _run(
        [_retryable(retry_after=600.0), "ok"],
        RetryPolicy(max_retry_after_s=0.05, initial_backoff_s=60, max_backoff_s=60),
    )
    elapsed = time.perf_counter() - started
    assert outcome.ok and outcome.attempts == 2
    # capped at 0.05 s, neither 600 s nor the 60 s backoff; the upper bound is generous so a
    # loaded machine still meets it (issue 37 A.12)
    assert 0.05 <= elapsed < 30


def test_negative_retry_after_means_no_wait(scripted):
    started = time.perf_counter()
    outcome, _ = _run(
        [_retryable(retry_after=-10.0), "ok"], RetryPolicy(initial_backoff_s=60, max_backoff_s=60)
    )
    assert outcome.ok and time.perf_counter() - started < 30  # not the 60 s backoff


def test_attempt_timeout_is_a_retryable_error_counted_per_attempt(scripted):
    outcome, provider = _run(["hang", "hang"], RetryPolicy(max_attempts=2, timeout_s=0.05, **FAST))
    assert outcome.error is not None and outcome.error.retryable
    assert str(outcome.error) == "scripted:fake-1: no answer within 0.05 s"
    assert (outcome.attempts, provider.calls) == (2, 2)


def test_unexpected_exception_is_wrapped_not_retried(scripted):
    outcome, provider = _run([RuntimeError("boom"), "never"], RetryPolicy(**FAST))
    assert isinstance(outcome.error, ProviderError)
    assert str(outcome.error) == "scripted:fake-1: unexpected RuntimeError: boom"
    assert not outcome.error.retryable
    assert (outcome.attempts, provider.calls) == (1, 1)
    assert outcome.duration_s >= 0.0


def test_retries_after_a_first_failure_wait_and_count_as_one_tenacity_loop(scripted, monkeypatch):
    # The first attempt runs outside tenacity (ADR 0035); tenacity replays its failure, so
    # each retry event carries the failed attempt's number and the wait it chose: the
    # server's retry-after, else the (here capped) backoff.
    from llm_council.infra import tracing

    retries: list[tuple[int, float]] = []
    monkeypatch.setattr(
        tracing,
        "record_retry",
        lambda span, attempt, error, wait_s: retries.append((attempt, wait_s)),
    )
    script = [_retryable(retry_after=0.01), _retryable(retry_after=0.02), _retryable(), "ok"]
    outcome, provider = _run(script, RetryPolicy(max_attempts=4, **FAST))
    assert outcome.ok and (outcome.attempts, provider.calls) == (4, 4)
    assert retries == [(1, 0.01), (2, 0.02), (3, 0.001)]


def test_a_single_attempt_policy_returns_the_first_retryable_failure(scripted, monkeypatch):
    from llm_council.infra import tracing

    retries: list[int] = []
    monkeypatch.setattr(tracing, "record_retry", lambda span, attempt, *_: retries.append(attempt))
    busy = _retryable()
    outcome, provider = _run([busy, "never"], RetryPolicy(max_attempts=1, **FAST))
    assert outcome.error is busy and (outcome.attempts, provider.calls) == (1, 1)
    assert retries == []


def test_the_deadline_during_the_first_attempt_counts_that_attempt(scripted):
    from llm_council.errors import SessionDeadlineError

    provider = create_provider("scripted:fake-1", {"script": ["hang"]})

    async def run() -> CallOutcome:
        deadline_at = asyncio.get_running_loop().time() + 0.05
        return await call_with_retries(
            provider,
            CompletionRequest.from_prompt("q"),
            RetryPolicy(**FAST),
            deadline_at=deadline_at,
            deadline_s=0.05,
            stage="answer",
        )

    outcome = asyncio.run(run())
    assert isinstance(outcome.error, SessionDeadlineError) and outcome.attempts == 1
