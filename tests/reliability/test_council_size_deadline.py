"""The session deadline holds for CPU-bound members too (issue 26 item 5).

Simulated members do their work on the event loop: a reply is CPU time, not a wait, so
no timeout can interrupt it. The deadline is checked before every call and, in stage 2,
before a review's prompt (every answer, concatenated) is even built: past the review
share, a reviewer costs nothing. What is left is at most the call running at the
deadline and the chairman's call started before it (each ~0.2 s here, measured).
"""

from __future__ import annotations

import asyncio

from llm_council import run_full_council
from llm_council.config import MAX_COUNCIL_MEMBERS, CouncilConfig, CouncilMember

DEADLINE_S = 1.0
#: one CPU-bound review in flight at the review deadline, plus the chairman's call started
#: before the session deadline (0.19 s each measured, alone) on a shared 2-core machine
MARGIN_S = 0.8


def _large_council(deadline_s: float) -> CouncilConfig:
    # 15,000-word answers: a review prompt of ~3 MB per reviewer, ~0.16 s of CPU per review
    options = {"answer_mean_words": 15_000, "answer_length_sigma": 0.0}
    members = tuple(
        CouncilMember(name=f"m{i}", spec="simulated:balanced", options=options)
        for i in range(MAX_COUNCIL_MEMBERS)
    )
    return CouncilConfig(
        members=members,
        chairman=CouncilMember(name="chair", spec="simulated:balanced"),
        session_deadline_s=deadline_s,
    )


def test_a_large_cpu_bound_council_ends_near_its_deadline_and_says_what_was_cut() -> None:
    config = _large_council(DEADLINE_S)
    result = asyncio.run(
        run_full_council("Explain tail latency.", config=config, seed=5, middleware=[])
    )
    metadata = result.metadata
    # uncut, this council's stage 2 takes ~8 s (32 reviews of ~0.25 s)
    assert metadata["duration_s"] < DEADLINE_S + MARGIN_S, metadata["stage_durations_s"]
    assert metadata["deadline_reached"] is True
    cut = [r for r in result.stage2 if r.parse_status == "missing"]
    done = [r for r in result.stage2 if r.ok]
    assert cut and done and len(cut) + len(done) == len(result.stage2) == MAX_COUNCIL_MEMBERS
    for review in cut:
        assert review.error is not None and "session deadline of 1 s reached" in review.error
        assert review.attempts == 0  # never sent, its prompt never built
    degraded_reviews = [d for d in metadata["degraded"] if d["stage"] == "review"]
    assert len(degraded_reviews) == len(cut)
    assert all("session deadline" in d["error"] for d in degraded_reviews)
    given_up = sum("session deadline" in d["error"] for d in metadata["degraded"])
    assert metadata["calls_given_up_at_deadline"] >= given_up > 0
