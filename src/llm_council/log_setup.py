"""structlog configuration: console lines by default, JSON lines with a flag, to stderr.

A redaction processor replaces the value of every secret environment variable (API keys,
the hash secret) wherever it appears in a log event, as a last line of defence: no code
path should log a secret in the first place.

The vendor SDKs log through the standard ``logging`` module (google-genai warns on stderr
when both Google key variables are set, for instance). Those records are sent through
the same redaction and renderer, so ``--log-json`` output stays JSON lines and an SDK
message cannot bypass the redaction; SDK loggers are kept at WARNING or above because
their debug output includes whole requests.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "LLM_COUNCIL_HASH_SECRET",
)
REDACTED = "[redacted]"


def secret_values() -> list[str]:
    """The secret values currently set (only non-trivial ones, to avoid redacting noise)."""
    return [v for name in SECRET_ENV_VARS if len(v := os.environ.get(name, "")) >= 6]


def redact(text: str, secrets: list[str] | None = None) -> str:
    for secret in secret_values() if secrets is None else secrets:
        text = text.replace(secret, REDACTED)
    return text


def _redact_processor(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    secrets = secret_values()
    if not secrets:
        return event_dict
    for key, value in list(event_dict.items()):
        if isinstance(value, str):
            event_dict[key] = redact(value, secrets)
        elif value is not None and not isinstance(value, int | float | bool):
            event_dict[key] = redact(str(value), secrets)
    return event_dict


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is *now*, so a replaced stream (pytest's capture,
    a caller's redirect) that was later closed is never written to."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler writing to whatever ``sys.stderr`` is at emit time (it may be replaced)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _route_standard_logging(renderer: Any, level: str) -> None:
    """Render stdlib ``logging`` records (the SDKs') like ours: redacted, same format."""
    handler = _CurrentStderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                _redact_processor,
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _CurrentStderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(logging.WARNING, logging.getLevelNamesMapping()[level.upper()]))


def configure_logging(
    *, json_logs: bool = False, level: str = "WARNING", standard_logging: bool = True
) -> None:
    """Send structlog output (and, for an application, stdlib logging) to stderr.

    ``standard_logging=False`` leaves the root logger alone: a library must not take over
    its host application's logging.
    """
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json_logs
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    if standard_logging:
        _route_standard_logging(renderer, level)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


def ensure_default_logging() -> None:
    """Library default: if the application has not configured structlog, log warnings and
    errors to stderr only (an unconfigured structlog would print every event to stdout)."""
    if not structlog.is_configured():
        configure_logging(level="WARNING", standard_logging=False)
