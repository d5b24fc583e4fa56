"""SDK clients built once per event loop and shared by every provider that can use them.

Building an SDK client is expensive and blocking: each ``AsyncOpenAI`` /
``AsyncAnthropic`` / ``genai.Client`` builds an SSL context and loads the certificate
bundle (about 23 ms), and a client owns a connection pool that is only useful if it lives
longer than one call. So clients are keyed by ``(vendor, base URL, key digest, timeout)``
(plus the model for the Stainless SDKs, below), built in a worker thread (never on the
event loop), at most once per key and loop, and reused by every session on that loop;
connections are kept alive between sessions.

The OpenAI and Anthropic SDKs get one client per model over one process-wide SSL context
(:func:`stainless_http_client`): building such a client costs about a millisecond, and
the HTTP library's connection pool scans all its connections on every request and every
response, so one pool of 13 connections costs about 0.4 ms of CPU per call more than 13
pools of one (ADR 0031).

Clients are per event loop because an async HTTP client's connections belong to the loop
that opened them; a new loop (a new ``asyncio.run``) gets new clients. The old loop's
clients are closed while that loop can still run their ``aclose``: the pool parks an
async generator on each loop, and ``asyncio.run`` finalizes async generators
(``loop.shutdown_asyncgens()``) before closing the loop, which closes the clients. (Left
to the garbage collector, the SDK's ``__del__`` would schedule the close on the *next*
loop and fail with "Event loop is closed".) For loops that never finalize their async
generators, the clients of loops found closed are dropped when a new loop asks for its
first client, so ``asyncio.run`` in a loop does not accumulate clients or sockets.
:func:`close_shared_clients` closes the running loop's clients at any time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import Any

ClientKey = tuple[Hashable, ...]

Closer = Callable[[Any], Awaitable[None]]

_clients: dict[asyncio.AbstractEventLoop, dict[ClientKey, tuple[Any, Closer]]] = {}
_locks: dict[asyncio.AbstractEventLoop, dict[ClientKey, asyncio.Lock]] = {}
# per loop: the parked generator (kept alive here) and the token it must still hold to act
_shutdown_hooks: dict[asyncio.AbstractEventLoop, tuple[object, AsyncIterator[None]]] = {}
# per HTTP library and certificate variables: its default SSL context (not bound to a loop)
_ssl_contexts: dict[tuple[str, str, str], ssl.SSLContext] = {}
_ssl_lock = threading.Lock()


def _drop_closed_loops() -> None:
    for loop in [loop for loop in _clients if loop.is_closed()]:
        del _clients[loop]
        _locks.pop(loop, None)
        _shutdown_hooks.pop(loop, None)


async def _close_at_loop_shutdown(
    loop: asyncio.AbstractEventLoop, token: object
) -> AsyncIterator[None]:
    """Parked at its first ``yield``; finalized by ``loop.shutdown_asyncgens()``.

    A hook replaced after an explicit :func:`close_shared_clients` no longer holds the
    loop's token, so its late finalization leaves the loop's newer clients alone.
    """
    try:
        yield
    finally:
        registered = _shutdown_hooks.get(loop)
        if registered is not None and registered[0] is token:
            await close_shared_clients()


async def _register_loop(loop: asyncio.AbstractEventLoop) -> None:
    _drop_closed_loops()
    _clients[loop] = {}
    token = object()
    hook = _close_at_loop_shutdown(loop, token)
    _shutdown_hooks[loop] = (token, hook)
    await anext(hook)  # the loop now tracks it, and will finalize it on shutdown


def secret_digest(secret: str) -> str:
    """A digest standing for an API key in a pool key, so the key itself is never a dict key."""
    return hashlib.sha256(secret.encode()).hexdigest()[:16]


async def shared_client(key: ClientKey, build: Callable[[], Any], close: Closer) -> Any:
    """The running loop's client for ``key``, building it once in a worker thread.

    ``close`` is how :func:`close_shared_clients` releases it.
    """
    loop = asyncio.get_running_loop()
    if loop not in _clients:
        await _register_loop(loop)
    clients = _clients[loop]
    entry = clients.get(key)
    if entry is not None:
        return entry[0]
    lock = _locks.setdefault(loop, {}).setdefault(key, asyncio.Lock())
    async with lock:
        entry = clients.get(key)
        if entry is None:
            entry = (await asyncio.to_thread(build), close)
            clients[key] = entry
    return entry[0]


async def close_shared_clients() -> int:
    """Close and forget every client of the running loop; returns how many were closed.

    A client whose close fails is still forgotten: shutting down must not fail on it.
    """
    loop = asyncio.get_running_loop()
    clients = _clients.pop(loop, {})
    _locks.pop(loop, None)
    _shutdown_hooks.pop(loop, None)
    for client, close in clients.values():
        with contextlib.suppress(Exception):  # a half-dead connection must not block shutdown
            await close(client)
    return len(clients)


@functools.cache
def http_library(client_class: type) -> Any:
    """The module behind an SDK's httpx client class (``httpx`` or ``httpx2``), if it has
    ``create_ssl_context``; None otherwise (a class's module never changes: cached)."""
    for base in client_class.__mro__:
        library = sys.modules.get(base.__module__.partition(".")[0])
        if library is not None and callable(getattr(library, "create_ssl_context", None)):
            return library
    return None


def default_ssl_context(client_class: type) -> ssl.SSLContext | None:
    """The HTTP library's own default SSL context (its trust rules, ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` included), built once per process and library; blocking (it reads the
    certificate bundle), so call it from a worker thread. None if the library has no
    ``create_ssl_context``: the caller then leaves verification to the SDK's default."""
    library = http_library(client_class)
    if library is None:
        return None
    key = (
        library.__name__,
        os.environ.get("SSL_CERT_FILE", ""),
        os.environ.get("SSL_CERT_DIR", ""),
    )
    with _ssl_lock:
        context = _ssl_contexts.get(key)
        if context is None:
            context = _ssl_contexts[key] = library.create_ssl_context()
        return context


def stainless_http_client(sdk: Any, http_client: str = "httpx") -> Any:
    """A default HTTP client of a Stainless SDK (``openai``, ``anthropic``) whose SSL
    context is the process-wide one: the SDK's own defaults (timeouts, limits, redirects,
    proxies from the environment), without loading the certificate bundle again.

    ``http_client="aiohttp"`` gives the SDK's documented aiohttp transport
    (``DefaultAioHttpClient``), which costs about half the CPU per call (ADR 0034).
    """
    context = default_ssl_context(sdk.DefaultAsyncHttpxClient)
    client_class = (
        sdk.DefaultAioHttpClient if http_client == "aiohttp" else sdk.DefaultAsyncHttpxClient
    )
    return client_class() if context is None else client_class(verify=context)


def pooled_loop_count() -> int:
    """How many event loops currently hold clients (for the leak test)."""
    return len(_clients)


class PooledClientProvider:
    """What the three SDK providers share: a process-wide client for ``_client_key``, built
    by ``_build_client`` in a worker thread before the first attempt (:meth:`prepare`),
    and whether a request's schema goes out on the SDK's native structured channel.

    A provider sets ``_client_key`` (vendor, base URL, key digest, timeout) and
    ``_build_client`` in its ``__init__``; ``_close_client`` may be overridden.
    """

    _client_key: ClientKey
    structured_output: str

    def _build_client(self) -> Any:
        raise NotImplementedError

    @staticmethod
    async def _close_client(client: Any) -> None:
        await client.close()

    async def prepare(self) -> None:
        await self._client()

    async def _client(self) -> Any:
        return await shared_client(self._client_key, self._build_client, self._close_client)

    def _sends_schema(self, request: Any) -> bool:
        return request.response_schema is not None and self.structured_output == "native"


class StainlessClientProvider(PooledClientProvider):
    """A provider over a Stainless SDK (``openai``, ``anthropic``): one client per model,
    over the process-wide SSL context and the chosen HTTP client (:func:`stainless_http_client`).

    A provider sets ``_sdk`` and ``_client_class`` (``"AsyncOpenAI"``) and calls
    :meth:`_configure_client` in its ``__init__``.
    """

    _sdk: Any
    _client_class: str
    model_name: str

    def _configure_client(
        self,
        vendor: str,
        *,
        base_url: str | None,
        api_key: str,
        timeout_s: float,
        http_client: str,
    ) -> None:
        # one client (and connection pool) per model: see this module's docstring
        self._client_key = (
            vendor,
            base_url,
            secret_digest(api_key),
            timeout_s,
            self.model_name,
            http_client,
        )
        self._http_client = http_client
        self._client_settings = {
            "api_key": api_key,
            "base_url": base_url,
            "max_retries": 0,
            "timeout": timeout_s,
        }

    def _build_client(self) -> Any:
        http_client = stainless_http_client(self._sdk, self._http_client)
        client_class = getattr(self._sdk, self._client_class)
        return client_class(**self._client_settings, http_client=http_client)
