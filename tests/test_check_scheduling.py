"""Live bias checks never delay the counted calls (ADR 0031).

Checks used to share the review stage's semaphore and deadline share, so a slow or
hanging check could hold a slot a real review waited for, or use up the reviews' share of
the session deadline. Now they are issued once the counted reviews are in, through their
own gate (own slots, the whole session deadline), next to the synthesis.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from fakes.virtual_clock import SteppedClockLoop, run_on_stepped_clock
from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.providers.base import Completion, CompletionRequest, Provider, Usage
from llm_council.providers.registry import register_provider, unregister_provider

NAMES = ("a", "b", "c")


class TimedProvider(Provider):
    """A fake model that logs when each call starts and ends; a reviewer's second review
    call is its bias check (checks come after the reviews) and takes ``check_s``."""

    provider_name = "timed"
    structured_output = "native"
    log: list[tuple[str, str, str]] = []  # (event, model, kind), in the order they happened
    check_s = 0.0
    #: when set, checks hang instead (:meth:`_hang_past_the_deadline`) and record the loop
    #: clock's offset at which they were given up
    hang_checks_deadline_s: float | None = None
    checks_cut_at_offset_s: list[float] = []
    synthesized: asyncio.Event | None = None

    async def complete(self, request: CompletionRequest) -> Completion:
        kind: str = request.task
        if kind == "review":
            earlier = sum(
                1 for e, m, k in self.log if e == "start" and m == self.model_name and k != "answer"
            )
            kind = "check" if earlier else "review"
        self.log.append(("start", self.model_name, kind))
        if kind == "check" and self.hang_checks_deadline_s is not None:
            await self._hang_past_the_deadline(self.hang_checks_deadline_s)
        await asyncio.sleep(self.check_s if kind == "check" else 0.01)
        self.log.append(("end", self.model_name, kind))
        if kind == "synthesize" and self.synthesized is not None:
            self.synthesized.set()
        if request.response_schema is not None:
            labels = request.response_schema["properties"]["ranking"]["items"]["enum"]
            verdict = {"ranking": labels, "scores": {label: 5 for label in labels}}
            return Completion(
                text=json.dumps(verdict),
                model=f"timed:{self.model_name}",
                usage=Usage.from_counts(2, 1),
                channel="structured",
            )
        return Completion(
            text=f"text by {self.model_name}",
            model=f"timed:{self.model_name}",
            usage=Usage.from_counts(2, 1),
        )

    async def _hang_past_the_deadline(self, deadline_s: float) -> None:
        """Hang; once the chairman has answered, the first check moves the loop clock
        (tests/fakes/virtual_clock.py) to 90% of the deadline, past the reviews' 80% share,
        lets the loop run, then past the deadline. Where a check is given up is read on the
        clock the deadline uses, so a loaded machine cannot move it."""
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SteppedClockLoop) and self.synthesized is not None
        try:
            await self.synthesized.wait()
            if not self.checks_cut_at_offset_s and loop.offset_s == 0.0:
                loop.advance(0.9 * deadline_s)
                for _ in range(10):  # a check cut at the reviews' share would be cut here
                    await asyncio.sleep(0)
                loop.advance(0.2 * deadline_s)
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.checks_cut_at_offset_s.append(loop.offset_s)
            raise


@pytest.fixture
def timed() -> Iterator[type[TimedProvider]]:
    TimedProvider.log = []
    TimedProvider.check_s = 0.0
    TimedProvider.hang_checks_deadline_s = None
    TimedProvider.checks_cut_at_offset_s = []
    TimedProvider.synthesized = None
    register_provider("timed", lambda name, options: TimedProvider(name))
    yield TimedProvider
    unregister_provider("timed")


def council(**fields: Any) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"timed:{n}") for n in NAMES),
        chairman=CouncilMember(name="chair", spec="timed:chair"),
        bias_check_probability=1.0,
        **fields,
    )


def index(log: list[tuple[str, str, str]], event: str, kind: str, first: bool = True) -> int:
    positions = [i for i, (e, _, k) in enumerate(log) if (e, k) == (event, kind)]
    return positions[0] if first else positions[-1]


def test_with_one_slot_no_counted_call_ever_queues_behind_a_check(timed: Any) -> None:
    timed.check_s = 0.2  # slow checks; with max_concurrency 1 they used to hold the only slot
    result = asyncio.run(
        run_full_council("q?", config=council(max_concurrency=1), seed=4, middleware=[])
    )
    log = timed.log
    assert (
        [k for e, _, k in log if e == "start"].count("check") == 3 == len(result.bias_check_reviews)
    )
    # every counted review ended before the first check started ...
    assert index(log, "end", "review", first=False) < index(log, "start", "check")
    # ... and the chairman's request left before any check's, and ended before they did
    assert index(log, "start", "synthesize") < index(log, "start", "check")
    assert index(log, "end", "synthesize") < index(log, "end", "check", first=False)
    assert all(r.ok for r in result.stage2) and not result.stage3.is_fallback
    assert result.metadata["bias_checks"]["calls"] == 3
    assert result.metadata["bias_checks"]["parsed"] == 3
    # the checks still cost tokens, and the session total says so: 7 counted calls + 3 checks
    assert result.metadata["token_usage"]["input_tokens"] == 2 * (3 + 3 + 1 + 3)


def test_hanging_checks_use_their_own_deadline_not_the_reviews_share(timed: Any) -> None:
    # the reviews may run until 80% of the deadline; checks that hang past it are given up
    # at the session deadline without touching a counted call or the deadline flags
    # on the stepped clock (tests/fakes/virtual_clock.py): the counted calls have real time
    # to spare, and the checks hang until the loop clock passes 90% then 110% of 60 s
    timed.hang_checks_deadline_s = 60.0
    timed.synthesized = asyncio.Event()
    config = council(session_deadline_s=60.0)
    result, _ = run_on_stepped_clock(run_full_council("q?", config=config, seed=4, middleware=[]))

    assert all(r.ok for r in result.stage2) and not result.stage3.is_fallback
    assert result.metadata["degraded"] == []
    assert result.metadata["deadline_reached"] is False
    assert result.metadata["calls_given_up_at_deadline"] == 0
    checks = result.bias_check_reviews
    assert len(checks) == 3 and all(c.parse_status == "missing" for c in checks)
    assert all("session deadline of 60 s reached" in (c.error or "") for c in checks)
    assert all("review stage" not in (c.error or "") for c in checks)  # their own budget
    # given up past the deadline (66 s on the loop clock), none at 54 s (past the reviews'
    # 48 s share): each check's own deadline is the session's
    assert timed.checks_cut_at_offset_s == [66.0, 66.0, 66.0]
    summary = result.metadata["bias_checks"]
    assert summary["calls"] == 3 and summary["parsed"] == 0


def test_without_checks_nothing_is_scheduled(timed: Any) -> None:
    config = council().model_copy(update={"bias_check_probability": 0.0})
    result = asyncio.run(run_full_council("q?", config=config, seed=4, middleware=[]))
    assert [k for e, _, k in timed.log if e == "start"].count("check") == 0
    assert result.bias_check_reviews == [] and "bias_checks" not in result.metadata
