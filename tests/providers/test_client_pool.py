"""The per-loop SDK client pool: one build per key, off the event loop, no leak across loops."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from typing import Any

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
    assert pooled_loop_count() <= 1  # only the last, closed loop's clients linger
    assert _open_fds() - before <= 3
    assert len(fake_vendor.requests) == 16
