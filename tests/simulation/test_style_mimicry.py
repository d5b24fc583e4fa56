"""The simulated judge's style mimicry and the answers' member-specific style, end to end:
a live council with one mimicking judge, audited, then ``bias-report`` names that judge."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import store_path
from llm_council.bias_audit.report import build_report
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.simulation.answers import draw_answer, sentence_weights
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.reviewer import PerceivedCandidate, expected_score
from llm_council.text_similarity import ngram_cosine

QUERY = "How do I reduce tail latency?"


def test_answer_style_zero_draws_exactly_as_before() -> None:
    # the default answer is the one drawn with uniform sentence choice (no weights at all)
    assert sentence_weights("m0:1234abcd", 0.0) is None
    first = draw_answer(QUERY, SimulatedProfile(), "m0:1", np.random.default_rng(5))
    again = draw_answer(QUERY, SimulatedProfile(answer_style=0.0), "m0:1", np.random.default_rng(5))
    assert first == again


def test_answer_style_is_fixed_per_member_and_differs_between_members() -> None:
    weights = sentence_weights("alpha:0001", 2.0)
    assert weights is not None and weights.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(weights, sentence_weights("alpha:ffff", 2.0))
    assert not np.allclose(weights, sentence_weights("beta:0001", 2.0))
    rng = np.random.default_rng(0)
    styled = SimulatedProfile(answer_style=2.0)

    def answer(member: str) -> str:
        return draw_answer(QUERY, styled, f"{member}:x", rng)

    same = np.mean([ngram_cosine(answer("alpha"), answer("alpha")) for _ in range(20)])
    other = np.mean([ngram_cosine(answer("alpha"), answer("beta")) for _ in range(20)])
    assert same > other + 0.05


def test_mimicry_adds_points_per_unit_of_similarity_centred_at_a_half() -> None:
    profile = SimulatedProfile(style_mimicry=4.0)
    base = PerceivedCandidate(label="A", display_index=0, words=200, quality=6.0, is_own=False)
    like = PerceivedCandidate(**{**base.__dict__, "similarity_to_own": 0.75})
    own = PerceivedCandidate(**{**base.__dict__, "is_own": True, "similarity_to_own": 1.0})
    assert expected_score(profile, base) == pytest.approx(6.0)
    assert expected_score(profile, like) == pytest.approx(6.0 + 4.0 * 0.25)
    assert expected_score(profile, own) == pytest.approx(6.0)  # its own answer: no mimicry


def test_a_live_mimicking_judge_is_named_by_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    # quality centred at 5 keeps the mimic's bonus (about +2 at these similarities) off
    # the ceiling of 10, where a clipped score could not show it
    style = {"answer_style": 2.0, "noise_sd": 0.3, "quality_mean": 5.0}
    members = tuple(
        CouncilMember(
            name=f"m{i}",
            spec="simulated:unbiased",
            options={**style, "style_mimicry": 10.0} if i == 0 else style,
        )
        for i in range(4)
    )
    config = CouncilConfig(
        members=members, chairman=CouncilMember(name="chair", spec="simulated:unbiased")
    )

    # 40 sessions: style mimicry is an exploratory family, tested at a quarter of a primary
    # family's weight in the report-wide procedure (ADR 0060); at 25 sessions its p (about
    # 0.003) was a finding under equal shares and is not under the weights
    async def sessions() -> None:
        for seed in range(40):
            await run_full_council(QUERY, config=config, seed=seed)

    asyncio.run(sessions())
    report = build_report(store_path(), n_resamples=10)
    assert report.families is not None and report.families.style_mimicry is not None
    by_name = {item.reviewer: item for item in report.families.style_mimicry.reviewers}
    mimic = by_name["m0"]
    assert mimic.detected and mimic.slope.ci_low > 2.0
    # integer scores and the clip attenuate the configured 10 points per unit, not beyond it
    assert mimic.slope.estimate < 12.0
