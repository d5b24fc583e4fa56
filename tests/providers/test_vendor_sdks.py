"""The behaviour every vendor provider shares, run through each real SDK against a fake server.

Each test runs three times (openai, anthropic, google): the provider is built through the
normal registry with ``base_url`` pointing at the loopback fake, so the SDK's request
building, HTTP client, response parsing and exceptions are all the real ones.
"""

from __future__ import annotations

import asyncio
import socket
import time
import traceback
from typing import Any

import pytest

from llm_council.errors import ConfigError, MissingCredentialsError, ProviderError
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.calling import CallOutcome, RetryPolicy, call_with_retries
from llm_council.providers.registry import create_provider

# Backoff so long that a test finishing quickly proves the server's retry-after was used.
#: long enough that a loaded machine's slowness never looks like a backoff (issue 37 A.12)
SLOW_BACKOFF = {"initial_backoff_s": 60.0, "max_backoff_s": 60.0}
FAST_BACKOFF = {"initial_backoff_s": 0.01, "max_backoff_s": 0.01}
REQUEST = CompletionRequest.from_prompt("Which sorting algorithm is stable?", system="Be brief.")


def _provider(vendor: Any, base_url: str, **options: Any) -> Provider:
    return create_provider(
        f"{vendor.prefix}:{vendor.model_name}", {"base_url": vendor.base_url(base_url), **options}
    )


def _call(provider: Provider, policy: RetryPolicy) -> CallOutcome:
    async def run() -> CallOutcome:
        try:
            return await call_with_retries(provider, REQUEST, policy)
        finally:
            await provider.aclose()

    return asyncio.run(run())


def _complete_error(provider: Provider) -> ProviderError:
    """The ProviderError one direct ``complete`` raises (fails the test if it succeeds)."""

    async def run() -> Completion:
        try:
            return await provider.complete(REQUEST)
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError) as caught:
        asyncio.run(run())
    return caught.value


def test_success_maps_text_model_usage_and_sends_the_key(vendor, fake_vendor, canary_key):
    fake_vendor.reply(vendor.success_body("Merge sort is stable.", "served-model-007"))
    outcome = _call(_provider(vendor, fake_vendor.url), RetryPolicy(max_attempts=1))

    assert outcome.error is None and outcome.completion is not None
    assert outcome.completion.text == "Merge sort is stable."
    assert outcome.completion.model == "served-model-007"
    assert (outcome.completion.usage.input_tokens, outcome.completion.usage.output_tokens) == (
        11,
        3,
    )
    assert outcome.completion.finish_reason in {"stop", "end_turn", "STOP"}
    assert outcome.attempts == 1
    (sent,) = fake_vendor.requests
    assert sent.path.endswith(vendor.path_suffix)
    assert vendor.model_name in str(sent.body) + sent.path
    assert any(canary_key in value for value in sent.headers.values())


def test_rate_limit_then_success_waits_the_servers_retry_after(vendor, fake_vendor):
    fake_vendor.respond(429, vendor.error_body(429, "slow down"), headers={"retry-after": "0.08"})
    fake_vendor.reply(vendor.success_body("ok after waiting", "m"))
    started = time.perf_counter()
    outcome = _call(
        _provider(vendor, fake_vendor.url), RetryPolicy(max_attempts=3, timeout_s=5, **SLOW_BACKOFF)
    )
    elapsed = time.perf_counter() - started

    assert outcome.completion is not None and outcome.completion.text == "ok after waiting"
    assert outcome.attempts == 2
    assert len(fake_vendor.requests) == 2
    # waited the 0.08 s the server asked for, not the 60 s exponential backoff
    assert 0.08 <= elapsed < 30


def test_server_error_is_retried_until_attempts_run_out(vendor, fake_vendor):
    for _ in range(3):
        fake_vendor.respond(500, vendor.error_body(500, "internal"))
    outcome = _call(
        _provider(vendor, fake_vendor.url), RetryPolicy(max_attempts=3, timeout_s=5, **FAST_BACKOFF)
    )

    assert outcome.completion is None and outcome.error is not None
    assert outcome.error.retryable and outcome.error.status_code == 500
    assert "500" in str(outcome.error) and "internal" in str(outcome.error)
    assert outcome.attempts == 3
    assert len(fake_vendor.requests) == 3


def test_hanging_server_hits_the_core_timeout_and_is_retried(vendor, fake_vendor):
    for _ in range(2):
        fake_vendor.respond(200, vendor.success_body("too late", "m"), delay_s=30)
    started = time.perf_counter()
    outcome = _call(
        _provider(vendor, fake_vendor.url),
        RetryPolicy(max_attempts=2, timeout_s=0.1, **FAST_BACKOFF),
    )

    assert outcome.error is not None and outcome.error.retryable
    assert "no answer within 0.1 s" in str(outcome.error)
    assert outcome.attempts == 2
    assert time.perf_counter() - started < 20  # two 0.1 s attempts, not the 30 s replies


