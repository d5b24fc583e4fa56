"""OpenTelemetry spans for council sessions, after the GenAI semantic conventions.

Span tree of one session (attribute names from the OpenTelemetry GenAI conventions,
``gen_ai.*``, plus our own under ``llm_council.*``)::

    invoke_agent llm-council           gen_ai.operation.name=invoke_agent, session attributes,
    |                                  middleware results (llm_council.bias_audit.*)
    +- llm_council.answer              one span per stage
    |  +- chat MODEL                   one per logical model call (SpanKind.CLIENT):
    |                                  gen_ai.request.*, gen_ai.response.*, gen_ai.usage.*,
    |                                  error.type; each retried attempt is an event
    +- llm_council.review ...
    +- llm_council.synthesize ...

Off by default: spans are made only when a recording OpenTelemetry SDK tracer provider is
installed (by the application, or by the CLI from the standard ``OTEL_*`` variables, see
:mod:`llm_council.infra.tracing_setup`). Without the ``opentelemetry`` package, or with only
the API's default proxy provider, every helper here returns a shared no-op recorder.
Prompt and answer text is never recorded unless ``LLM_COUNCIL_OTEL_CAPTURE_CONTENT`` (or
OpenTelemetry's ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``) is true.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from llm_council.errors import ProviderError, SessionDeadlineError
from llm_council.infra.log_setup import redact
from llm_council.providers.base import Completion, CompletionRequest

CAPTURE_CONTENT_VARIABLES = (
    "LLM_COUNCIL_OTEL_CAPTURE_CONTENT",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)
AGENT_NAME = "llm-council"
# gen_ai.provider.name well-known values for our provider prefixes
PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic", "google": "gcp.gemini"}
# middleware results copied to the session span: scalars (strings cut to MAX_STRING_ATTRIBUTE),
# and lists of scalars up to MAX_LIST_ATTRIBUTE items
MAX_LIST_ATTRIBUTE = 64
MAX_STRING_ATTRIBUTE = 512

_override_provider: Any = None
_trace_api: Any = None  # the opentelemetry.trace module once imported; False if missing
_tracer_cache: tuple[Any, Any] = (None, None)  # (provider, its llm_council tracer)


def use_tracer_provider(provider: Any) -> None:
    """Send llm-council's spans to ``provider`` rather than the global one (None: global).

    For tests and for applications that keep several tracer providers.
    """
    global _override_provider
    _override_provider = provider


def _tracer() -> Any | None:
    """The tracer to use, or None when nothing would record (the cheap, common case).

    Asked at every span, so an SDK provider installed after import is picked up.
    """
    global _trace_api, _tracer_cache
    provider = _override_provider
    if provider is None:
        if _trace_api is None:
            try:
                _trace_api = importlib.import_module("opentelemetry.trace")
            except ImportError:
                _trace_api = False
        if _trace_api is False:
            return None
        provider = _trace_api.get_tracer_provider()
        if isinstance(provider, _trace_api.ProxyTracerProvider | _trace_api.NoOpTracerProvider):
            return None
    if _tracer_cache[0] is not provider:
        _tracer_cache = (provider, provider.get_tracer("llm_council"))
    return _tracer_cache[1]


def capture_content(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(
        env.get(name, "").strip().lower() in {"true", "1", "yes"}
        for name in CAPTURE_CONTENT_VARIABLES
    )


def _attribute_value(value: Any, max_chars: int | None = None) -> Any | None:
    """``value`` if OpenTelemetry can carry it as an attribute, else None; strings are cut
    to ``max_chars`` and lists longer than :data:`MAX_LIST_ATTRIBUTE` dropped."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if max_chars is None else value[:max_chars]
    if isinstance(value, list | tuple) and len(value) <= MAX_LIST_ATTRIBUTE:
        items = [_attribute_value(item, max_chars) for item in value]
        kinds = {type(item) for item in items}
        if items and None not in items and len(kinds) == 1:
            return items
        if not items:
            return []
    return None


def error_type(error: BaseException) -> str:
    """A low-cardinality ``error.type``: the HTTP status, ``timeout``, ``session_deadline``,
    or the exception class."""
    if isinstance(error, SessionDeadlineError):
        return "session_deadline"
    if isinstance(error, ProviderError):
        if error.status_code is not None:
            return str(error.status_code)
        if isinstance(error.__cause__, TimeoutError):
            return "timeout"
    return type(error).__name__


