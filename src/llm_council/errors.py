"""The error hierarchy: every failure a user can cause or meet has a class here.

The CLI turns any ``CouncilError`` into a one-line message and a non-zero exit code;
messages quote the bad value and name where it was (file, line, field). Messages never
contain API keys or the hash secret.
"""

from __future__ import annotations


class CouncilError(Exception):
    """Base of every error llm-council raises on purpose."""

    exit_code = 1


class ConfigError(CouncilError):
    """A configuration file, environment variable or option is invalid."""

    exit_code = 2


class InputError(CouncilError):
    """A user-supplied input file (pairs, records to replay, ...) is malformed."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class RecordError(CouncilError):
    """The bias-audit record store cannot be read or written."""


class ProviderError(CouncilError):
    """A provider call failed, classified so the core can decide whether to retry.

    ``retryable`` is the provider's judgement (rate limit, 5xx, timeout, dropped
    connection); ``retry_after`` is the server's hint in seconds, when it gave one;
    ``finish_reason`` the provider's reason for a response without text (a refusal, the
    token limit), when that is the failure.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        retryable: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
        finish_reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable
        self.retry_after = retry_after
        self.status_code = status_code
        self.finish_reason = finish_reason


class SessionDeadlineError(ProviderError):
    """The core gave a call up at the session deadline (never retried: time is up)."""


class MissingCredentialsError(ProviderError, ConfigError):
    """The environment variable holding a provider's API key is not set."""

    def __init__(self, provider: str, env_vars: tuple[str, ...]) -> None:
        names = " or ".join(env_vars)
        super().__init__(
            f"provider '{provider}' needs an API key: set {names}",
            provider=provider,
            retryable=False,
        )
        self.env_vars = env_vars


class MissingDependencyError(ConfigError):
    """An optional SDK is not installed."""
