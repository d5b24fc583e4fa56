"""The ``http_client`` option: the SDKs' httpx client or their aiohttp transport, the
default when installed (ADRs 0034, 0035).

Every shared vendor behaviour also runs through the aiohttp transport
(``test_vendor_sdks.py``, cases ``openai-aiohttp`` and ``anthropic-aiohttp``); these tests
cover the choice itself.
"""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from fakes.loopback_http import openai_completion_body
from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.providers.base import CompletionRequest, Provider
from llm_council.providers.provider_setup import default_http_client
from llm_council.providers.registry import create_provider


def _transport_name(provider: Provider) -> str:
    """The class name of the HTTP transport behind the provider's shared SDK client."""

    async def run() -> str:
        try:
            client: Any = await provider._client()  # type: ignore[attr-defined]
            return type(client._client._transport).__name__
        finally:
            await provider.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "anthropic:claude-sonnet-4-6"])
def test_aiohttp_is_the_default_and_the_environment_or_the_option_overrides_it(spec, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    no_vendor_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-choice-0000")
    url = "http://127.0.0.1:9" + ("/v1" if spec.startswith("openai") else "")
    assert _transport_name(create_provider(spec, {"base_url": url})) == "AiohttpTransport"
    no_vendor_env.setenv("LLM_COUNCIL_HTTP_CLIENT", "httpx")
    assert "Aiohttp" not in _transport_name(create_provider(spec, {"base_url": url}))
    chosen = create_provider(spec, {"base_url": url, "http_client": "aiohttp"})
    assert _transport_name(chosen) == "AiohttpTransport"
    no_vendor_env.delenv("LLM_COUNCIL_HTTP_CLIENT")
    chosen = create_provider(spec, {"base_url": url, "http_client": "httpx"})
    assert "Aiohttp" not in _transport_name(chosen)


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "anthropic:claude-sonnet-4-6"])
def test_without_aiohttp_the_default_is_httpx_and_calls_work(
    spec, fake_vendor, monkeypatch, no_vendor_env
):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    no_vendor_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-choice-0000")
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # as if it were not installed
    url = fake_vendor.url + ("/v1" if spec.startswith("openai") else "")
    provider = create_provider(spec, {"base_url": url})
    assert "Aiohttp" not in _transport_name(provider)
    if spec.startswith("openai"):
        fake_vendor.reply(openai_completion_body("plain", "gpt-4o"))
    else:
        fake_vendor.reply(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "plain"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )

    async def call() -> str:
        try:
            return (await provider.complete(CompletionRequest.from_prompt("hi"))).text
        finally:
            await provider.aclose()

    assert asyncio.run(call()) == "plain"


def test_an_sdk_without_a_usable_aiohttp_transport_defaults_to_httpx():
    class _MissingAioHttpClient:  # what a Stainless SDK puts there when its import failed
        pass

    assert default_http_client(SimpleNamespace(DefaultAioHttpClient=_MissingAioHttpClient)) == (
        "httpx"
    )
    assert default_http_client(SimpleNamespace()) == "httpx"  # older than the transport
    assert default_http_client(SimpleNamespace(DefaultAioHttpClient=dict)) == "aiohttp"


def test_aiohttp_keeps_its_connection_between_calls(fake_vendor, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    fake_vendor.reply(
        openai_completion_body("one", "gpt-4o"), openai_completion_body("two", "gpt-4o")
    )
    provider = create_provider(
        "openai:gpt-4o", {"base_url": f"{fake_vendor.url}/v1", "http_client": "aiohttp"}
    )

    async def two_calls() -> list[str | None]:
        try:
            request = CompletionRequest.from_prompt("hi")
            return [(await provider.complete(request)).text for _ in range(2)]
        finally:
            await provider.aclose()

    assert asyncio.run(two_calls()) == ["one", "two"]
    first, second = (request.client_port for request in fake_vendor.requests)
    assert first == second != 0  # one kept-alive connection


def test_an_unknown_client_is_one_line_naming_the_option_or_the_variable(no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    with pytest.raises(ConfigError) as caught:
        create_provider("openai:gpt-4o", {"http_client": "requests\n\x1b[2J"})
    message = str(caught.value)
    assert message.startswith("option 'http_client' for provider 'openai' must be one of")
    assert "httpx, aiohttp" in message and "\n" not in message and "\x1b" not in message
    no_vendor_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-choice-0000")
    no_vendor_env.setenv("LLM_COUNCIL_HTTP_CLIENT", "curl")
    with pytest.raises(ConfigError, match="^LLM_COUNCIL_HTTP_CLIENT must be one of"):
        create_provider("anthropic:claude-x", {})


def test_aiohttp_without_the_package_says_how_to_install_it(monkeypatch, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-choice-0000")
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError) as caught:
        create_provider("openai:gpt-4o", {"http_client": "aiohttp"})
    assert str(caught.value) == (
        "option 'http_client' for provider 'openai' is 'aiohttp' but aiohttp is not "
        "installed: pip install -e '.[aiohttp]' (in the llm-council checkout)"
    )


def test_google_has_no_http_client_option(no_vendor_env):
    no_vendor_env.setenv("GOOGLE_API_KEY", "test-google-choice-0000")
    with pytest.raises(ConfigError, match="unknown option 'http_client'"):
        create_provider("google:gemini-2.5-pro", {"http_client": "aiohttp"})