class SpanRecorder:
    """A span, or nothing: the council writes to it without asking whether tracing is on."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    @property
    def recording(self) -> bool:
        return self._span is not None

    def set(self, attributes: Mapping[str, Any], max_chars: int | None = None) -> None:
        if self._span is None:
            return
        for name, value in attributes.items():
            usable = _attribute_value(value, max_chars)
            if usable is not None:
                self._span.set_attribute(name, usable)

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        if self._span is not None:
            self._span.add_event(
                name, {k: v for k, v in attributes.items() if _attribute_value(v) is not None}
            )

    def fail(self, error: BaseException) -> None:
        """Mark the span failed: ``error.type`` and a redacted description, no traceback."""
        if self._span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", error_type(error))
        self._span.set_status(Status(StatusCode.ERROR, redact(str(error))))

    def add_middleware_results(self, results: Mapping[str, Any]) -> None:
        """``llm_council.<middleware>.<key>`` for each scalar (or list of scalars) a middleware
        returned, e.g. ``llm_council.bias_audit.overall_bias_risk``; nested values are left
        out (they are in the session metadata)."""
        for middleware, contribution in results.items():
            if isinstance(contribution, Mapping):
                self.set(
                    {f"llm_council.{middleware}.{k}": v for k, v in contribution.items()},
                    max_chars=MAX_STRING_ATTRIBUTE,
                )


_NO_SPAN = SpanRecorder()


@contextmanager
def _span(
    tracer: Any, name: str, attributes: Mapping[str, Any], kind: str = "INTERNAL"
) -> Iterator[SpanRecorder]:
    from opentelemetry.trace import SpanKind

    with tracer.start_as_current_span(
        name, kind=getattr(SpanKind, kind), record_exception=False, set_status_on_exception=False
    ) as span:
        recorder = SpanRecorder(span)
        recorder.set(attributes)
        try:
            yield recorder
        except BaseException as error:
            recorder.fail(error)
            raise


def session_span(
    session_id: str, attributes: Mapping[str, Any]
) -> AbstractContextManager[SpanRecorder]:
    """The ``invoke_agent`` span around a whole session (context manager -> SpanRecorder)."""
    tracer = _tracer()
    if tracer is None:
        return nullcontext(_NO_SPAN)
    return _span(
        tracer,
        f"invoke_agent {AGENT_NAME}",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.conversation.id": session_id,
            "llm_council.session_id": session_id,
            **attributes,
        },
    )


def stage_span(stage: str) -> AbstractContextManager[SpanRecorder]:
    """One stage of a session: ``llm_council.answer``, ``.review`` or ``.synthesize``."""
    tracer = _tracer()
    if tracer is None:
        return nullcontext(_NO_SPAN)
    return _span(tracer, f"llm_council.{stage}", {"llm_council.stage": stage})


def chat_span(
    provider_name: str,
    model: str,
    request: CompletionRequest,
    attributes: Mapping[str, Any],
) -> AbstractContextManager[SpanRecorder]:
    """A ``chat MODEL`` client span for one logical model call (all its attempts)."""
    tracer = _tracer()
    if tracer is None:
        return nullcontext(_NO_SPAN)
    system_name = PROVIDER_NAMES.get(provider_name, provider_name)
    values: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": system_name,
        "gen_ai.system": system_name,  # the name before semantic conventions 1.37
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": request.max_tokens,
        "gen_ai.output.type": (
            "json" if request.json_output or request.response_schema is not None else "text"
        ),
        **attributes,
    }
    if request.temperature is not None:
        values["gen_ai.request.temperature"] = request.temperature
    if request.seed is not None:
        values["gen_ai.request.seed"] = request.seed
    if capture_content():
        if request.system:
            values["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": request.system}]
            )
        values["gen_ai.input.messages"] = json.dumps(
            [
                {"role": m.role, "parts": [{"type": "text", "content": m.content}]}
                for m in request.messages
            ]
        )
    return _span(tracer, f"chat {model}", values, kind="CLIENT")


def record_completion(span: SpanRecorder, completion: Completion, attempts: int) -> None:
    """Response model, finish reason, token usage (and, opted in, the answer) on a chat span."""
    if not span.recording:
        return
    values: dict[str, Any] = {
        "gen_ai.response.model": completion.model,
        "llm_council.attempts": attempts,
    }
    if completion.finish_reason:
        values["gen_ai.response.finish_reasons"] = [completion.finish_reason]
    if completion.usage.input_tokens is not None:
        values["gen_ai.usage.input_tokens"] = completion.usage.input_tokens
    if completion.usage.output_tokens is not None:
        values["gen_ai.usage.output_tokens"] = completion.usage.output_tokens
    if capture_content():
        values["gen_ai.output.messages"] = json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": completion.text}],
                    "finish_reason": completion.finish_reason or "stop",
                }
            ]
        )
    span.set(values)


def record_failure(span: SpanRecorder, error: BaseException, attempts: int) -> None:
    span.set({"llm_council.attempts": attempts})
    span.fail(error)


def record_retry(span: SpanRecorder, attempt: int, error: BaseException, wait_s: float) -> None:
    """An attempt failed and will be retried after ``wait_s``: an event on the chat span."""
    span.event(
        "llm_council.retry",
        {
            "llm_council.attempt": attempt,
            "error.type": error_type(error),
            "llm_council.retry.wait_s": round(wait_s, 4),
        },
    )
