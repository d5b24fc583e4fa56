"""The one provider interface: an async ``complete(request) -> Completion``.

A provider module only translates between these types and one vendor SDK, and classifies
the SDK's errors into :class:`~llm_council.errors.ProviderError` (retryable or not, with
the server's retry-after). Retries, timeouts and concurrency are the core's job
(:mod:`llm_council.providers.calling`), written once for all providers.
"""

from __future__ import annotations

import abc
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]

# What the council asks for; real providers ignore it, the simulated provider uses it to
# pick its behaviour (it still reads everything else from the prompt text, like a model).
Task = Literal["answer", "review", "synthesize", "pairwise_judge", "canary_score", "generic"]

# How a provider delivers a verdict (ADR 0018): "native" through the SDK's structured-output
# channel (a candidate's text cannot write into it), "nonce" as text tagged with the
# prompt's nonce, for servers without structured output.
StructuredOutputMode = Literal["native", "nonce"]
STRUCTURED_OUTPUT_MODES: tuple[StructuredOutputMode, ...] = ("native", "nonce")

# Where a completion's text came from: the model's free text, or the structured channel
# (the text is then the JSON object the server validated against the request's schema).
CompletionChannel = Literal["text", "structured"]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


class CompletionRequest(BaseModel):
    """One model call: messages plus sampling settings."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    system: str | None = None
    max_tokens: int = 2048
    temperature: float | None = None
    json_output: bool = False
    seed: int | None = None  # a sampling seed (OpenAI honours it; the simulated provider needs it)
    task: Task = "generic"
    # A JSON schema the reply must follow, sent through the SDK's native structured output
    # (OpenAI ``json_schema`` strict, an Anthropic forced tool call, Google
    # ``response_json_schema``); ``None`` for free text.
    response_schema: dict[str, Any] | None = None
    response_schema_name: str = "structured_reply"

    @classmethod
    def from_prompt(
        cls, prompt: str, *, system: str | None = None, **settings: object
    ) -> CompletionRequest:
        return cls(messages=(Message(role="user", content=prompt),), system=system, **settings)  # type: ignore[arg-type]

    @property
    def prompt_text(self) -> str:
        """The concatenated user messages (what the simulated provider reads)."""
        return "\n".join(m.content for m in self.messages if m.role == "user")


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int | None = None
    output_tokens: int | None = None

    @classmethod
    def from_counts(cls, input_tokens: object, output_tokens: object) -> Usage:
        """Token counts as an SDK reported them; anything but an int (None, a mock) is dropped."""

        def count(value: object) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(input_tokens=count(input_tokens), output_tokens=count(output_tokens))


class Completion(BaseModel):
    """A model's answer to one request."""

    model_config = ConfigDict(frozen=True)

    text: str
    model: str = Field(description="the model name the server reports having used")
    usage: Usage = Usage()
    finish_reason: str | None = None
    channel: CompletionChannel = "text"


_STRUCTURED_REFUSAL = re.compile(r"response_format|json_schema|structured|schema|tool", re.I)


def is_structured_output_refusal(status_code: int | None, message: str) -> bool:
    """True for a server's "structured output not supported" answer (400/422/501 naming it)."""
    return status_code in (400, 422, 501) and bool(_STRUCTURED_REFUSAL.search(message))


class Provider(abc.ABC):
    """A model behind one SDK. Subclasses implement :meth:`complete`; nothing else is required."""

    #: the spec prefix this provider is registered under, e.g. ``"openai"``
    provider_name: str = ""
    #: how this provider returns a ``response_schema`` reply; third-party providers that
    #: know nothing of schemas get the nonce-tagged text path
    structured_output: StructuredOutputMode = "nonce"

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name

    @property
    def spec(self) -> str:
        return f"{self.provider_name}:{self.model_name}"

    @abc.abstractmethod
    async def complete(self, request: CompletionRequest) -> Completion:
        """Send one request; raise :class:`ProviderError` (classified) on failure."""

    async def prepare(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Get ready to call (build or fetch the shared SDK client), outside any timeout."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Release network clients; the council calls it when a session ends."""

    def __repr__(self) -> str:  # never show credentials
        return f"<{type(self).__name__} {self.spec}>"
