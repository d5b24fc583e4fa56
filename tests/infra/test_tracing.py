"""OpenTelemetry spans: tree, GenAI attributes, no text by default, errors, audit, exporters.

In-process tests send spans to the SDK's in-memory exporter through
``tracing.use_tracer_provider`` (the global provider can be set only once per process);
the CLI tests run ``llm-council ask`` in a subprocess with the standard ``OTEL_*``
variables, once printing to the console and once exporting OTLP/HTTP to a receiver on
127.0.0.1 that decodes the protobuf request.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from fakes.virtual_clock import run_on_stepped_clock
from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ConfigError, ProviderError
from llm_council.infra import tracing
from llm_council.infra.tracing_setup import configure_tracing_from_env
from llm_council.providers.base import CompletionRequest
from llm_council.providers.calling import RetryPolicy

QUERY = "canary-query-7f3a: how do I shard a queue?"
FAST_RETRY = RetryPolicy(max_attempts=3, timeout_s=5, initial_backoff_s=0.01, max_backoff_s=0.02)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    yield exporter
    tracing.use_tracer_provider(None)
    provider.shutdown()


def _by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    grouped: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        grouped.setdefault(span.name, []).append(span)
    return grouped


def _all_attribute_text(finished: tuple[ReadableSpan, ...]) -> str:
    parts = []
    for span in finished:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts += [json.dumps(dict(e.attributes or {}), default=str) for e in span.events]
        parts.append(span.status.description or "")
    return "\n".join(parts)


def _run(config: CouncilConfig | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("middleware", [])
    return asyncio.run(run_full_council(QUERY, config=config, seed=5, **kwargs))


def test_span_tree_and_genai_attributes(spans: InMemorySpanExporter) -> None:
    result = _run()  # the embedded simulated council: 5 members and a chairman
    finished = spans.get_finished_spans()
    grouped = _by_name(finished)
    (session,) = grouped["invoke_agent llm-council"]
    stages = {
        name: grouped[f"llm_council.{name}"][0] for name in ("answer", "review", "synthesize")
    }
    chats = [s for s in finished if s.name.startswith("chat ")]
    assert len(finished) == 1 + 3 + len(chats) and len(chats) == 5 + 5 + 1
    assert session.parent is None
    assert all(
        s.parent is not None and s.parent.span_id == session.context.span_id
        for s in stages.values()
    )
    stage_of = {s.context.span_id: name for name, s in stages.items()}
    assert sorted(stage_of[c.parent.span_id] for c in chats if c.parent) == sorted(
        ["answer"] * 5 + ["review"] * 5 + ["synthesize"]
    )
    assert {s.context.trace_id for s in finished} == {session.context.trace_id}

    attributes = dict(session.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "llm-council"
    assert attributes["gen_ai.conversation.id"] == result.metadata["session_id"]
    assert attributes["llm_council.seed"] == 5
    assert attributes["llm_council.degraded_count"] == 0
    assert attributes["llm_council.deadline_reached"] is False
    assert list(attributes["llm_council.members"]) == [
        m["name"] for m in result.metadata["members"]
    ]

    answer_chat = next(c for c in chats if stage_of[c.parent.span_id] == "answer")  # type: ignore[union-attr]
    chat = dict(answer_chat.attributes or {})
    assert answer_chat.kind is SpanKind.CLIENT
    assert answer_chat.name == f"chat {chat['gen_ai.request.model']}"
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == chat["gen_ai.system"] == "simulated"
    assert chat["gen_ai.request.max_tokens"] == 2048 and chat["gen_ai.output.type"] == "text"
    assert chat["llm_council.attempts"] == 1 and chat["llm_council.stage"] == "answer"
    member = chat["llm_council.member"]
    answer = next(a for a in result.stage1 if a.member == member)
    assert chat["gen_ai.response.model"] == answer.spec
    assert isinstance(chat["gen_ai.usage.input_tokens"], int)
    assert isinstance(chat["gen_ai.usage.output_tokens"], int)
    assert tuple(chat["gen_ai.response.finish_reasons"]) == ("stop",)
    review_chat = next(c for c in chats if stage_of[c.parent.span_id] == "review")  # type: ignore[union-attr]
    assert (review_chat.attributes or {})["gen_ai.output.type"] == "json"


def test_no_prompt_or_answer_text_unless_opted_in(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run()
    recorded = _all_attribute_text(spans.get_finished_spans())
    assert "canary-query-7f3a" not in recorded
    for answer in result.stage1:
        assert answer.text and answer.text[:60] not in recorded
    assert result.stage3.text[:60] not in recorded
    assert "gen_ai.input.messages" not in recorded and "gen_ai.output.messages" not in recorded

    spans.clear()
    monkeypatch.setenv("LLM_COUNCIL_OTEL_CAPTURE_CONTENT", "true")
    result = _run()
    chats = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    answer_chat = next(c for c in chats if (c.attributes or {})["llm_council.stage"] == "answer")
    messages = json.loads(str((answer_chat.attributes or {})["gen_ai.input.messages"]))
    assert messages == [{"role": "user", "parts": [{"type": "text", "content": QUERY}]}]
    output = json.loads(str((answer_chat.attributes or {})["gen_ai.output.messages"]))
    member = (answer_chat.attributes or {})["llm_council.member"]
    assert output[0]["parts"][0]["content"] == next(
        a.text for a in result.stage1 if a.member == member
    )
    assert "gen_ai.system_instructions" in (answer_chat.attributes or {})


def test_failed_and_retried_calls_are_recorded(
    spans: InMemorySpanExporter, scripted_provider: Any
) -> None:
    def refused(request: Any, n: int) -> str:
        raise ProviderError("fake:bad: HTTP error 401: no", provider="fake", status_code=401)

    def flaky(request: Any, n: int) -> str:
        if n == 1:
            raise ProviderError(
                "fake:flaky: HTTP 503", provider="fake", retryable=True, status_code=503
            )
        return "a flaky answer"

    review = '{"ranking": ["Response A", "Response B"]}'
    scripted_provider.scripts = {
        "bad": {"answer": refused},
        "flaky": {"answer": flaky, "review": lambda r, n: review},
        "good": {"answer": lambda r, n: "a good answer", "review": lambda r, n: review},
        "chair": {"synthesize": lambda r, n: "synthesis"},
    }
    config = CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"fake:{n}") for n in ("bad", "flaky", "good")),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
        retry=FAST_RETRY,
    )
    result = _run(config)
    finished = spans.get_finished_spans()
    answer_chats = {
        (s.attributes or {})["llm_council.member"]: s
        for s in finished
        if s.name.startswith("chat ") and (s.attributes or {})["llm_council.stage"] == "answer"
    }
    bad = answer_chats["bad"]
    assert bad.status.status_code is StatusCode.ERROR
    assert bad.status.description == result.stage1[0].error == "fake:bad: HTTP error 401: no"
    assert (bad.attributes or {})["error.type"] == "401"
    assert (bad.attributes or {})["llm_council.attempts"] == 1 and not bad.events

    flaky_span = answer_chats["flaky"]
    assert flaky_span.status.status_code is StatusCode.UNSET
    assert (flaky_span.attributes or {})["llm_council.attempts"] == 2
    (retry,) = flaky_span.events
    assert retry.name == "llm_council.retry"
    assert (retry.attributes or {})["llm_council.attempt"] == 1
    assert (retry.attributes or {})["error.type"] == "503"
    assert 0.0 < float((retry.attributes or {})["llm_council.retry.wait_s"]) <= 1.1

    (session,) = _by_name(finished)["invoke_agent llm-council"]
    assert (session.attributes or {})["llm_council.degraded_count"] == 1
    assert tuple((session.attributes or {})["llm_council.degraded_stages"]) == ("answer",)


def test_a_session_that_fails_marks_the_session_span(
    spans: InMemorySpanExporter, scripted_provider: Any
) -> None:
    scripted_provider.scripts = {}  # every call fails: "no script"
    config = CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"fake:{n}") for n in ("a", "b")),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
    )
    with pytest.raises(Exception, match="every council member failed"):
        _run(config)
    (session,) = _by_name(spans.get_finished_spans())["invoke_agent llm-council"]
    assert session.status.status_code is StatusCode.ERROR
    assert (session.attributes or {})["error.type"] == "CouncilError"


def test_bias_audit_results_are_attributes_of_the_session_span(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    result = asyncio.run(run_full_council(QUERY, seed=5, middleware=None))
    audit = result.metadata["bias_audit"]
    (session,) = _by_name(spans.get_finished_spans())["invoke_agent llm-council"]
    attributes = dict(session.attributes or {})
    assert attributes["llm_council.bias_audit.overall_bias_risk"] == audit["overall_bias_risk"]
    assert list(attributes["llm_council.bias_audit.flags_raised"]) == audit["flags_raised"]
    assert attributes["llm_council.bias_audit.records_written"] == audit["records_written"] > 0
    nested = [k for k, v in audit.items() if isinstance(v, dict)]
    assert nested and not any(f"llm_council.bias_audit.{k}" in attributes for k in nested)


def test_tracing_is_off_without_an_sdk_provider_or_without_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tracing.use_tracer_provider(None)
    assert tracing._tracer() is None  # only the API's proxy provider is installed
    with tracing.chat_span("openai", "m", CompletionRequest.from_prompt("q"), {}) as span:
        assert span.recording is False
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # "not installed"
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    monkeypatch.setattr(tracing, "_trace_api", None)  # forget the module imported earlier
    assert tracing._tracer() is None and tracing._trace_api is False
    assert _run().metadata["degraded"] == []


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "unknown exporter 'jaeger'"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "only 'http/protobuf' is supported (got 'grpc')",
        ),
    ],
)
def test_bad_otel_settings_are_one_line_config_errors(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        configure_tracing_from_env(environ)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"},
    ],
)
def test_nothing_is_installed_unless_an_exporter_is_asked_for(environ: dict[str, str]) -> None:
    assert configure_tracing_from_env(environ) is None


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from llm_council.cli.app import main; main(sys.argv[1:])"
    inherited = {  # the developer's own OTel settings must not redirect the test's spans
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LLM_COUNCIL_OTEL_"))
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_prints_spans_to_stderr_with_the_console_exporter() -> None:
    done = _cli(
        "ask",
        QUERY,
        "--json",
        "--seed",
        "2",
        "--log-level",
        "error",
        OTEL_TRACES_EXPORTER="console",
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # stdout is still the result alone
    assert done.stderr.count('"name": "chat ') == 11
    assert '"name": "invoke_agent llm-council"' in done.stderr
    assert '"service.name": "llm-council"' in done.stderr
    assert "canary-query-7f3a" not in done.stderr


class _OtlpReceiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1: decodes each export request."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                message = ExportTraceServiceRequest()
                message.ParseFromString(body)
                receiver.requests.append(message)
                receiver.paths.append(f"{self.path} {self.headers['Content-Type']}")
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> _OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_cli_exports_otlp_http_to_the_collector() -> None:
    with _OtlpReceiver() as receiver:
        done = _cli(
            "ask",
            QUERY,
            "--seed",
            "2",
            "--log-level",
            "error",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_SERVICE_NAME="council-under-test",
            LLM_COUNCIL_BIAS_AUDIT="true",
        )
    assert done.returncode == 0, done.stderr
    assert receiver.requests and set(receiver.paths) == {"/v1/traces application/x-protobuf"}
    received = []
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert resource["service.name"] == "council-under-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "llm_council"
                received += list(scope_spans.spans)
    names = sorted(span.name for span in received)
    assert names.count("invoke_agent llm-council") == 1
    assert [n for n in names if n.startswith("llm_council.")] == [
        "llm_council.answer",
        "llm_council.review",
        "llm_council.synthesize",
    ]
    assert sum(n.startswith("chat ") for n in names) == 11
    session = next(s for s in received if s.name == "invoke_agent llm-council")
    attributes = {a.key: a.value for a in session.attributes}
    assert attributes["gen_ai.operation.name"].string_value == "invoke_agent"
    assert attributes["llm_council.bias_audit.overall_bias_risk"].string_value in {
        "not_tested",
        "low",
        "medium",
        "high",
    }
    assert len({span.trace_id for span in received}) == 1
    assert b"canary-query-7f3a" not in b"".join(r.SerializeToString() for r in receiver.requests)


def test_a_session_nothing_could_test_is_not_tested_on_the_span(
    spans: InMemorySpanExporter, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2-member council: each reviewer scores one other answer, so no reviewer or answer
    # effect is identified and no risk test runs; the attribute must not say "low" (ADR
    # 0032). (A complete 3-member council is tested since ADR 0045.)
    from llm_council.bias_audit.middleware import BiasAuditMiddleware

    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "records.jsonl"))
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(2)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    result = asyncio.run(
        run_full_council("q", config=config, seed=7, middleware=[BiasAuditMiddleware()])
    )
    audit = result.metadata["bias_audit"]
    assert audit["overall_bias_risk"] == "not_tested" and audit["risk_tests_run"] == []
    (session,) = _by_name(spans.get_finished_spans())["invoke_agent llm-council"]
    attributes = dict(session.attributes or {})
    assert attributes["llm_council.bias_audit.overall_bias_risk"] == "not_tested"


def test_a_call_cut_at_the_session_deadline_is_an_error_span(spans: InMemorySpanExporter) -> None:
    from llm_council.providers.base import Completion, Provider
    from llm_council.providers.registry import register_provider, unregister_provider

    class Stalled(Provider):
        provider_name = "stalled"

        async def complete(self, request: CompletionRequest) -> Completion:
            # the chairman's hour-long stall, on a loop clock moved past the 30 s deadline at
            # once (tests/fakes/virtual_clock.py): the members had real time to spare (a
            # 0.4 s deadline gave them 0.2 s, which a loaded machine could miss), and the cut
            # does not race the machine
            asyncio.get_running_loop().advance(30.0)  # type: ignore[attr-defined]
            await asyncio.sleep(3600)
            raise AssertionError("unreachable")

    register_provider("stalled", lambda name, options: Stalled(name))
    try:
        config = CouncilConfig(
            members=(
                CouncilMember(name="a", spec="simulated:balanced"),
                CouncilMember(name="b", spec="simulated:harsh"),
            ),
            chairman=CouncilMember(name="stuck", spec="stalled:stuck"),
            session_deadline_s=30.0,
        )
        run_on_stepped_clock(run_full_council(QUERY, config=config, seed=5, middleware=[]))
    finally:
        unregister_provider("stalled")
    finished = spans.get_finished_spans()
    (stuck,) = [s for s in finished if s.name == "chat stuck"]
    assert stuck.status.status_code is StatusCode.ERROR
    assert (stuck.attributes or {})["error.type"] == "session_deadline"
    assert "session deadline of 30 s reached" in (stuck.status.description or "")
    (session,) = _by_name(finished)["invoke_agent llm-council"]
    assert (session.attributes or {})["llm_council.deadline_reached"] is True


def test_collector_credentials_are_redacted_like_keys() -> None:
    from llm_council.infra.log_setup import redact
    from llm_council.infra.tracing_setup import _register_header_secrets

    token = "collector-token-5e1f9a"
    # (configure_tracing_from_env would also set the process-wide provider: not in a test)
    _register_header_secrets(
        {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{token},x-team=production"}
    )
    assert redact(f"export failed: Bearer {token}") == "export failed: Bearer [redacted]"
    assert redact(f"token {token} rejected") == "token [redacted] rejected"
    assert redact("team production") == "team production"  # not a credential header
    # the scheme is not a secret: ordinary words stay readable in every log line
    assert redact("client used Bearer auth") == "client used Bearer auth"
