"""An event loop whose clock a fake provider moves, so deadline tests never race the machine.

``asyncio``'s deadlines (``CallGate``'s stage shares, ``asyncio.timeout_at``) read
``loop.time()``. On :class:`SteppedClockLoop` that is the real monotonic clock plus an
offset the test's providers advance by the work they stand for (:class:`CostlyProvider`:
"this review took 50 s of CPU"). With costs of tens of seconds and a real session of well
under one, where the deadline falls is decided by the costs alone, on an idle machine or
a loaded one. Real time still flows, so timers and sleeps keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.simulated import SimulatedProvider

_T = TypeVar("_T")


class SteppedClockLoop(asyncio.SelectorEventLoop):
    """A selector loop whose ``time()`` is monotonic time plus :attr:`offset_s`."""

    offset_s: float = 0.0

    def time(self) -> float:
        return super().time() + self.offset_s

    def advance(self, seconds: float) -> None:
        """Move this loop's clock forward (a CPU-bound call's cost)."""
        self.offset_s += seconds


def run_on_stepped_clock(coroutine: Coroutine[Any, Any, _T]) -> tuple[_T, float]:
    """Run ``coroutine`` on a fresh :class:`SteppedClockLoop`; its result and the loop time it
    took (real time plus every advance)."""
    loop = SteppedClockLoop()
    try:
        asyncio.set_event_loop(loop)
        started = loop.time()
        result = loop.run_until_complete(coroutine)
        return result, loop.time() - started
    finally:
        asyncio.set_event_loop(None)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


class CostlyProvider(Provider):
    """A simulated member whose every call costs ``costs_s[task]`` seconds of the loop's clock,
    spent on the loop as CPU work is (no await: nothing else runs meanwhile)."""

    provider_name = "costly"
    structured_output = "native"

    def __init__(self, model_name: str, costs_s: Mapping[str, float], **options: Any) -> None:
        super().__init__(model_name)
        self.costs_s = dict(costs_s)
        self.simulated = SimulatedProvider(model_name, **options)

    async def complete(self, request: CompletionRequest) -> Completion:
        completion = await self.simulated.complete(request)
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SteppedClockLoop), "run costly members with run_on_stepped_clock"
        loop.advance(self.costs_s.get(request.task, 0.0))
        return completion
