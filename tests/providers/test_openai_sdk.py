"""OpenAI-specific translation, checked on what the real SDK puts on the wire."""

from __future__ import annotations

import pytest

from fakes.provider_calls import complete_once
from llm_council.errors import MissingCredentialsError, ProviderError
from llm_council.providers.base import CompletionRequest, Message
from llm_council.providers.registry import create_provider

SUCCESS = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "llama3.2:3b",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}
    ],
}


def test_request_fields_are_mapped_for_a_compatible_server(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    fake_vendor.reply(SUCCESS)
    request = CompletionRequest(
        messages=(
            Message(role="user", content="Rank these."),
            Message(role="assistant", content="Which ones?"),
            Message(role="user", content="A and B."),
        ),
        system="You are a strict judge.",
        max_tokens=321,
        temperature=0.25,
        seed=7,
        json_output=True,
    )
    provider = create_provider("openai:llama3.2:3b", {"base_url": f"{fake_vendor.url}/v1"})
    completion = complete_once(provider, request)

    assert completion.text == "{}" and completion.model == "llama3.2:3b"
    body = fake_vendor.requests[0].body
    assert body["model"] == "llama3.2:3b"  # a model name may itself contain ':'
    assert body["messages"] == [
        {"role": "system", "content": "You are a strict judge."},
        {"role": "user", "content": "Rank these."},
        {"role": "assistant", "content": "Which ones?"},
        {"role": "user", "content": "A and B."},
    ]
    # a compatible server gets the widely supported field name
    assert body["max_tokens"] == 321 and "max_completion_tokens" not in body
    assert (body["temperature"], body["seed"]) == (0.25, 7)
    assert body["response_format"] == {"type": "json_object"}


def test_unset_sampling_settings_are_not_sent(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    fake_vendor.reply(SUCCESS)
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    complete_once(provider, CompletionRequest.from_prompt("hi"))

    body = fake_vendor.requests[0].body
    assert not {"temperature", "seed", "response_format"} & set(body)
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_openais_own_endpoint_gets_max_completion_tokens(no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    provider = create_provider("openai:o3-mini")
    arguments = provider.request_arguments(CompletionRequest.from_prompt("hi", max_tokens=99))

    # reasoning models reject the older max_tokens name
    assert arguments["max_completion_tokens"] == 99 and "max_tokens" not in arguments


def test_local_server_without_key_gets_a_placeholder(fake_vendor, no_vendor_env):
    fake_vendor.reply(SUCCESS)
    no_vendor_env.setenv("OPENAI_BASE_URL", f"{fake_vendor.url}/v1")  # like an Ollama set-up
    completion = complete_once(
        create_provider("openai:llama3.2:3b"), CompletionRequest.from_prompt("hi")
    )

    assert completion.text == "{}"
    assert fake_vendor.requests[0].headers["authorization"] == "Bearer not-needed"


def test_remote_base_url_without_key_names_the_variable(no_vendor_env):
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        create_provider("openai:meta-llama-3", {"base_url": "https://api.together.example/v1"})


def test_refusal_is_an_empty_answer_with_its_reason(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    refused = dict(SUCCESS)
    refused["choices"] = [
        {
            "index": 0,
            "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
            "finish_reason": "stop",
        }
    ]
    fake_vendor.reply(refused)
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    with pytest.raises(ProviderError, match=r"empty answer \(finish_reason=refusal\)") as caught:
        complete_once(provider, CompletionRequest.from_prompt("hi"))
    assert not caught.value.retryable


def test_truncated_answer_is_returned_with_its_finish_reason(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    truncated = dict(SUCCESS)
    truncated["choices"] = [
        {"index": 0, "message": {"role": "assistant", "content": "Part"}, "finish_reason": "length"}
    ]
    fake_vendor.reply(truncated)
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    completion = complete_once(provider, CompletionRequest.from_prompt("hi"))

    assert (completion.text, completion.finish_reason) == ("Part", "length")


def test_rate_limit_reads_retry_after_ms(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    fake_vendor.respond(
        429,
        {"error": {"message": "Rate limit reached", "type": "requests"}},
        headers={"retry-after-ms": "1250", "retry-after": "2"},
    )
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    with pytest.raises(ProviderError) as caught:
        complete_once(provider, CompletionRequest.from_prompt("hi"))

    assert caught.value.retryable and caught.value.status_code == 429
    assert caught.value.retry_after == pytest.approx(1.25)  # the precise header wins
    assert "rate limited 429: Rate limit reached" in str(caught.value)


def test_the_call_sends_the_api_key_only_never_the_admin_key(fake_vendor, no_vendor_env):
    # ``client.post`` (ADR 0031) must authenticate like ``chat.completions.create``: the
    # bearer key, never an admin key the SDK would read from OPENAI_ADMIN_KEY
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    no_vendor_env.setenv("OPENAI_ADMIN_KEY", "sk-admin-must-not-leave-0000")
    fake_vendor.reply(SUCCESS)
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    complete_once(provider, CompletionRequest.from_prompt("hi"))

    received = fake_vendor.requests[0]
    assert received.path == "/v1/chat/completions" and received.method == "POST"
    assert received.headers["authorization"] == "Bearer sk-test-mapping-000000"
    assert "sk-admin" not in repr(received.headers)
    assert received.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"choices": ["not an object"]}, "malformed response: no 'choices'"),
        ({"choices": {"0": {}}}, "malformed response: no 'choices'"),
        ([{"choices": []}], "malformed response: no 'choices'"),
        ({"choices": [{"message": {"content": ["a", "list"]}}]}, "is not a string"),
        ({"choices": [{"message": "hi"}]}, r"empty answer \(finish_reason=unknown\)"),
        ({"choices": [{"message": {"content": "  "}, "finish_reason": 7}]}, "empty answer"),
    ],
)
def test_hostile_bodies_are_one_clear_non_retryable_error(
    fake_vendor, no_vendor_env, body, message
):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    fake_vendor.reply(body)
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    with pytest.raises(ProviderError, match=message) as caught:
        complete_once(provider, CompletionRequest.from_prompt("hi"))
    assert not caught.value.retryable and "openai:gpt-4o" in str(caught.value)


def test_odd_usage_and_model_fields_are_dropped_not_trusted(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-mapping-000000")
    odd = {
        **SUCCESS,
        "model": ["not", "a", "name"],
        "usage": {"prompt_tokens": "12", "completion_tokens": True},
    }
    fake_vendor.reply(odd, {**SUCCESS, "usage": "lots"})
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    first = complete_once(provider, CompletionRequest.from_prompt("hi"))
    second = complete_once(provider, CompletionRequest.from_prompt("hi"))

    assert first.model == "gpt-4o"  # the configured name, not the server's list
    assert (first.usage.input_tokens, first.usage.output_tokens) == (None, None)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (None, None)
    assert second.model == "llama3.2:3b" and second.text == "{}"
