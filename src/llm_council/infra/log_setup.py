"""structlog configuration: console lines by default, JSON lines with a flag, to stderr.

A redaction processor replaces every configured secret (the secret environment variables,
and every API key a provider was configured with, whatever variable held it) wherever it
appears in a log event, as a last line of defence: no code path should log a secret in
the first place. It matches the secret as written and as error messages transform it
(escaped as ``\\n`` by ``repr``/JSON, whitespace collapsed, or split at a control
character), since an HTTP client's "illegal header value" error quotes the key escaped.

The vendor SDKs log through the standard ``logging`` module (google-genai warns on stderr
when both Google key variables are set, for instance). Those records are sent through
the same redaction and renderer, so ``--log-json`` output stays JSON lines and an SDK
message cannot bypass the redaction; SDK loggers are kept at WARNING or above because
their debug output includes whole requests.

On the console, every text value of an event has its control and bidi characters shown as
``\\uXXXX`` escapes (:func:`~llm_council.infra.safe_text.terminal_safe`): an error message
quotes what a provider's server sent, and an escape sequence in it would otherwise reach
the terminal (clear the screen, retitle the window). JSON lines escape them already.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from llm_council.infra.safe_text import terminal_safe

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "LLM_COUNCIL_HASH_SECRET",
)
REDACTED = "[redacted]"


# Shorter values (and shorter pieces of a secret split at a control character) are not
# redacted: they are placeholders or fragments that would mangle ordinary words.
MIN_SECRET_CHARS = 6
_registered_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Redact ``value`` from now on in logs and errors (an API key read from any variable)."""
    if len(value.strip()) >= MIN_SECRET_CHARS:
        _registered_secrets.add(value)


def secret_values() -> list[str]:
    """The secret values currently configured (only non-trivial ones, to avoid redacting noise)."""
    from_env = {os.environ.get(name, "") for name in SECRET_ENV_VARS}
    return sorted(v for v in from_env | _registered_secrets if len(v.strip()) >= MIN_SECRET_CHARS)


@functools.lru_cache(maxsize=64)
def _forms(secret: str) -> frozenset[str]:
    """The ways a secret shows up in error text: as is, escaped, whitespace-collapsed, split."""
    forms = {
        secret,
        secret.strip(),
        repr(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
        " ".join(secret.split()),
    }
    forms.update(re.split(r"[\s\x00-\x1f\x7f-\x9f]+", secret))
    return frozenset(form for form in forms if len(form) >= MIN_SECRET_CHARS)


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every form of every configured secret replaced by ``[redacted]``."""
    forms: set[str] = set()
    for secret in secret_values() if secrets is None else secrets:
        forms |= _forms(secret)
    for form in sorted(forms, key=len, reverse=True):  # longest first: whole before pieces
        text = text.replace(form, REDACTED)
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


def _terminal_safe_processor(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in list(event_dict.items()):
        if isinstance(value, str):
            event_dict[key] = terminal_safe(value)
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


def _console_safety(renderer: Any) -> list[Any]:
    """The terminal-escaping processor for a console renderer (none for JSON lines)."""
    return (
        []
        if isinstance(renderer, structlog.processors.JSONRenderer)
        else [_terminal_safe_processor]
    )


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
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *_console_safety(renderer),
                renderer,
            ],
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
            *_console_safety(renderer),
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
