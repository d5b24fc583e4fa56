"""Anthropic-specific translation, checked on what the real SDK puts on the wire."""

from __future__ import annotations

import email.utils
import time

import pytest

from fakes.provider_calls import complete_once
from llm_council.errors import ProviderError
from llm_council.providers.base import CompletionRequest, Message, Provider
from llm_council.providers.registry import create_provider

KEY = "sk-ant-test-mapping-0000"


def _message(content: list[dict[str, object]], stop_reason: str = "end_turn") -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6-20260101",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 4, "output_tokens": 2},
    }


@pytest.fixture
def provider(fake_vendor, no_vendor_env) -> Provider:
    no_vendor_env.setenv("ANTHROPIC_API_KEY", KEY)
    return create_provider("anthropic:claude-sonnet-4-6", {"base_url": fake_vendor.url})


def test_system_prompt_json_instruction_and_settings_are_mapped(provider, fake_vendor):
    fake_vendor.reply(_message([{"type": "text", "text": '{"ranking": []}'}]))
    request = CompletionRequest(
        messages=(
            Message(role="system", content="Scores go from 1 to 10."),
            Message(role="user", content="Review these answers."),
        ),
        system="You are a reviewer.",
        max_tokens=500,
        temperature=0.0,
        seed=42,
        json_output=True,
    )
    completion = complete_once(provider, request)

    assert completion.text == '{"ranking": []}'
    assert completion.model == "claude-sonnet-4-6-20260101"
    sent = fake_vendor.requests[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["system"] == (
        "You are a reviewer.\n\nScores go from 1 to 10.\n\n"
        "Reply with a single JSON object and nothing else."
    )
    assert sent.body["messages"] == [{"role": "user", "content": "Review these answers."}]
    assert sent.body["max_tokens"] == 500
    # the Messages API (SDK 2.x) takes neither a sampling seed nor a temperature
    assert not {"seed", "temperature"} & set(sent.body)


def test_only_text_blocks_make_the_answer(provider, fake_vendor):
    fake_vendor.reply(
        _message(
            [
                {"type": "thinking", "thinking": "Let me weigh A against B.", "signature": "s"},
                {"type": "text", "text": "B is better"},
                {"type": "text", "text": ", clearly."},
            ]
        )
    )
    completion = complete_once(provider, CompletionRequest.from_prompt("A or B?"))

    assert completion.text == "B is better, clearly."
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (4, 2)


def test_thinking_only_answer_cut_by_max_tokens_explains_itself(provider, fake_vendor):
    fake_vendor.reply(
        _message([{"type": "thinking", "thinking": "Hmm", "signature": "s"}], "max_tokens")
    )
    with pytest.raises(ProviderError, match="raise max_tokens") as caught:
        complete_once(provider, CompletionRequest.from_prompt("A or B?"))
    assert not caught.value.retryable


def test_overloaded_529_with_http_date_retry_after_is_retryable(provider, fake_vendor):
    sent_at = time.time()
    in_three_seconds = email.utils.formatdate(sent_at + 3, usegmt=True)
    fake_vendor.respond(
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        headers={"retry-after": in_three_seconds},
    )
    with pytest.raises(ProviderError) as caught:
        complete_once(provider, CompletionRequest.from_prompt("hi"))
    answered_at = time.time()

    assert caught.value.retryable and caught.value.status_code == 529
    # the wait is the date (whole seconds: 2-3 s after sent_at) less the time of reading it,
    # on the wall clock the parser reads (a fixed 1.5 s lower bound failed once the round
    # trip took 0.5-1.5 s, depending on where in its second the date fell)
    due = float(int(sent_at + 3))
    assert caught.value.retry_after is not None
    assert due - answered_at <= caught.value.retry_after <= due - sent_at <= 3.0
