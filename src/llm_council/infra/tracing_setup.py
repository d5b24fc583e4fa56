"""Install an OpenTelemetry SDK tracer provider from the standard ``OTEL_*`` variables.

For the CLI (an application); a library user configures OpenTelemetry in their own
application and llm-council's spans go to whatever provider is installed there.

``OTEL_TRACES_EXPORTER``: a comma-separated list of ``console`` (spans as JSON on stderr,
so ``ask --json`` keeps stdout parseable), ``otlp`` (OTLP over HTTP/protobuf to
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``, read by the
exporter itself) or ``none``. Unset or ``none``, or ``OTEL_SDK_DISABLED=true``: nothing is
installed and tracing stays off. ``OTEL_SERVICE_NAME`` names the service
(default ``llm-council``); ``OTEL_RESOURCE_ATTRIBUTES`` is honoured by the SDK.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.infra.install_hints import extra_install_hint
from llm_council.infra.log_setup import register_secret

EXPORTERS = ("console", "otlp", "none")
DEFAULT_SERVICE_NAME = "llm-council"
_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|password|signature", re.IGNORECASE)


def _requested_exporters(environ: Mapping[str, str]) -> list[str]:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [n for n in names if n]
    for name in names:
        if name not in EXPORTERS:
            raise ConfigError(
                f"OTEL_TRACES_EXPORTER: unknown exporter {name!r}; known: {', '.join(EXPORTERS)}"
            )
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if "otlp" in names and protocol != "http/protobuf":
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL: only 'http/protobuf' is supported (got {protocol!r})"
        )
    return [n for n in names if n != "none"]


def _register_header_secrets(environ: Mapping[str, str]) -> None:
    """Collector credentials (``OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer t,..."``)
    are redacted from logs and errors like API keys (headers whose name says credential)."""
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for pair in environ.get(variable, "").split(","):
            name, _, value = pair.partition("=")
            if _CREDENTIAL_HEADER.search(unquote(name)):
                # register the credential, not its scheme: "Bearer tok" registered whole
                # made the redactor's word pieces blank every "Bearer" in every log line
                words = unquote(value).split()
                if words:
                    register_secret(words[-1])


def _span_processor(name: str) -> Any:
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    if name == "console":
        return SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr))
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return BatchSpanProcessor(OTLPSpanExporter())


def configure_tracing_from_env(environ: Mapping[str, str]) -> Callable[[], None] | None:
    """Install a tracer provider as ``OTEL_TRACES_EXPORTER`` asks; return its shutdown
    (which flushes pending spans), or None when tracing stays off."""
    exporters = _requested_exporters(environ)
    if not exporters:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as error:
        raise MissingDependencyError(
            "OTEL_TRACES_EXPORTER is set but the OpenTelemetry SDK is not installed: "
            + extra_install_hint("otel")
        ) from error
    _register_header_secrets(environ)
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    try:
        for name in exporters:
            provider.add_span_processor(_span_processor(name))
    except ImportError as error:
        raise MissingDependencyError(
            "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: " + extra_install_hint("otel")
        ) from error
    trace.set_tracer_provider(provider)
    return provider.shutdown
