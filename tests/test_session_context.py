"""The stage clock: one duration, one span and one ``<stage>_done`` line per stage (ADR 0069)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from llm_council.infra import tracing
from llm_council.session_context import SessionContext, StageClock


class _FakeLog:
    """A structlog-like logger that keeps ``(event, fields)`` in call order."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    yield exporter
    tracing.use_tracer_provider(None)
    provider.shutdown()


def test_each_stage_gets_its_duration_in_order_and_one_done_line() -> None:
    log = _FakeLog()
    clock = StageClock(log)
    with clock.stage("stage1") as stage:
        stage.log(answered=3, failed=1)
    with clock.stage("debias"):  # no fields given: timed, not logged
        pass
    assert list(clock.durations) == ["stage1", "debias"]
    assert all(seconds >= 0 for seconds in clock.durations.values())
    # the fields as given, then the duration rounded to milliseconds (as the council logged)
    assert log.lines == [
        (
            "stage1_done",
            {"answered": 3, "failed": 1, "duration_s": round(clock.durations["stage1"], 3)},
        )
    ]
    assert list(log.lines[0][1]) == ["answered", "failed", "duration_s"]


def test_a_stage_that_raises_records_no_duration_and_logs_nothing() -> None:
    log = _FakeLog()
    clock = StageClock(log)
    with pytest.raises(RuntimeError, match="provider down"), clock.stage("stage2") as stage:
        stage.log(parsed=0)
        raise RuntimeError("provider down")
    assert clock.durations == {}
    assert log.lines == []


def test_the_stage_span_carries_the_attributes_and_the_error(
    spans: InMemorySpanExporter,
) -> None:
    clock = StageClock(_FakeLog())
    with clock.stage("stage3", span="synthesize") as stage:
        stage.set({"llm_council.fallback": False})
    with pytest.raises(ValueError), clock.stage("stage1", span="answer"):
        raise ValueError("bad answer")
    finished = {span.name: span for span in spans.get_finished_spans()}
    assert set(finished) == {"llm_council.synthesize", "llm_council.answer"}
    synthesize = finished["llm_council.synthesize"]
    assert synthesize.attributes is not None
    assert synthesize.attributes["llm_council.stage"] == "synthesize"
    assert synthesize.attributes["llm_council.fallback"] is False
    assert synthesize.status.status_code is not StatusCode.ERROR
    answer = finished["llm_council.answer"]
    assert answer.status.status_code is StatusCode.ERROR
    assert answer.attributes is not None and answer.attributes["error.type"] == "ValueError"
    assert list(clock.durations) == ["stage3"]  # the failed stage has no duration


def test_a_stage_without_a_span_ignores_attributes() -> None:
    clock = StageClock(_FakeLog())
    with clock.stage("debias") as stage:
        assert stage.trace is None
        stage.set({"llm_council.anything": 1})  # no span: nothing to set, no error


def test_the_session_context_is_frozen() -> None:
    assert dataclasses.is_dataclass(SessionContext)
    params = SessionContext.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen
