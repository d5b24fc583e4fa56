"""Gemini through the official ``google-genai`` SDK (``client.aio.models.generate_content``).

Translation only, like :mod:`llm_council.providers.openai_sdk`. The SDK's retries are off
explicitly (``HttpRetryOptions(attempts=1)``; the core retries), its timeout is a generous
backstop, and Vertex AI is never picked up from the environment by accident.

google-genai raises ``errors.APIError`` (with ``code`` and the ``httpx``/``httpx2``
response) for HTTP errors but lets transport exceptions through unwrapped; both are
classified by :mod:`llm_council.providers.error_mapping`. A 429 from Google usually
carries its wait in the body (``google.rpc.RetryInfo.retryDelay``) rather than in a
``retry-after`` header, so both are read.

A request's ``response_schema`` (the stage-2 verdict) is sent as
``response_mime_type="application/json"`` with ``response_json_schema`` (the JSON-schema
form of Gemini's structured output), so the reply is the verdict object and nothing else
(ADR 0018); ``structured_output="nonce"`` turns that off for gateways without it.

Options: ``api_key_env`` (default: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY``),
``base_url`` (a proxy or gateway), ``timeout_s`` (SDK backstop, default 600),
``structured_output`` (``"native"``, the default, or ``"nonce"``). The SDK client is
shared per process and event loop (:mod:`~llm_council.providers.client_pool`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

from llm_council.errors import ProviderError
from llm_council.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    StructuredOutputMode,
    Usage,
)
from llm_council.providers.client_pool import PooledClientProvider, secret_digest
from llm_council.providers.error_mapping import (
    empty_answer_error,
    http_stack_error,
    malformed_response_error,
    parse_duration_seconds,
    server_message_from_body,
    status_error,
)
from llm_council.providers.provider_setup import (
    import_sdk,
    positive_timeout,
    reject_unknown_options,
    require_api_key,
    structured_output_mode,
)

DEFAULT_API_KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
DEFAULT_SDK_TIMEOUT_S = 600.0
_OPTIONS = ("base_url", "api_key_env", "timeout_s", "structured_output")
_RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"


class GoogleProvider(PooledClientProvider, Provider):
    """``google:MODEL`` - Gemini models through the Gemini Developer API."""

    provider_name = "google"

    def __init__(self, model_name: str, **options: Any) -> None:
        super().__init__(model_name)
        reject_unknown_options(self.provider_name, model_name, options, _OPTIONS)
        genai = import_sdk("google.genai", "google-genai", self.provider_name)
        self._errors = import_sdk("google.genai.errors", "google-genai", self.provider_name)
        key_envs = (
            (str(options["api_key_env"]),) if options.get("api_key_env") else DEFAULT_API_KEY_ENVS
        )
        api_key = require_api_key(self.provider_name, key_envs)
        self._secrets = (api_key,)
        self.structured_output: StructuredOutputMode = structured_output_mode(
            self.provider_name, options.get("structured_output"), "native"
        )
        timeout_s = positive_timeout(
            self.provider_name, options.get("timeout_s", DEFAULT_SDK_TIMEOUT_S)
        )
        base_url = options.get("base_url") or None
        self._client_key = ("google", base_url, secret_digest(api_key), timeout_s)

        def build() -> Any:
            http_options = genai.types.HttpOptions(
                base_url=base_url,
                timeout=int(timeout_s * 1000),  # the SDK takes milliseconds
                retry_options=genai.types.HttpRetryOptions(attempts=1),
            )
            return genai.Client(api_key=api_key, vertexai=False, http_options=http_options)

        self._build_client = build  # type: ignore[method-assign]

    @staticmethod
    async def _close_client(client: Any) -> None:
        """The genai client holds a sync and an async transport: close both."""
        await client.aio.aclose()
        client.close()

    def request_arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of ``generate_content`` for ``request`` (plain dicts)."""
        system_parts = [request.system] if request.system else []
        system_parts += [m.content for m in request.messages if m.role == "system"]
        config: dict[str, Any] = {"max_output_tokens": request.max_tokens}
        if system_parts:
            config["system_instruction"] = "\n\n".join(system_parts)
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.seed is not None:
            config["seed"] = request.seed
        if request.json_output or self._sends_schema(request):
            config["response_mime_type"] = "application/json"
        if self._sends_schema(request):
            config["response_json_schema"] = request.response_schema
        contents = [
            {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
            for m in request.messages
            if m.role != "system"
        ]
        return {"model": self.model_name, "contents": contents, "config": config}

    async def complete(self, request: CompletionRequest) -> Completion:
        try:
            client = await self._client()
            response = await client.aio.models.generate_content(**self.request_arguments(request))
        except Exception as error:
            classified = self._classify(error)
            if classified is None:
                raise
            # ``from None``: the SDK's exception text may echo the key, keep it out of tracebacks
            raise classified from None
        completion = self._completion_from(response)
        if self._sends_schema(request):
            return completion.model_copy(update={"channel": "structured"})
        return completion

    def _classify(self, error: Exception) -> ProviderError | None:
        if isinstance(error, self._errors.APIError):
            response = getattr(error, "response", None)
            headers = getattr(response, "headers", None)
            return status_error(
                self.spec,
                self.provider_name,
                error.code if isinstance(error.code, int) else 0,
                dict(headers) if headers is not None else {},
                server_message_from_body(error.details, str(error.message or error.status or "")),
                secrets=self._secrets,
                retry_after=_retry_delay_from_details(error.details),
            )
        if isinstance(error, json.JSONDecodeError):  # a 200 body that is not JSON
            return malformed_response_error(
                self.spec,
                self.provider_name,
                f"body is not valid JSON ({error})",
                secrets=self._secrets,
            )
        return http_stack_error(
            error, spec=self.spec, provider=self.provider_name, secrets=self._secrets
        )

    def _completion_from(self, response: Any) -> Completion:
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            block_reason = _enum_text(getattr(feedback, "block_reason", None))
            if block_reason is not None:  # the prompt itself was blocked: no candidate at all
                raise empty_answer_error(self.spec, self.provider_name, f"blocked:{block_reason}")
            raise malformed_response_error(
                self.spec, self.provider_name, "no 'candidates' in the body"
            )
        candidate = candidates[0]
        finish_reason = _enum_text(getattr(candidate, "finish_reason", None))
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        # Thought summaries are not part of the answer the council reads.
        text = "".join(
            part.text
            for part in parts
            if isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", False)
        )
        if not text.strip():
            raise empty_answer_error(self.spec, self.provider_name, finish_reason)
        model = getattr(response, "model_version", None)
        usage = getattr(response, "usage_metadata", None)
        return Completion(
            text=text,
            model=model if isinstance(model, str) and model else self.model_name,
            usage=Usage.from_counts(
                getattr(usage, "prompt_token_count", None),
                getattr(usage, "candidates_token_count", None),
            ),
            finish_reason=finish_reason,
        )

    async def aclose(self) -> None:
        """Nothing to release: the client is shared (``client_pool.close_shared_clients``)."""


def _retry_delay_from_details(details: object) -> float | None:
    """Google's ``RetryInfo.retryDelay`` (e.g. ``"13s"``) from an error body, in seconds."""
    error = details.get("error") if isinstance(details, Mapping) else None
    entries = error.get("details") if isinstance(error, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and entry.get("@type") == _RETRY_INFO_TYPE:
            delay = entry.get("retryDelay")
            return parse_duration_seconds(delay if isinstance(delay, str) else None)
    return None


def _enum_text(value: object) -> str | None:
    if isinstance(value, enum.Enum):
        return str(value.value)
    return value if isinstance(value, str) else None
