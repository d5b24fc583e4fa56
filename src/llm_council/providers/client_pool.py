"""SDK clients built once per event loop and shared by every provider that can use them.

Building an SDK client is expensive and blocking: each ``AsyncOpenAI`` /
``AsyncAnthropic`` / ``genai.Client`` builds an SSL context and loads the certificate
bundle (about 23 ms), and a client owns a connection pool that is only useful if it lives
longer than one call. So clients are keyed by ``(vendor, base URL, key digest, timeout)``,
built in a worker thread (never on the event loop), at most once per key and loop, and
reused by every member and every session on that loop; connections are kept alive
between sessions.

Clients are per event loop because an async HTTP client's connections belong to the loop
that opened them; a new loop (a new ``asyncio.run``) gets new clients. A kept-alive
connection refers to its loop, so a weak mapping would never let a loop go: instead the
pool is a plain mapping, and the clients of loops that have since closed are dropped
whenever a loop asks for its first client (at most one dead loop's clients linger, so
``asyncio.run`` in a loop does not leak clients or sockets).
:func:`close_shared_clients` closes the running loop's clients for a clean shutdown.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

ClientKey = tuple[Hashable, ...]

Closer = Callable[[Any], Awaitable[None]]

_clients: dict[asyncio.AbstractEventLoop, dict[ClientKey, tuple[Any, Closer]]] = {}
_locks: dict[asyncio.AbstractEventLoop, dict[ClientKey, asyncio.Lock]] = {}


def _drop_closed_loops() -> None:
    for loop in [loop for loop in _clients if loop.is_closed()]:
        del _clients[loop]
        _locks.pop(loop, None)


def secret_digest(secret: str) -> str:
    """A digest standing for an API key in a pool key, so the key itself is never a dict key."""
    return hashlib.sha256(secret.encode()).hexdigest()[:16]


async def shared_client(key: ClientKey, build: Callable[[], Any], close: Closer) -> Any:
    """The running loop's client for ``key``, building it once in a worker thread.

    ``close`` is how :func:`close_shared_clients` releases it.
    """
    loop = asyncio.get_running_loop()
    if loop not in _clients:
        _drop_closed_loops()
    clients = _clients.setdefault(loop, {})
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
    """Close and forget every client of the running loop; returns how many were closed."""
    loop = asyncio.get_running_loop()
    clients = _clients.pop(loop, {})
    _locks.pop(loop, None)
    for client, close in clients.values():
        await close(client)
    return len(clients)


def pooled_loop_count() -> int:
    """How many event loops currently hold clients (for the leak test)."""
    return len(_clients)
