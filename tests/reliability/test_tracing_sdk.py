"""Chat spans through the real OpenAI SDK against the loopback fake: usage, retries, errors.

The SDK parses the fake's ``usage`` (11 prompt, 3 completion tokens per reply), so the
span's ``gen_ai.usage.*`` come from the real response path; a 429 with ``retry-after``
then a 200 is one span with one retry event; a 401 is an error span whose description is
the redacted message that also went to ``metadata["degraded"]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from llm_council import run_full_council
from llm_council.infra import tracing


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    yield exporter
    tracing.use_tracer_provider(None)
    provider.shutdown()


def test_chat_spans_through_the_openai_sdk(
    spans: InMemorySpanExporter, openai_fake: Any, openai_council: Any
) -> None:
    openai_fake.script("m1", {"status": 429, "headers": {"retry-after": "0.05"}, "body": {}})
    leaky = {"error": {"message": "bad key", "type": "invalid_request_error", "code": None}}
    openai_fake.script("m3", {"status": 401, "body": leaky})
    result = asyncio.run(
        run_full_council("q", config=openai_council("m1", "m2", "m3"), seed=1, middleware=[])
    )
    answers = {
        (s.attributes or {})["llm_council.member"]: s
        for s in spans.get_finished_spans()
        if s.name.startswith("chat ") and (s.attributes or {})["llm_council.stage"] == "answer"
    }
    m1, m2, m3 = answers["m1"], answers["m2"], answers["m3"]
    for span in (m1, m2):
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.response.model"] == attributes["gen_ai.request.model"]
        assert attributes["gen_ai.usage.input_tokens"] == 11
        assert attributes["gen_ai.usage.output_tokens"] == 3
        assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert (m1.attributes or {})["llm_council.attempts"] == 2
    (retry,) = m1.events
    assert (retry.attributes or {})["error.type"] == "429"
    assert (retry.attributes or {})["llm_council.retry.wait_s"] == 0.05
    assert m3.status.status_code is StatusCode.ERROR
    assert (m3.attributes or {})["error.type"] == "401"
    degraded = result.metadata["degraded"]
    assert [(f["stage"], f["member"]) for f in degraded] == [("answer", "m3")]
    assert m3.status.description == degraded[0]["error"]
    # requests the fake saw = attempts on the spans (answer + review + synthesis)
    chats = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    for model in ("m1", "m2", "m3", "chair"):
        attempts = sum(
            int((s.attributes or {})["llm_council.attempts"])  # type: ignore[arg-type]
            for s in chats
            if (s.attributes or {})["gen_ai.request.model"] == model
        )
        assert attempts == openai_fake.requests[model]
    session = next(s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert (session.attributes or {})["gen_ai.usage.input_tokens"] == 11 * (2 + 2 + 1)
