"""The per-loop SDK client pool: one build per key, off the event loop, no leak across loops."""

from __future__ import annotations

import asyncio
import gc
import os
import ssl
import threading
from typing import Any

import pytest

from llm_council.providers.base import CompletionRequest
from llm_council.providers.client_pool import (
    close_shared_clients,
    pooled_loop_count,
    secret_digest,
    shared_client,
)
from llm_council.providers.registry import create_provider


class _Client:
    closed = False


async def _close(client: Any) -> None:
    client.closed = True


def test_concurrent_callers_share_one_client_built_off_the_event_loop() -> None:
    builds: list[str] = []

    def build() -> _Client:
        builds.append(threading.current_thread().name)
        return _Client()

    async def run() -> tuple[list[Any], int]:
        clients = await asyncio.gather(
            *(shared_client(("test", "url", secret_digest("k")), build, _close) for _ in range(12))
        )
        return clients, await close_shared_clients()

    clients, closed = asyncio.run(run())
    assert len(builds) == 1 and builds[0] != threading.main_thread().name
    assert len({id(c) for c in clients}) == 1 and clients[0].closed and closed == 1


def test_a_different_key_or_loop_gets_its_own_client() -> None:
    async def one(key: str) -> Any:
        return await shared_client(("test", key), _Client, _close)

    async def two_keys() -> tuple[Any, Any, Any]:
        return await one("a"), await one("b"), await one("a")

    a, b, a_again = asyncio.run(two_keys())
    assert a is not b and a is a_again
    assert asyncio.run(one("a")) is not a  # a new loop, a new client


def test_the_api_key_is_not_the_pool_key() -> None:
    digest = secret_digest("sk-canary-XYZ-0123456789")
    assert "canary" not in digest and len(digest) == 16


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_many_asyncio_runs_do_not_accumulate_clients_or_sockets(fake_vendor, no_vendor_env):
    # a caller running one session per asyncio.run (run_council_sync in a loop) must not
    # keep every dead loop's client and kept-alive socket
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-pool-0000")
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
    provider = create_provider("openai:m", {"base_url": f"{fake_vendor.url}/v1"})

    async def call() -> None:
        await provider.prepare()
        await provider.complete(CompletionRequest.from_prompt("hi"))

    fake_vendor.reply(body)
    asyncio.run(call())  # warm up imports and lazily opened files
    gc.collect()
    before = _open_fds()
    for _ in range(15):
        fake_vendor.reply(body)
        asyncio.run(call())
    gc.collect()
    assert pooled_loop_count() == 0  # each loop's clients were closed as it shut down
    assert _open_fds() - before <= 3
    assert len(fake_vendor.requests) == 16


def test_clients_are_closed_inside_their_loop_at_shutdown_never_on_the_next(
    fake_vendor, no_vendor_env, caplog
):
    # left to the garbage collector, the SDK schedules its close on whichever loop runs
    # next, which fails with "Event loop is closed" (seen in the benchmark)
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-pool-0000")
    provider = create_provider("openai:m", {"base_url": f"{fake_vendor.url}/v1"})
    clients: list[Any] = []

    async def call() -> None:
        await provider.prepare()
        clients.append(await provider._client())

    asyncio.run(call())
    assert clients[0].is_closed()

    async def next_loop() -> None:
        gc.collect()
        await asyncio.sleep(0.01)

    with caplog.at_level("ERROR", logger="asyncio"):
        asyncio.run(next_loop())
    assert not [r for r in caplog.records if r.name == "asyncio"]


def test_an_explicit_close_then_new_clients_are_closed_once_at_shutdown() -> None:
    made: list[_Client] = []

    def build() -> _Client:
        made.append(_Client())
        return made[-1]

    async def run() -> None:
        await shared_client(("test", "x"), build, _close)
        assert await close_shared_clients() == 1 and made[0].closed
        await shared_client(("test", "x"), build, _close)
        gc.collect()  # the first hook is finalized now; it must leave the new client alone
        await asyncio.sleep(0.01)
        assert not made[1].closed

    asyncio.run(run())
    assert made[1].closed and pooled_loop_count() == 0


def test_stainless_clients_share_one_ssl_context_built_once(monkeypatch, no_vendor_env):
    import anthropic
    import openai

    from llm_council.providers import client_pool

    library = client_pool.http_library(openai.DefaultAsyncHttpxClient)
    assert library is not None and library is client_pool.http_library(
        anthropic.DefaultAsyncHttpxClient
    )
    builds: list[str] = []
    real_create = library.create_ssl_context

    def counted_create(*args: object, **kwargs: object) -> object:
        # the aiohttp transport (the default, ADR 0035) hands the context it was given to
        # create_ssl_context, which returns it as it is: not a build
        if not any(isinstance(given, ssl.SSLContext) for given in (*args, *kwargs.values())):
            builds.append(threading.current_thread().name)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(library, "create_ssl_context", counted_create)
    monkeypatch.setattr(client_pool, "_ssl_contexts", {})
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-pool-0000")
    no_vendor_env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-pool-0000")
    specs = ["openai:m0", "openai:m1", "anthropic:claude-x"]

    async def build_all() -> int:
        for spec in specs:
            await create_provider(spec, {"base_url": "http://127.0.0.1:9/v1"}).prepare()
        return await client_pool.close_shared_clients()

    assert asyncio.run(build_all()) == 3  # a client per model
    assert len(builds) == 1 and builds[0] != threading.main_thread().name  # one context
    # a changed certificate bundle variable is honoured: a new context, not the cached one
    no_vendor_env.setenv("SSL_CERT_FILE", certifi_or_system_bundle())
    assert asyncio.run(build_all()) == 3 and len(builds) == 2


def certifi_or_system_bundle() -> str:
    """A CA bundle file that exists here (the variable must name a readable file)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return candidate
    pytest.skip("no CA bundle file on this machine")
