"""Google-specific translation, checked on what the real google-genai SDK puts on the wire."""

from __future__ import annotations

import asyncio
import time

import pytest

from fakes.provider_calls import complete_once
from llm_council.errors import ProviderError
from llm_council.providers.base import CompletionRequest, Message, Provider
from llm_council.providers.calling import RetryPolicy, call_with_retries
from llm_council.providers.registry import create_provider

KEY = "AIza-test-mapping-000000"


def _answer(parts: list[dict[str, object]], finish_reason: str = "STOP") -> dict[str, object]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish_reason}
        ],
        "modelVersion": "gemini-2.5-pro-002",
    }


@pytest.fixture
def provider(fake_vendor, no_vendor_env) -> Provider:
    no_vendor_env.setenv("GOOGLE_API_KEY", KEY)
    return create_provider("google:gemini-2.5-pro", {"base_url": fake_vendor.url})


def test_request_fields_are_mapped(provider, fake_vendor):
    fake_vendor.reply(_answer([{"text": "[1, 2]"}]))
    request = CompletionRequest(
        messages=(
            Message(role="user", content="List two numbers."),
            Message(role="assistant", content="Which kind?"),
            Message(role="user", content="Integers."),
        ),
        system="Answer in JSON.",
        max_tokens=256,
        temperature=0.5,
        seed=11,
        json_output=True,
    )
    completion = complete_once(provider, request)

    assert (completion.text, completion.model) == ("[1, 2]", "gemini-2.5-pro-002")
    assert completion.finish_reason == "STOP"
    sent = fake_vendor.requests[0]
    assert sent.path.endswith("/models/gemini-2.5-pro:generateContent")
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["contents"] == [
        {"role": "user", "parts": [{"text": "List two numbers."}]},
        {"role": "model", "parts": [{"text": "Which kind?"}]},
        {"role": "user", "parts": [{"text": "Integers."}]},
    ]
    assert sent.body["systemInstruction"]["parts"] == [{"text": "Answer in JSON."}]
    assert sent.body["generationConfig"] == {
        "maxOutputTokens": 256,
        "temperature": 0.5,
        "seed": 11,
        "responseMimeType": "application/json",
    }


def test_gemini_api_key_is_the_fallback_variable(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("GEMINI_API_KEY", KEY)
    fake_vendor.reply(_answer([{"text": "hi"}]))
    provider = create_provider("google:gemini-2.5-flash", {"base_url": fake_vendor.url})

    assert complete_once(provider, CompletionRequest.from_prompt("hi")).text == "hi"
    assert fake_vendor.requests[0].headers["x-goog-api-key"] == KEY


def test_thought_parts_are_not_part_of_the_answer(provider, fake_vendor):
    fake_vendor.reply(_answer([{"text": "thinking aloud", "thought": True}, {"text": "42"}]))

    assert complete_once(provider, CompletionRequest.from_prompt("6 x 7?")).text == "42"


def test_blocked_prompt_is_an_empty_answer_naming_the_block(provider, fake_vendor):
    fake_vendor.reply({"promptFeedback": {"blockReason": "SAFETY"}})
    with pytest.raises(ProviderError, match=r"finish_reason=blocked:SAFETY") as caught:
        complete_once(provider, CompletionRequest.from_prompt("hi"))
    assert not caught.value.retryable


def test_rate_limit_retry_delay_in_the_body_is_honoured(provider, fake_vendor):
    quota_body = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.08s"}
            ],
        }
    }
    fake_vendor.respond(429, quota_body)
    fake_vendor.reply(_answer([{"text": "after quota"}]))
    policy = RetryPolicy(max_attempts=3, timeout_s=5, initial_backoff_s=60, max_backoff_s=60)

    async def run():
        try:
            return await call_with_retries(provider, CompletionRequest.from_prompt("hi"), policy)
        finally:
            await provider.aclose()

    started = time.perf_counter()
    outcome = asyncio.run(run())
    elapsed = time.perf_counter() - started

    assert outcome.completion is not None and outcome.completion.text == "after quota"
    assert outcome.attempts == 2
    assert 0.08 <= elapsed < 30  # the body's retryDelay, not the 60 s backoff (generous bound)
