"""Classify a failed vendor call into a :class:`ProviderError` the core can act on.

The provider modules extract what their SDK knows (HTTP status, response headers, the
server's message) and hand it to the functions here, so the retry rules are written once:

* 429 is retryable, waiting the server's ``retry-after-ms`` / ``retry-after`` (seconds or
  an HTTP date, RFC 9110 section 10.2.3) when it sent one;
* 408, 409 and every 5xx (including Anthropic's 529 "overloaded") are retryable;
* other 4xx (400, 401, 403, 404, 422, ...) are not: the same request would fail again;
* a dropped connection or an SDK-level timeout is retryable;
* a 200 whose body cannot be decoded, lacks the expected fields, or holds no text is not
  retryable. An empty answer is usually a refusal, a safety block or a ``max_tokens`` too
  small for a reasoning model; the same request would most likely give the same result,
  and a retry costs money. A *truncated but non-empty* answer is not an error at all: it
  is returned with its ``finish_reason`` so the caller decides.

Every message goes through :func:`redact` so an API key echoed by a server (or by an
SDK) never reaches logs or records.
"""

from __future__ import annotations

import email.utils
import json
import sys
import time
from collections.abc import Iterable, Mapping
from types import ModuleType

from llm_council.errors import ProviderError
from llm_council.infra.log_setup import redact as redact_secrets

# Statuses a retry can fix: the server is busy, restarting or lost the request.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
# Longest server message kept in an error: enough to explain, short enough for one line.
MAX_SERVER_MESSAGE_CHARS = 300
# Shorter values than this are not redacted: they are placeholders like "not-needed",
# not secrets, and replacing them would mangle ordinary words in messages.


