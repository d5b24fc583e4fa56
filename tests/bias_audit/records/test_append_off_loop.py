"""The record append never blocks the event loop (issue 12 section 5).

The JSONL writer appends under a file lock in a worker thread
(``record_stores.JsonlWriter.write_session`` -> ``asyncio.to_thread``). Here another
holder keeps that lock for a while: the append has to wait, and the event loop must keep
running other work meanwhile. Had the append run on the loop, the ticker below would not
advance until the lock was released.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.records.jsonl_store import read_records
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.middleware import Middleware, SessionCompleted

HOLD_S = 0.5
TICK_S = 0.01


class _Capture(Middleware):
    name = "capture"

    def __init__(self) -> None:
        self.event: SessionCompleted | None = None

    async def on_session_end(self, event: SessionCompleted) -> None:
        self.event = event
        return None


def _council() -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(5)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )


def _hold_lock(lock_file: str, acquired: threading.Event) -> None:
    with FileLock(lock_file):
        acquired.set()
        time.sleep(HOLD_S)


async def _append_while_ticking(event: SessionCompleted) -> tuple[int, float, int]:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(TICK_S)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    audit = await BiasAuditMiddleware().on_session_end(event)
    waited = time.perf_counter() - started
    stop.set()
    await task
    return ticks, waited, int(audit["records_written"])


def test_a_blocked_append_leaves_the_event_loop_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "bias_records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    capture = _Capture()
    asyncio.run(run_full_council("q", config=_council(), seed=3, middleware=[capture]))
    assert capture.event is not None
    acquired = threading.Event()
    holder = threading.Thread(
        target=_hold_lock, args=(str(store.absolute()) + ".lock", acquired), daemon=True
    )
    holder.start()
    assert acquired.wait(10)
    ticks, waited, written = asyncio.run(_append_while_ticking(capture.event))
    holder.join()
    assert written == 25 and len(list(read_records(store))) == 25
    # the append waited for the lock, and the loop kept ticking meanwhile (0 if blocked)
    assert waited >= HOLD_S * 0.5
    assert ticks >= 5, f"the event loop ticked only {ticks} times while the append waited"
