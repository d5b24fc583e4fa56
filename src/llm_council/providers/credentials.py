"""API keys: checked when a provider is configured, and remembered for redaction.

A key with a newline or another control character inside (a copy-paste accident, a
``$(cat file)`` with Windows line endings) makes the HTTP client fail with "Illegal
header value b'Bearer sk-...'", an error that quotes the key. Such a key is refused
before any request with a :class:`ConfigError` that names the variable, never the value;
every accepted key is registered with :func:`llm_council.infra.log_setup.register_secret` so
logs, ``metadata["degraded"]`` and errors redact it whatever variable held it.
"""

from __future__ import annotations

import unicodedata

from llm_council.errors import ConfigError
from llm_council.infra.log_setup import register_secret


def _problem(key: str) -> str | None:
    """What is wrong with ``key`` (without quoting it), or None when it can be sent."""
    if not key:
        return "is empty"
    for character in key:
        code = f"U+{ord(character):04X}"
        if unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp"):
            return f"contains a control character ({code})"
        if character.isspace():
            return f"contains whitespace ({code}) inside the key"
        if not character.isascii():
            return f"contains a non-ASCII character ({code}); HTTP headers carry ASCII"
    return None


def checked_api_key(key: str, variable: str) -> str:
    """``key`` (read from ``variable``, surrounding whitespace already stripped) if it can be
    sent in an HTTP header; else a :class:`ConfigError` naming ``variable`` but not the key."""
    problem = _problem(key)
    if problem is not None:
        register_secret(key)  # redacted even if some caller prints it after this error
        raise ConfigError(f"{variable}: the API key {problem}; the value is not shown")
    register_secret(key)
    return key
