"""Anthropic's Messages API through the official ``anthropic`` SDK.

Translation only, like :mod:`llm_council.providers.openai_sdk`: the SDK's retries are off
(``max_retries=0``, the core retries), its timeout is a generous backstop, and its
exceptions are classified by :mod:`llm_council.providers.error_mapping`.

The Messages API takes the system prompt as a separate field and has no schema-free JSON
mode (structured outputs need a JSON schema, which a request does not carry), so
``json_output`` adds one sentence to the system prompt instead; the council's parser
accepts fenced or raw JSON either way. The API takes no sampling seed, and ``temperature``
is no longer a parameter of the 2.x SDK's ``messages.create``, so neither is sent.

A request's ``response_schema`` (the stage-2 verdict) becomes a forced tool call
(``tools=[{"name", "input_schema"}]``, ``tool_choice={"type": "tool", "name"}``) and the
verdict is the ``tool_use`` block's ``input``, a channel the answer text cannot write into
(ADR 0018); ``structured_output="nonce"`` turns that off for gateways without tools.

Options: ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``base_url`` (a proxy or
gateway; the SDK also reads ``ANTHROPIC_BASE_URL``), ``timeout_s`` (default 600),
``structured_output`` (``"native"``, the default, or ``"nonce"``). The SDK client is
shared per process, event loop and model (:mod:`~llm_council.providers.client_pool`).

``http_client`` (``"httpx"``, the SDK's default, or ``"aiohttp"``, its documented aiohttp
transport from the ``aiohttp`` extra, which costs about half the CPU per call;
unset: ``LLM_COUNCIL_HTTP_CLIENT``, else aiohttp when installed, else httpx; ADRs 0034, 0035).
"""

from __future__ import annotations

import json
from typing import Any

from llm_council.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    StructuredOutputMode,
    Usage,
)
from llm_council.providers.client_pool import StainlessClientProvider
from llm_council.providers.error_mapping import (
    empty_answer_error,
    malformed_response_error,
    stainless_sdk_error,
)
from llm_council.providers.provider_setup import (
    http_client_choice,
    import_sdk,
    positive_timeout,
    reject_unknown_options,
    require_api_key,
    structured_output_mode,
)

DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_SDK_TIMEOUT_S = 600.0
JSON_ONLY_INSTRUCTION = "Reply with a single JSON object and nothing else."
_OPTIONS = ("base_url", "api_key_env", "timeout_s", "structured_output", "http_client")


class AnthropicProvider(StainlessClientProvider, Provider):
    """``anthropic:MODEL`` - Claude models."""

    provider_name = "anthropic"
    _client_class = "AsyncAnthropic"

    def __init__(self, model_name: str, **options: Any) -> None:
        super().__init__(model_name)
        reject_unknown_options(self.provider_name, model_name, options, _OPTIONS)
        self._sdk = import_sdk("anthropic", "anthropic", self.provider_name)
        key_env = str(options.get("api_key_env") or DEFAULT_API_KEY_ENV)
        api_key = require_api_key(self.provider_name, (key_env,))
        self._secrets = (api_key,)
        self.structured_output: StructuredOutputMode = structured_output_mode(
            self.provider_name, options.get("structured_output"), "native"
        )
        timeout_s = positive_timeout(
            self.provider_name, options.get("timeout_s", DEFAULT_SDK_TIMEOUT_S)
        )
        base_url = options.get("base_url") or None
        self._configure_client(
            "anthropic",
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            http_client=http_client_choice(
                self.provider_name, options.get("http_client"), self._sdk
            ),
        )

    def request_arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        # The API has no "system" role inside messages: fold such messages into ``system``.
        system_parts = [request.system] if request.system else []
        system_parts += [m.content for m in request.messages if m.role == "system"]
        if request.json_output and not self._sends_schema(request):
            system_parts.append(JSON_ONLY_INSTRUCTION)
        arguments: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": request.max_tokens,
            "messages": [
                {"role": m.role, "content": m.content}
                for m in request.messages
                if m.role != "system"
            ],
        }
        if system_parts:
            arguments["system"] = "\n\n".join(system_parts)
        if self._sends_schema(request):
            name = request.response_schema_name
            arguments["tools"] = [
                {
                    "name": name,
                    "description": "Record your reply in this exact structure.",
                    "input_schema": request.response_schema,
                }
            ]
            arguments["tool_choice"] = {"type": "tool", "name": name}
        return arguments

    async def complete(self, request: CompletionRequest) -> Completion:
        try:
            client = await self._client()
            response = await client.messages.create(**self.request_arguments(request))
        except Exception as error:
            classified = stainless_sdk_error(
                error, self._sdk, spec=self.spec, provider=self.provider_name, secrets=self._secrets
            )
            if classified is None:
                raise
            # ``from None``: the SDK's exception text may echo the key, keep it out of tracebacks
            raise classified from None
        if self._sends_schema(request):
            return self._tool_completion_from(response, request.response_schema_name)
        return self._completion_from(response)

    def _tool_completion_from(self, response: Any, tool_name: str) -> Completion:
        """The forced tool call's ``input`` as the completion's (JSON) text."""
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise malformed_response_error(
                self.spec, self.provider_name, "no 'content' in the body"
            )
        calls = [
            block
            for block in blocks
            if getattr(block, "type", None) == "tool_use"
            and getattr(block, "name", None) == tool_name
        ]
        stop_reason = getattr(response, "stop_reason", None)
        stop_reason = stop_reason if isinstance(stop_reason, str) else None
        if not calls:
            raise empty_answer_error(self.spec, self.provider_name, stop_reason)
        tool_input = getattr(calls[0], "input", None)
        if not isinstance(tool_input, dict):
            raise malformed_response_error(
                self.spec, self.provider_name, "the tool_use block's 'input' is not an object"
            )
        model = getattr(response, "model", None)
        usage = getattr(response, "usage", None)
        return Completion(
            text=json.dumps(tool_input),
            model=model if isinstance(model, str) and model else self.model_name,
            usage=Usage.from_counts(
                getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
            ),
            finish_reason=stop_reason,
            channel="structured",
        )

    def _completion_from(self, response: Any) -> Completion:
        # The SDK builds response objects without validation, so every field is checked here.
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise malformed_response_error(
                self.spec, self.provider_name, "no 'content' in the body"
            )
        # Only text blocks are the answer; thinking and tool blocks are not shown to the council.
        texts = [
            block.text
            for block in blocks
            if getattr(block, "type", None) == "text"
            and isinstance(getattr(block, "text", None), str)
        ]
        text = "".join(texts)
        stop_reason = getattr(response, "stop_reason", None)
        stop_reason = stop_reason if isinstance(stop_reason, str) else None
        if not text.strip():
            raise empty_answer_error(self.spec, self.provider_name, stop_reason)
        model = getattr(response, "model", None)
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=model if isinstance(model, str) and model else self.model_name,
            usage=Usage.from_counts(
                getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
            ),
            finish_reason=stop_reason,
        )

    async def aclose(self) -> None:
        """Nothing to release: the client is shared (``client_pool.close_shared_clients``)."""