def test_sdk_timeout_is_classified_retryable(vendor, fake_vendor):
    fake_vendor.respond(200, vendor.success_body("too late", "m"), delay_s=30)
    error = _complete_error(_provider(vendor, fake_vendor.url, timeout_s=0.1))

    assert error.retryable
    assert "timed out" in str(error)


def test_body_that_is_not_json_is_a_clear_non_retryable_error(vendor, fake_vendor):
    fake_vendor.reply(b'{"choices": [truncated')
    outcome = _call(_provider(vendor, fake_vendor.url), RetryPolicy(max_attempts=3, **FAST_BACKOFF))

    assert outcome.error is not None and not outcome.error.retryable
    assert "malformed response" in str(outcome.error)
    assert "not valid JSON" in str(outcome.error)
    assert outcome.attempts == 1


def test_body_missing_the_answer_fields_is_a_clear_error(vendor, fake_vendor):
    fake_vendor.reply({"id": "x", "object": "unexpected"})
    error = _complete_error(_provider(vendor, fake_vendor.url))

    assert not error.retryable
    assert "malformed response" in str(error)
    assert f"{vendor.prefix}:{vendor.model_name}" in str(error)


def test_empty_answer_is_not_retried(vendor, fake_vendor):
    fake_vendor.reply(vendor.success_body("", "m"))
    outcome = _call(_provider(vendor, fake_vendor.url), RetryPolicy(max_attempts=3, **FAST_BACKOFF))

    assert outcome.error is not None and not outcome.error.retryable
    assert "empty answer" in str(outcome.error)
    assert outcome.attempts == 1


def test_refused_connection_is_retryable(vendor, no_vendor_env, canary_key):
    # a port held bound but never listened on: connecting is refused, and no other process
    # can take the port meanwhile (a port closed before the call could be reused by then)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port_url = f"http://127.0.0.1:{probe.getsockname()[1]}"
        error = _complete_error(_provider(vendor, closed_port_url))

    assert error.retryable
    # nothing listens: "timed out" would send the user looking for a slow server (the SDKs'
    # aiohttp transport reports a refused connection as ConnectTimeout)
    assert "connection failed" in str(error), str(error)
    assert "timed out" not in str(error)


@pytest.mark.parametrize("status", [408, 409, 502, 503, 529])
def test_transient_statuses_are_retryable(vendor, fake_vendor, status):
    fake_vendor.respond(status, vendor.error_body(status, "busy"))
    error = _complete_error(_provider(vendor, fake_vendor.url))

    assert error.retryable
    assert error.status_code == status


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retryable_and_never_show_the_key(
    vendor, fake_vendor, canary_key, status
):
    # A server echoing the key back (as OpenAI's 401 partly does) must not leak it.
    fake_vendor.respond(status, vendor.error_body(status, f"Incorrect API key: {canary_key}"))
    provider = _provider(vendor, fake_vendor.url)
    error = _complete_error(provider)

    assert not error.retryable
    assert error.status_code == status
    assert "Incorrect API key: [redacted]" in str(error)
    rendered = (
        str(error) + repr(error) + repr(provider) + "".join(traceback.format_exception(error))
    )
    assert canary_key not in rendered


def test_missing_key_names_the_environment_variable(vendor, no_vendor_env):
    for name in vendor.key_envs:
        no_vendor_env.delenv(name, raising=False)
    with pytest.raises(MissingCredentialsError) as caught:
        create_provider(f"{vendor.prefix}:{vendor.model_name}")

    assert isinstance(caught.value, ConfigError)  # the CLI reports it as a config mistake
    for name in vendor.key_envs:
        assert name in str(caught.value)


def test_custom_key_variable_is_read_and_named(vendor, no_vendor_env, canary_key):
    spec = f"{vendor.prefix}:{vendor.model_name}"
    with pytest.raises(MissingCredentialsError, match="MY_TEAM_KEY"):
        create_provider(spec, {"api_key_env": "MY_TEAM_KEY"})
    no_vendor_env.setenv("MY_TEAM_KEY", canary_key)

    assert create_provider(spec, {"api_key_env": "MY_TEAM_KEY"}).spec == spec


def test_unknown_option_is_a_config_error_quoting_it(vendor):
    with pytest.raises(ConfigError, match="unknown option 'temprature'"):
        create_provider(f"{vendor.prefix}:{vendor.model_name}", {"temprature": 0.2})


def test_non_positive_sdk_timeout_is_rejected(vendor):
    with pytest.raises(ConfigError, match="timeout_s"):
        create_provider(f"{vendor.prefix}:{vendor.model_name}", {"timeout_s": 0})
