"""The session deadline holds for CPU-bound members too (issue 26 item 5), on any machine.

Simulated members do their work on the event loop: a reply is CPU time, not a wait, so
no timeout can interrupt it. The deadline is checked before every call and, in stage 2,
before a review's prompt (every answer, concatenated) is even built: past the review
share, a reviewer costs nothing. What is left is at most the call running at the
deadline and the chairman's call started before it.

The clock is the loop's own, moved by each member's stated cost (tests/fakes/
virtual_clock.py), so where the deadline falls depends on the costs, never on how loaded
the machine is (issue 37 A.12: the wall-clock version failed under load with stage 1
itself cut). How long such a council takes on real hardware is a benchmark
(benchmarks/council_deadline.py), not a test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.virtual_clock import CostlyProvider, run_on_stepped_clock
from llm_council import run_full_council
from llm_council.config import MAX_COUNCIL_MEMBERS, CouncilConfig, CouncilMember
from llm_council.providers.calling import STAGE_DEADLINE_SHARES
from llm_council.providers.registry import register_provider, unregister_provider

DEADLINE_S = 1000.0
#: seconds of the loop's clock per call: 32 answers take 320 s (under the answer stage's
#: 500 s), reviews from 320 s on, 50 s each, so the 800 s review share falls inside the
#: 10th review; real time (well under 1 s here, a few seconds on a loaded machine) is
#: small against the 30 s between the 9th review's end (770 s) and that share
COSTS_S = {"answer": 10.0, "review": 50.0, "synthesize": 10.0}
REVIEWS_DONE = 10  # the reviews that start before 800 s: at 320, 370, ..., 770


@pytest.fixture
def costly_members() -> Iterator[None]:
    register_provider("costly", lambda name, options: CostlyProvider(name, COSTS_S, **options))
    yield
    unregister_provider("costly")


def _large_council(deadline_s: float) -> CouncilConfig:
    members = tuple(
        CouncilMember(name=f"m{i}", spec="costly:balanced") for i in range(MAX_COUNCIL_MEMBERS)
    )
    return CouncilConfig(
        members=members,
        chairman=CouncilMember(name="chair", spec="costly:balanced"),
        session_deadline_s=deadline_s,
    )


def test_a_large_cpu_bound_council_ends_near_its_deadline_and_says_what_was_cut(
    costly_members: None,
) -> None:
    assert STAGE_DEADLINE_SHARES["answer"] == 0.5 and STAGE_DEADLINE_SHARES["review"] == 0.8
    config = _large_council(DEADLINE_S)
    result, took_s = run_on_stepped_clock(
        run_full_council("Explain tail latency.", config=config, seed=5, middleware=[])
    )
    metadata = result.metadata
    # stage 1 is never cut: 32 answers cost 320 s of a 500 s share
    assert all(answer.ok for answer in result.stage1)
    # uncut, stage 2 would cost 32 x 50 = 1600 s; the review share ends it at 800 s with the
    # review in flight, then the chairman (started before 1000 s) costs 10 s
    assert 320 + REVIEWS_DONE * 50 + 10 <= took_s < 320 + REVIEWS_DONE * 50 + 10 + 30, took_s
    assert took_s < DEADLINE_S + COSTS_S["synthesize"]
    assert metadata["deadline_reached"] is True
    cut = [r for r in result.stage2 if r.parse_status == "missing"]
    done = [r for r in result.stage2 if r.ok]
    assert len(done) == REVIEWS_DONE and len(cut) == MAX_COUNCIL_MEMBERS - REVIEWS_DONE
    assert len(cut) + len(done) == len(result.stage2) == MAX_COUNCIL_MEMBERS
    for review in cut:
        assert review.error is not None and "session deadline of 1000 s reached" in review.error
        assert review.attempts == 0  # never sent, its prompt never built
    degraded_reviews = [d for d in metadata["degraded"] if d["stage"] == "review"]
    assert len(degraded_reviews) == len(cut)
    assert all("session deadline" in d["error"] for d in degraded_reviews)
    given_up = sum("session deadline" in d["error"] for d in metadata["degraded"])
    assert metadata["calls_given_up_at_deadline"] >= given_up > 0
    assert not result.stage3.is_fallback  # the chairman started in time


def test_a_council_inside_its_deadline_is_not_cut(costly_members: None) -> None:
    """The same council with room to spare: nothing given up (the cut above is the deadline's)."""
    result, took_s = run_on_stepped_clock(
        run_full_council("Explain tail latency.", config=_large_council(10_000.0), seed=5)
    )
    assert result.metadata["deadline_reached"] is False
    assert all(r.ok for r in result.stage2) and len(result.stage2) == MAX_COUNCIL_MEMBERS
    assert 32 * 10 + 32 * 50 + 10 <= took_s < 32 * 10 + 32 * 50 + 10 + 30
