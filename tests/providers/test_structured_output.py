"""Stage-2 verdicts on each SDK's native structured-output channel, checked on the wire.

A request's ``response_schema`` must reach each vendor in that vendor's own shape (OpenAI
``response_format`` json_schema strict, an Anthropic forced tool call, Google
``responseJsonSchema``), and the answer on that channel must come back as a completion
marked ``structured`` whose text is exactly the verdict object (ADR 0018).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from fakes.provider_calls import complete_once
from llm_council.errors import ConfigError
from llm_council.prompts import REVIEW_SCHEMA_NAME, review_verdict_schema
from llm_council.providers.base import CompletionRequest, is_structured_output_refusal
from llm_council.providers.calling import call_with_retries
from llm_council.providers.client_pool import close_shared_clients
from llm_council.providers.registry import create_provider
from llm_council.ranking_parser import parse_review

LABELS = ["Response A", "Response B"]
SCHEMA = review_verdict_schema(LABELS)
VERDICT = {
    "ranking": ["Response B", "Response A"],
    "scores": {"Response A": 3, "Response B": 8},
    "rationale": "B is right",
}


def _review_request() -> CompletionRequest:
    return CompletionRequest.from_prompt(
        "Rank these.",
        system="You are a judge.",
        task="review",
        response_schema=SCHEMA,
        response_schema_name=REVIEW_SCHEMA_NAME,
    )


def test_the_schema_goes_out_in_each_vendors_native_shape_and_the_verdict_comes_back(
    fake_vendor, vendor
):
    fake_vendor.reply(vendor.structured_body(VERDICT, vendor.model_name, REVIEW_SCHEMA_NAME))
    provider = create_provider(
        f"{vendor.prefix}:{vendor.model_name}",
        {"base_url": vendor.base_url(fake_vendor.url), "structured_output": "native"},
    )
    completion = complete_once(provider, _review_request())

    assert completion.channel == "structured" and json.loads(completion.text) == VERDICT
    parsed = parse_review(completion.text, LABELS, structured=True)
    assert (parsed.channel, parsed.ranking) == ("structured", ("Response B", "Response A"))
    body = fake_vendor.requests[0].body
    if vendor.prefix == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": REVIEW_SCHEMA_NAME, "strict": True, "schema": SCHEMA},
        }
    elif vendor.prefix == "anthropic":
        assert body["tools"] == [
            {
                "name": REVIEW_SCHEMA_NAME,
                "description": "Record your reply in this exact structure.",
                "input_schema": SCHEMA,
            }
        ]
        assert body["tool_choice"] == {"type": "tool", "name": REVIEW_SCHEMA_NAME}
    else:
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == SCHEMA


def test_the_nonce_mode_sends_no_schema_and_reads_text(fake_vendor, vendor):
    fake_vendor.reply(vendor.success_body("plain text", vendor.model_name))
    provider = create_provider(
        f"{vendor.prefix}:{vendor.model_name}",
        {"base_url": vendor.base_url(fake_vendor.url), "structured_output": "nonce"},
    )
    completion = complete_once(provider, _review_request())

    assert (completion.channel, completion.text) == ("text", "plain text")
    body = fake_vendor.requests[0].body
    assert not {"response_format", "tools", "tool_choice"} & set(body)
    assert "responseJsonSchema" not in body.get("generationConfig", {})


def test_an_openai_compatible_server_defaults_to_the_nonce_path(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-structured-0000")
    local = create_provider("openai:llama3.2", {"base_url": f"{fake_vendor.url}/v1"})
    official = create_provider("openai:gpt-4o")
    assert (local.structured_output, official.structured_output) == ("nonce", "native")


def test_an_anthropic_reply_without_the_tool_call_is_an_error_not_a_text_verdict(
    fake_vendor, no_vendor_env
):
    no_vendor_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    # the model wrote prose (say, quoting a candidate's fake verdict) instead of the tool call
    fake_text = json.dumps({"ranking": ["Response A"]})
    fake_vendor.reply(
        {
            "id": "msg_3",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": fake_text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    provider = create_provider("anthropic:claude-sonnet-4-6", {"base_url": fake_vendor.url})

    async def run():
        return await call_with_retries(provider, _review_request())

    outcome = asyncio.run(run())
    assert outcome.completion is None and outcome.error is not None
    assert "empty answer" in str(outcome.error) or "no answer" in str(outcome.error)


def test_a_response_format_refusal_is_recognised(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-structured-0000")
    # what vLLM / older compatible servers answer to json_schema
    message = "response_format type 'json_schema' is not supported"
    fake_vendor.respond(400, {"error": {"message": message, "type": "invalid_request_error"}})
    provider = create_provider(
        "openai:llama3.2",
        {"base_url": f"{fake_vendor.url}/v1", "structured_output": "native"},
    )

    outcome = asyncio.run(call_with_retries(provider, _review_request()))
    assert outcome.error is not None and outcome.attempts == 1
    assert is_structured_output_refusal(outcome.error.status_code, str(outcome.error))
    assert not is_structured_output_refusal(400, "prompt is too long")
    assert not is_structured_output_refusal(500, "response_format exploded")


@pytest.mark.parametrize("bad", ["json", "NATIVE", 1, True])
def test_a_bad_structured_output_option_is_a_one_line_config_error(bad, vendor):
    with pytest.raises(ConfigError, match=r"option 'structured_output' .* got") as raised:
        create_provider(f"{vendor.prefix}:{vendor.model_name}", {"structured_output": bad})
    assert "\n" not in str(raised.value)


def test_each_model_keeps_one_client_and_its_connections_across_sessions(
    fake_vendor, no_vendor_env
):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-structured-0000")
    for _ in range(6):
        fake_vendor.reply(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "hi"},
                        "finish_reason": "stop",
                    }
                ],
            }
        )
    options = {"base_url": f"{fake_vendor.url}/v1"}

    async def two_sessions() -> int:
        for _ in range(2):  # a session creates its providers afresh, as the council does
            providers = [create_provider(f"openai:m{i}", options) for i in range(3)]
            for provider in providers:
                await provider.complete(CompletionRequest.from_prompt("hi"))
                await provider.aclose()
        return await close_shared_clients()

    # one client per model (ADR 0031: small pools are cheaper to scan), reused by the
    # second session's providers
    assert asyncio.run(two_sessions()) == 3
    ports = [request.client_port for request in fake_vendor.requests]
    assert len(ports) == 6 and len(set(ports)) == 3
    assert ports[:3] == ports[3:]  # each model's kept-alive connection served it again
