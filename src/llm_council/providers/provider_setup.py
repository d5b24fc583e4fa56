"""What a vendor provider needs before its first call: its SDK, its API key, its endpoint.

Shared by the SDK modules so that a missing SDK, a missing key or a misspelt option gives
the same clear, one-line error for every vendor.
"""

from __future__ import annotations

import importlib
import importlib.util
import ipaddress
import os
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from llm_council.errors import ConfigError, MissingCredentialsError, MissingDependencyError
from llm_council.infra.install_hints import extra_install_hint
from llm_council.providers.base import STRUCTURED_OUTPUT_MODES, StructuredOutputMode
from llm_council.providers.credentials import checked_api_key

#: the HTTP clients a Stainless SDK (openai, anthropic) can send through (ADR 0034)
HTTP_CLIENTS = ("httpx", "aiohttp")
#: the process-wide default of the ``http_client`` option
HTTP_CLIENT_ENV = "LLM_COUNCIL_HTTP_CLIENT"

# Hostnames that always mean "this machine or the local network" (Ollama, vLLM, LM Studio).
_LOCAL_HOSTNAMES = frozenset({"localhost", "host.docker.internal"})


def import_sdk(module_name: str, pip_name: str, provider: str) -> ModuleType:
    """Import a vendor SDK on first use, or say how to install it."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"provider '{provider}' needs the '{pip_name}' package: pip install '{pip_name}'"
        ) from exc


def api_key_from_env(env_vars: tuple[str, ...]) -> str | None:
    """The first non-empty value among ``env_vars`` (whitespace stripped), else ``None``."""
    for name in env_vars:
        value = os.environ.get(name, "").strip()
        if value:
            return checked_api_key(value, name)
    return None


def require_api_key(provider: str, env_vars: tuple[str, ...]) -> str:
    """The API key from ``env_vars``; a :class:`MissingCredentialsError` naming them if unset."""
    key = api_key_from_env(env_vars)
    if key is None:
        raise MissingCredentialsError(provider, env_vars)
    return key


def is_local_url(url: str) -> bool:
    """True when ``url`` points at this machine or a private network (a self-hosted server).

    Such servers (Ollama, vLLM) usually need no API key; a public host always does.
    """
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOCAL_HOSTNAMES or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def reject_unknown_options(
    provider: str, model_name: str, options: Mapping[str, Any], known: tuple[str, ...]
) -> None:
    """A :class:`ConfigError` quoting the first option this provider does not understand."""
    for name in options:
        if name not in known:
            raise ConfigError(
                f"unknown option '{name}' for '{provider}:{model_name}'; "
                f"known options: {', '.join(known)}"
            )


def positive_timeout(provider: str, value: object) -> float:
    """Validate the ``timeout_s`` option (the SDK's own backstop timeout, in seconds)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"option 'timeout_s' for provider '{provider}' must be > 0, got {value!r}"
        )
    return float(value)


def structured_output_mode(
    provider: str, value: object, default: StructuredOutputMode
) -> StructuredOutputMode:
    """Validate the ``structured_output`` option: ``"native"``, ``"nonce"`` or unset."""
    if value is None:
        return default
    for mode in STRUCTURED_OUTPUT_MODES:
        if value == mode:
            return mode
    raise ConfigError(
        f"option 'structured_output' for provider '{provider}' must be one of "
        f"{', '.join(STRUCTURED_OUTPUT_MODES)}, got {str(value)[:40]!r}"
    )


def http_client_choice(provider: str, value: object, sdk: ModuleType | None = None) -> str:
    """Validate the ``http_client`` option (else ``LLM_COUNCIL_HTTP_CLIENT``, else the default).

    ``"aiohttp"`` is the SDKs' documented aiohttp transport (``openai[aiohttp]``,
    ``anthropic[aiohttp]``); asked for by name, it is refused here, before any call, when
    aiohttp is missing. Unset, it is the default whenever aiohttp is installed, and httpx
    (the SDKs' own default) otherwise: the same SDK and error classes at about half the
    CPU per call, which a council of a dozen members needs to stay near its ideal wall
    time (ADR 0035). ``sdk`` is the imported SDK: one too old for the aiohttp transport
    defaults to httpx.
    """
    source = f"option 'http_client' for provider '{provider}'"
    if value is None:
        value = os.environ.get(HTTP_CLIENT_ENV, "").strip() or default_http_client(sdk)
        source = HTTP_CLIENT_ENV
    if value not in HTTP_CLIENTS:
        raise ConfigError(
            f"{source} must be one of {', '.join(HTTP_CLIENTS)}, got {str(value)[:40]!r}"
        )
    if value == "aiohttp" and not _is_installed("aiohttp"):
        raise MissingDependencyError(
            f"{source} is 'aiohttp' but aiohttp is not installed: " + extra_install_hint("aiohttp")
        )
    return str(value)


def default_http_client(sdk: ModuleType | None = None) -> str:
    """The HTTP client of a member that names none: aiohttp when it is installed (and
    ``sdk``, if given, has its aiohttp transport), else httpx."""
    if not _is_installed("aiohttp"):
        return "httpx"
    aiohttp_client = getattr(sdk, "DefaultAioHttpClient", None) if sdk is not None else object
    # an SDK whose aiohttp transport failed to import puts a "Missing..." stand-in there
    usable = isinstance(aiohttp_client, type) and "Missing" not in aiohttp_client.__name__
    return "aiohttp" if usable else "httpx"


def _is_installed(module_name: str) -> bool:
    """Whether ``module_name`` can be imported; asked for every member of every session,
    so the search of ``sys.path`` (about 0.3 ms) is done once per module and process."""
    imported = sys.modules.get(module_name, False)
    if imported is None:  # blocked in sys.modules: as good as not installed
        return False
    if imported is not False:
        return True
    found = _found_specs.get(module_name)
    if found is None:
        try:
            found = importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        _found_specs[module_name] = found
    return found


_found_specs: dict[str, bool] = {}
