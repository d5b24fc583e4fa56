"""The OpenAI provider reads the SDK's raw response (``cast_to`` the HTTP library's response
class, ADR 0035): on the same recorded bodies it must give exactly what the SDK's own
decoding (``cast_to=object``) gave, and what the SDK's ``ChatCompletion`` model holds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from llm_council.errors import ProviderError
from llm_council.providers.base import Completion, CompletionRequest
from llm_council.providers.openai_sdk import OpenAIProvider, chat_completions_url
from llm_council.providers.registry import create_provider


def _choice(message: dict[str, Any], finish_reason: str | None = "stop") -> dict[str, Any]:
    return {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}


def _body(*choices: dict[str, Any], usage: object = "default", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024",
        "choices": list(choices),
        **fields,
    }
    if usage == "default":
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    elif usage is not None:
        body["usage"] = usage
    return body


VERDICT = json.dumps({"ranking": ["Response A"], "scores": {"Response A": 7}, "rationale": "ok"})
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "verdict", "arguments": "{}"},
}
# (status, body: a dict sent as JSON or bytes as they are, extra headers)
RECORDED: dict[str, tuple[int, Any, dict[str, str]]] = {
    "text": (200, _body(_choice({"content": "Cache it."})), {}),
    "structured": (200, _body(_choice({"content": VERDICT})), {}),
    "truncated": (200, _body(_choice({"content": "Cach"}, "length")), {}),
    "refusal": (200, _body(_choice({"content": None, "refusal": "I can't help."})), {}),
    "tool_call": (
        200,
        _body(_choice({"content": None, "tool_calls": [TOOL_CALL]}, "tool_calls")),
        {},
    ),
    "empty_at_length": (200, _body(_choice({"content": ""}, "length")), {}),
    "no_usage": (200, _body(_choice({"content": "Hi."}), usage=None), {}),
    "null_usage_counts": (
        200,
        _body(_choice({"content": "Hi."}), usage={"prompt_tokens": None, "completion_tokens": 2}),
        {},
    ),
    "no_model": (200, {"choices": [_choice({"content": "Hi."})]}, {}),
    "content_not_a_string": (200, _body(_choice({"content": ["a", "b"]})), {}),
    "no_choices": (200, _body(), {}),
    "json_null": (200, b"null", {}),
    "json_list": (200, b"[1, 2]", {}),
    "invalid_json": (200, b"{not json", {}),
    "charset_json": (
        200,
        json.dumps(_body(_choice({"content": "Hi."}))).encode(),
        {"Content-Type": "application/json; charset=utf-8"},
    ),
    "plain_text": (200, b"Hello from a proxy", {"Content-Type": "text/plain"}),
    "html_error_page": (200, b"<html>oops</html>", {"Content-Type": "text/html"}),
    "bad_request": (
        400,
        {"error": {"message": "bad 'messages'", "type": "invalid_request_error"}},
        {},
    ),
    "rate_limited": (
        429,
        {"error": {"message": "slow down", "type": "rate_limit_error"}},
        {"retry-after-ms": "1500"},
    ),
    "server_error_text": (503, b"upstream unavailable", {"Content-Type": "text/plain"}),
}


def _outcome(provider: OpenAIProvider, request: CompletionRequest) -> object:
    """The completion's fields, or the classified error's (what the council acts on)."""

    async def call() -> Completion:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    try:
        return asyncio.run(call()).model_dump()
    except ProviderError as error:
        return {
            "error": str(error),
            "retryable": error.retryable,
            "retry_after": error.retry_after,
            "status_code": error.status_code,
            "finish_reason": error.finish_reason,
        }


def _provider(fake_vendor: Any, raw: bool) -> OpenAIProvider:
    provider = create_provider("openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1"})
    assert isinstance(provider, OpenAIProvider) and provider._response_class is not None
    if not raw:
        provider._response_class = None  # the SDK's own decoding, as before ADR 0035
    return provider


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp"])
@pytest.mark.parametrize("name", list(RECORDED))
def test_the_raw_response_decodes_like_the_sdk(name, http_client, fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-decoding-0000")
    no_vendor_env.setenv("LLM_COUNCIL_HTTP_CLIENT", http_client)
    status, body, headers = RECORDED[name]
    request = CompletionRequest.from_prompt("hi")
    outcomes = []
    for raw in (True, False):
        fake_vendor.respond(status, body, headers=headers)
        outcomes.append(_outcome(_provider(fake_vendor, raw), request))
    assert outcomes[0] == outcomes[1]
    first, second = fake_vendor.requests[-2:]
    assert (
        (first.path, first.body)
        == (second.path, second.body)
        == (
            "/v1/chat/completions",
            {
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2048,
            },
        )
    )
    assert first.headers["authorization"] == second.headers["authorization"]


@pytest.mark.parametrize(
    "name",
    [n for n, (status, body, _) in RECORDED.items() if status == 200 and isinstance(body, dict)],
)
def test_a_completion_holds_what_the_sdks_chat_completion_model_holds(
    name, fake_vendor, no_vendor_env
):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-decoding-0000")
    status, body, headers = RECORDED[name]
    fake_vendor.respond(status, body, headers=headers)
    outcome = _outcome(_provider(fake_vendor, raw=True), CompletionRequest.from_prompt("hi"))
    model = openai.types.chat.ChatCompletion.construct(**body)
    if not isinstance(body.get("choices"), list) or not body["choices"]:
        assert isinstance(outcome, dict) and "no 'choices'" in str(outcome["error"])
        return
    choice = openai.types.chat.chat_completion.Choice.construct(**body["choices"][0])
    message = openai.types.chat.ChatCompletionMessage.construct(**body["choices"][0]["message"])
    assert isinstance(outcome, dict)
    if isinstance(message.content, str) and message.content.strip():
        usage = (
            openai.types.CompletionUsage.construct(**body["usage"]) if body.get("usage") else None
        )
        assert outcome["text"] == message.content
        assert outcome["finish_reason"] == choice.finish_reason
        assert outcome["model"] == (model.model if body.get("model") else "gpt-4o")
        assert outcome["usage"] == {
            "input_tokens": usage.prompt_tokens if usage else None,
            "output_tokens": usage.completion_tokens if usage else None,
        }
    elif message.content is None or isinstance(message.content, str):
        expected = "refusal" if getattr(message, "refusal", None) else choice.finish_reason
        assert outcome["finish_reason"] == expected and outcome["retryable"] is False
        assert "empty answer" in str(outcome["error"])
    else:
        assert "is not a string" in str(outcome["error"])


def test_the_chat_url_is_the_sdks_own_merge_of_the_base_url(no_vendor_env):
    for base_url in (
        "http://127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1/",
        "https://gw.example/a/b?x=1",
    ):
        client = openai.AsyncOpenAI(api_key="sk-test-url-0000", base_url=base_url)
        assert chat_completions_url(client) == str(client._prepare_url("/chat/completions"))
