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
from pathlib import Path

import pytest
from filelock import FileLock

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.records.jsonl_store import read_records
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.middleware import Middleware, SessionCompleted

TICKS = 5  # loop turns that must pass while the append waits for the held lock


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


def _hold_lock(lock_file: str, acquired: threading.Event, release: threading.Event) -> None:
    """Hold the store's lock until the test releases it (60 s at most: a hang-catcher)."""
    with FileLock(lock_file):
        acquired.set()
        release.wait(60)


async def _append_while_ticking(
    event: SessionCompleted, release: threading.Event
) -> tuple[int, bool, int]:
    """Start the append, turn the loop :data:`TICKS` times while the lock is held, then
    release it: the ticks passed, whether the append was still waiting, and its records.

    Synchronised on events, not on a hold time: an append blocking the loop would hold it
    until the 60 s hang-catcher, and then be done before any tick.
    """
    append = asyncio.create_task(BiasAuditMiddleware().on_session_end(event))
    ticks = 0
    while ticks < TICKS and not append.done():
        await asyncio.sleep(0.01)
        ticks += 1
    still_waiting = not append.done()
    release.set()
    audit = await append
    return ticks, still_waiting, int(audit["records_written"])


def test_a_blocked_append_leaves_the_event_loop_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "bias_records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    capture = _Capture()
    asyncio.run(run_full_council("q", config=_council(), seed=3, middleware=[capture]))
    assert capture.event is not None
    acquired, release = threading.Event(), threading.Event()
    holder = threading.Thread(
        target=_hold_lock, args=(str(store.absolute()) + ".lock", acquired, release), daemon=True
    )
    holder.start()
    assert acquired.wait(60)
    ticks, still_waiting, written = asyncio.run(_append_while_ticking(capture.event, release))
    holder.join()
    assert written == 25 and len(list(read_records(store))) == 25
    # the append waited for the lock, and the loop kept ticking meanwhile (0 if blocked)
    assert still_waiting, "the append finished while another process held the lock"
    assert ticks == TICKS, f"the event loop ticked only {ticks} times while the append waited"
