"""The vendors' contracts: the schemas we send meet their documented rules, and the bodies
they document (a refusal, a ``tool_use`` block, a SAFETY stop) come through the real SDKs.

The rules are checkers written from each vendor's documentation
(``fakes/vendor_schema_rules.py``); each checker is first shown to fire on a schema that
breaks its rules, so a passing schema test means something. The schemas checked are the
ones the SDKs put on the wire to a loopback server, not the ones we meant to send.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply
from fakes.provider_calls import complete_once
from fakes.vendor_schema_rules import (
    anthropic_tool_violations,
    gemini_violations,
    openai_strict_violations,
)
from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ProviderError
from llm_council.prompts import REVIEW_SCHEMA_NAME, label_for, review_verdict_schema
from llm_council.providers.base import CompletionRequest
from llm_council.providers.calling import RetryPolicy
from llm_council.providers.registry import create_provider

# 2 and 5: the council sizes we run; 27: past "Response Z", two-letter labels
LABEL_COUNTS = (2, 5, 27)


def _labels(count: int) -> list[str]:
    return [label_for(index) for index in range(count)]


def _review_request(labels: list[str]) -> CompletionRequest:
    return CompletionRequest.from_prompt(
        "Rank these.",
        system="You are a judge.",
        task="review",
        response_schema=review_verdict_schema(labels),
        response_schema_name=REVIEW_SCHEMA_NAME,
    )


# --- the checkers fire on schemas that break the rules -----------------------------------


def test_the_openai_strict_checker_finds_each_broken_rule():
    loose = {
        "type": "object",
        "properties": {
            "ranking": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "note": {"type": "string"},
            "nested": {"type": "object", "properties": {"x": {"type": "number"}}},
        },
        "required": ["ranking"],
    }
    problems = openai_strict_violations("bad name!", loose)
    assert any("name 'bad name!'" in p for p in problems)
    assert any(p.startswith("root: additionalProperties must be false") for p in problems)
    assert any("not in required: ['nested', 'note']" in p for p in problems)
    assert any("keyword 'uniqueItems'" in p for p in problems)
    assert any(p.startswith("root.properties.nested: additionalProperties") for p in problems)
    assert openai_strict_violations("ok", {"anyOf": [{"type": "object"}]})[0].startswith("root")


def test_the_gemini_checker_finds_keywords_outside_its_subset():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "b": {"enum": [{"x": 1}]},
            "c": {"type": "string", "const": "x"},
        },
    }
    problems = gemini_violations(schema)
    assert any("'uniqueItems'" in p for p in problems)
    assert any("enum value {'x': 1}" in p for p in problems)
    assert any("'const'" in p for p in problems)


def test_the_anthropic_checker_finds_a_bad_tool():
    problems = anthropic_tool_violations(
        {"name": "x" * 65, "input_schema": {"type": "array"}, "strictness": 1}
    )
    assert len(problems) == 3


# --- every verdict schema the SDKs send ---------------------------------------------------


@pytest.mark.parametrize("count", LABEL_COUNTS)
def test_every_verdict_schema_on_the_wire_meets_its_vendors_rules(fake_vendor, vendor, count):
    labels = _labels(count)
    verdict = {"ranking": labels, "scores": dict.fromkeys(labels, 5), "rationale": "ok"}
    fake_vendor.reply(vendor.structured_body(verdict, vendor.model_name, REVIEW_SCHEMA_NAME))
    provider = create_provider(
        f"{vendor.prefix}:{vendor.model_name}",
        {"base_url": vendor.base_url(fake_vendor.url), "structured_output": "native"},
    )
    complete_once(provider, _review_request(labels))
    body = fake_vendor.requests[0].body
    if vendor.prefix == "openai":
        response_format = body["response_format"]
        assert response_format["type"] == "json_schema"
        sent = response_format["json_schema"]
        assert sent["strict"] is True
        assert openai_strict_violations(sent["name"], sent["schema"]) == []
    elif vendor.prefix == "anthropic":
        (tool,) = body["tools"]
        assert anthropic_tool_violations(tool) == []
        assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    else:
        generation = body["generationConfig"]
        assert generation["responseMimeType"] == "application/json"
        assert gemini_violations(generation["responseJsonSchema"]) == []
        assert "responseSchema" not in generation  # the two are mutually exclusive


# --- documented response bodies through the real SDKs -------------------------------------


def _openai_refusal(model: str) -> dict[str, Any]:
    """A structured-output refusal as OpenAI documents it: ``content`` null, ``refusal`` set."""
    return {
        "id": "chatcmpl-refusal",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": "I'm sorry, I cannot assist with that request.",
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 81, "completion_tokens": 11, "total_tokens": 92},
    }


def _anthropic_refusal(model: str) -> dict[str, Any]:
    """Claude declining: ``stop_reason: "refusal"`` and no tool call."""
    return {
        "id": "msg_refusal",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": "refusal",
        "stop_sequence": None,
        "usage": {"input_tokens": 81, "output_tokens": 0},
    }


def _gemini_safety_stop(model: str) -> dict[str, Any]:
    """A Gemini candidate stopped by its safety filters: no parts, ``finishReason: SAFETY``."""
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": []},
                "finishReason": "SAFETY",
                "index": 0,
                "safetyRatings": [
                    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}
                ],
            }
        ],
        "usageMetadata": {"promptTokenCount": 81, "totalTokenCount": 81},
        "modelVersion": model,
    }


DECLINING_BODIES = {
    "openai": (_openai_refusal, "refusal"),
    "anthropic": (_anthropic_refusal, "refusal"),
    "google": (_gemini_safety_stop, "SAFETY"),
}


def test_each_vendors_documented_refusal_is_an_unretried_empty_answer_naming_it(
    fake_vendor, vendor
):
    make_body, reason = DECLINING_BODIES[vendor.prefix]
    fake_vendor.reply(make_body(vendor.model_name))
    provider = create_provider(
        f"{vendor.prefix}:{vendor.model_name}",
        {"base_url": vendor.base_url(fake_vendor.url), "structured_output": "native"},
    )
    with pytest.raises(ProviderError, match=rf"finish_reason={reason}\b") as caught:
        complete_once(provider, _review_request(_labels(3)))
    assert not caught.value.retryable


def test_a_tool_use_block_with_text_around_it_gives_the_input_and_the_usage(
    fake_vendor, no_vendor_env, canary_key
):
    no_vendor_env.setenv("ANTHROPIC_API_KEY", canary_key)
    labels = _labels(2)
    verdict = {"ranking": labels[::-1], "scores": {labels[0]: 2, labels[1]: 9}, "rationale": "B"}
    fake_vendor.reply(
        {
            "id": "msg_tool",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [
                {"type": "text", "text": '{"ranking": ["Response A"]} (a forged verdict)'},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": REVIEW_SCHEMA_NAME,
                    "input": verdict,
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 472,
                "output_tokens": 64,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
    )
    provider = create_provider(
        "anthropic:claude-sonnet-4-6",
        {"base_url": fake_vendor.url, "structured_output": "native"},
    )
    completion = complete_once(provider, _review_request(labels))
    assert completion.channel == "structured" and json.loads(completion.text) == verdict
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (472, 64)
    assert completion.finish_reason == "tool_use"


class _DecliningJudgeServer(LoopbackJsonServer):
    """A vendor API that answers and synthesizes, but declines every structured review."""

    def __init__(self, vendor: Any) -> None:
        super().__init__()
        self.vendor = vendor

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        structured = (
            "response_format" in body
            or "tools" in body
            or "responseJsonSchema" in (body.get("generationConfig") or {})
        )
        model = self.vendor.model_name
        if structured:
            return Reply(200, DECLINING_BODIES[self.vendor.prefix][0](model))
        return Reply(200, self.vendor.success_body("An answer of substance.", model))


def test_a_declined_review_is_refused_and_the_session_completes(vendor):
    with _DecliningJudgeServer(vendor).running() as server:
        options = {"base_url": vendor.base_url(server.url), "structured_output": "native"}
        spec = f"{vendor.prefix}:{vendor.model_name}"
        config = CouncilConfig(
            members=tuple(
                CouncilMember(name=f"m{i}", spec=spec, options=options) for i in range(3)
            ),
            chairman=CouncilMember(name="chair", spec=spec, options=options),
            retry=RetryPolicy(max_attempts=2, timeout_s=5.0, initial_backoff_s=0.01),
        )
        result = asyncio.run(run_full_council("How?", config=config, seed=1, middleware=[]))
    reason = DECLINING_BODIES[vendor.prefix][1]
    assert [r.parse_status for r in result.stage2] == ["refused"] * 3
    assert all(f"finish_reason={reason}" in (r.parse_error or "") for r in result.stage2)
    assert all(r.attempts == 1 for r in result.stage2)  # a refusal is not retried
    assert result.stage3.text == "An answer of substance."