def is_retryable_status(status_code: int) -> bool:
    """True for statuses a later identical request may pass: 408, 409, 429 and 5xx."""
    return status_code in RETRYABLE_STATUSES or 500 <= status_code <= 599


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait before retrying, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after-ms`` (OpenAI, Anthropic) is preferred because it is more precise;
    ``retry-after`` may be delta-seconds or an HTTP date (RFC 9110 section 10.2.3).
    Returns ``None`` when no usable hint was sent; a date in the past gives ``0.0``.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = _parse_non_negative_float(lowered.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = _parse_non_negative_float(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as such
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def parse_duration_seconds(text: str | None) -> float | None:
    """``"13s"`` or ``"1.5s"`` (protobuf Duration JSON, Google's ``retryDelay``) -> seconds."""
    if not text or not text.strip().endswith("s"):
        return None
    return _parse_non_negative_float(text.strip()[:-1])


def _parse_non_negative_float(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if value != value or value < 0 or value == float("inf"):  # NaN, negative, infinite
        return None
    return value


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of each secret (escaped, JSON-quoted, split at a control
    character) replaced by ``[redacted]``: the one redactor of
    :mod:`llm_council.infra.log_setup`."""
    return redact_secrets(text, list(secrets))


def _shorten(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > MAX_SERVER_MESSAGE_CHARS:
        return one_line[: MAX_SERVER_MESSAGE_CHARS - 3] + "..."
    return one_line


def status_error(
    spec: str,
    provider: str,
    status_code: int,
    headers: Mapping[str, str],
    server_message: str,
    *,
    secrets: Iterable[str] = (),
    retry_after: float | None = None,
) -> ProviderError:
    """The error for an HTTP error response; ``retry_after`` overrides the headers' hint."""
    retryable = is_retryable_status(status_code)
    if retry_after is None and retryable:
        retry_after = parse_retry_after(headers)
    reason = "rate limited" if status_code == 429 else "HTTP error"
    detail = _shorten(redact(server_message, secrets)) or "(no message)"
    return ProviderError(
        f"{spec}: {reason} {status_code}: {detail}",
        provider=provider,
        retryable=retryable,
        retry_after=retry_after,
        status_code=status_code,
    )


def transport_error(
    spec: str, provider: str, error: BaseException, *, timed_out: bool, secrets: Iterable[str] = ()
) -> ProviderError:
    """The (retryable) error for a connection that failed, dropped or timed out."""
    what = "timed out" if timed_out else "connection failed"
    cause = _shorten(redact(str(error), secrets)) or type(error).__name__
    return ProviderError(f"{spec}: {what}: {cause}", provider=provider, retryable=True)


def malformed_response_error(
    spec: str, provider: str, problem: str, *, secrets: Iterable[str] = ()
) -> ProviderError:
    """The (not retryable) error for a response we cannot turn into a completion."""
    return ProviderError(
        f"{spec}: malformed response: {_shorten(redact(problem, secrets))}",
        provider=provider,
        retryable=False,
    )


def empty_answer_error(spec: str, provider: str, finish_reason: str | None) -> ProviderError:
    """The (not retryable) error for a response with no text; see the module docstring."""
    hint = ""
    if finish_reason and finish_reason.lower() in {"length", "max_tokens", "max_output_tokens"}:
        hint = " (max_tokens reached before any text; raise max_tokens)"
    return ProviderError(
        f"{spec}: empty answer (finish_reason={finish_reason or 'unknown'}){hint}",
        provider=provider,
        retryable=False,
        finish_reason=finish_reason,
    )


def server_message_from_body(body: object, fallback: str) -> str:
    """The human-readable message of a JSON error body (``{"error": {"message": ...}}``)."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body
    return fallback


def stainless_sdk_error(
    error: Exception, sdk: ModuleType, *, spec: str, provider: str, secrets: Iterable[str] = ()
) -> ProviderError | None:
    """Classify an exception of the ``openai`` or ``anthropic`` SDK (both Stainless-generated).

    ``sdk`` is the imported SDK module; both expose ``APIStatusError`` (with ``status_code``,
    ``response.headers`` and the decoded ``body``), ``APITimeoutError``,
    ``APIConnectionError`` and ``APIResponseValidationError``. Returns ``None`` for an
    exception that is not the SDK's, so the caller can let real bugs surface.
    """
    if isinstance(error, sdk.APIStatusError):
        response = getattr(error, "response", None)
        headers = dict(response.headers) if response is not None else {}
        message = server_message_from_body(getattr(error, "body", None), str(error))
        return status_error(
            spec, provider, int(error.status_code), headers, message, secrets=secrets
        )
    if isinstance(error, sdk.APITimeoutError):
        refused = _refused_connection(error)
        if refused is not None:  # see _refused_connection: the server is down, not slow
            return transport_error(spec, provider, refused, timed_out=False, secrets=secrets)
        return transport_error(spec, provider, error, timed_out=True, secrets=secrets)
    if isinstance(error, sdk.APIConnectionError):
        cause = error.__cause__ or error
        return transport_error(spec, provider, cause, timed_out=False, secrets=secrets)
    if isinstance(error, sdk.APIResponseValidationError):
        return malformed_response_error(spec, provider, str(error), secrets=secrets)
    if isinstance(error, json.JSONDecodeError):  # the SDK decoding a 200 body that is not JSON
        return malformed_response_error(
            spec, provider, f"body is not valid JSON ({error})", secrets=secrets
        )
    return None


def _refused_connection(error: BaseException) -> BaseException | None:
    """The failed connection behind a "timeout", if a ``ConnectionError`` caused it.

    The SDKs' aiohttp transport (``httpx_aiohttp``) reports every aiohttp connector error,
    a refused connection included, as ``ConnectTimeout``, which the SDK raises as
    ``APITimeoutError``: "timed out" would send a user looking for a slow server when
    nothing listens. Returns the first ``OSError`` of the cause chain (aiohttp's "Cannot
    connect to host ..."), or None when no ``ConnectionError`` is in it (a real timeout).
    """
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and len(chain) < 16 and all(link is not seen for seen in chain):
        chain.append(link)
        link = link.__cause__ or link.__context__
    if not any(isinstance(link, ConnectionError) for link in chain):
        return None
    return next(link for link in chain if isinstance(link, OSError))


def http_stack_error(
    error: BaseException, *, spec: str, provider: str, secrets: Iterable[str] = ()
) -> ProviderError | None:
    """Classify a raw transport exception (httpx, httpx2 or aiohttp), or ``None``.

    google-genai does not wrap transport failures, and it may run on any of these three
    stacks depending on what is installed, so all three are recognised. The builtin
    ``TimeoutError`` counts too: it is what aiohttp raises for a total timeout, and the
    core's own timeout cancels the call instead of raising it inside the provider.
    """
    if isinstance(error, TimeoutError):
        return transport_error(spec, provider, error, timed_out=True, secrets=secrets)
    if isinstance(error, _transport_error_classes()):
        timed_out = "Timeout" in type(error).__name__
        return transport_error(spec, provider, error, timed_out=timed_out, secrets=secrets)
    return None


def _transport_error_classes() -> tuple[type[BaseException], ...]:
    classes: list[type[BaseException]] = []
    for module_name, class_name in (
        ("httpx2", "TransportError"),
        ("httpx", "TransportError"),
        ("aiohttp", "ClientError"),
    ):
        module = sys.modules.get(module_name)  # only a stack already in use can have raised
        if module is not None and isinstance(getattr(module, class_name, None), type):
            classes.append(getattr(module, class_name))
    return tuple(classes)
