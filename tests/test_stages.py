"""``gather_in_turn``: the stages start their calls in turn, each request on its way before
the next is built (ADR 0035), with ``asyncio.gather``'s results and failure semantics."""

from __future__ import annotations

import asyncio

import pytest

from llm_council.stages import gather_in_turn


async def _call(index: int, events: list[str], reply: asyncio.Event) -> int:
    """Like an SDK call over aiohttp: builds its request, queues the write as a task of its
    own, then waits for the reply."""
    events.append(f"build {index}")
    loop = asyncio.get_running_loop()
    loop.call_soon(events.append, f"write {index}")
    await reply.wait()
    return index * 10


def test_each_request_is_written_before_the_next_is_built() -> None:
    async def run() -> tuple[list[int], list[str]]:
        events: list[str] = []
        reply = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, reply.set)
        results = await gather_in_turn(_call(i, events, reply) for i in range(3))
        return results, events

    results, events = asyncio.run(run())
    assert results == [0, 10, 20]  # in call order, as gather returns them
    assert events == ["build 0", "write 0", "build 1", "write 1", "build 2", "write 2"]


def test_a_failing_call_fails_the_gather_and_the_others_still_finish() -> None:
    finished: list[int] = []

    async def call(index: int) -> int:
        await asyncio.sleep(0.01 * index)
        if index == 1:
            raise ValueError("boom")
        finished.append(index)
        return index

    async def run() -> None:
        with pytest.raises(ValueError, match="boom"):
            await gather_in_turn(call(i) for i in range(3))
        await asyncio.sleep(0.05)

    asyncio.run(run())
    assert finished == [0, 2]


def test_cancelled_while_starting_cancels_the_calls_already_started() -> None:
    started: list[asyncio.Task[None]] = []

    async def call() -> None:
        current = asyncio.current_task()
        assert current is not None
        started.append(current)
        await asyncio.sleep(60)

    async def run() -> None:
        def calls():  # the parent is cancelled as the third call is started
            for index in range(5):
                if index == 2:
                    asyncio.current_task().cancel()  # type: ignore[union-attr]
                yield call()

        with pytest.raises(asyncio.CancelledError):
            await gather_in_turn(calls())
        await asyncio.sleep(0)

    asyncio.run(run())
    assert len(started) == 3 and all(task.cancelled() for task in started)
