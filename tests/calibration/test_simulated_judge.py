"""The simulated pairwise judge: configured biases show up in the report, and the flags'
false-positive rates on a judge with no bias are measured (slow variants: ``-m slow``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_council.calibration.judge_prompt import build_judge_prompt, parse_verdict
from llm_council.calibration.pairs import Pair, parse_pairs_lines, shown_order, slot_to_original
from llm_council.calibration.report import PairOutcome, ReportOptions, compute_report
from llm_council.calibration.session import LiveSettings, run_live
from llm_council.providers.base import CompletionRequest
from llm_council.simulation.pairwise_judge import hashed_quality, judge_pair
from llm_council.simulation.profile import SimulatedProfile

from .conftest import simulated_pair_records


def _pairs(n: int, seed: int, **kwargs: object) -> list[Pair]:
    records = simulated_pair_records(n, seed=seed, **kwargs)  # type: ignore[arg-type]
    return parse_pairs_lines([json.dumps(r) for r in records], "sim")


def _simulate(
    profile: SimulatedProfile, pairs: list[Pair], seed: int, judge_name: str = "judge"
) -> list[PairOutcome]:
    """Judge in both orders by calling judge_pair directly (fast; no event loop)."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for pair in pairs:
        verdicts = {}
        for order in ("ab", "ba"):
            first, second = shown_order(order)
            prompt = build_judge_prompt(
                pair.prompt, pair.response(first), pair.response(second), "0123456789ab"
            )
            reply = judge_pair(
                profile,
                CompletionRequest.from_prompt(prompt, task="pairwise_judge"),
                rng,
                judge_name=judge_name,
            )
            slot = parse_verdict(reply)
            assert slot is not None
            verdicts[order] = slot_to_original(order, slot)
        outcomes.append(PairOutcome(pair, (verdicts["ab"],), (verdicts["ba"],)))
    return outcomes


def test_reply_is_deterministic_for_a_seed_and_parses() -> None:
    (pair,) = _pairs(1, seed=3)
    request = CompletionRequest.from_prompt(
        build_judge_prompt("q", pair.response_a, pair.response_b, "abcdef123456")
    )
    profile = SimulatedProfile(noise_sd=1.0)
    first = judge_pair(profile, request, np.random.default_rng(5))
    assert first == judge_pair(profile, request, np.random.default_rng(5))
    assert parse_verdict(first) in ("first", "second", "tie")


def test_hashed_quality_ignores_formatting_and_appended_text() -> None:
    profile = SimulatedProfile()
    text = " ".join(f"word{i}" for i in range(80))
    assert hashed_quality(text, profile) == hashed_quality(
        "**" + text.upper() + "** and more filler", profile
    )
    assert hashed_quality(text, profile) != hashed_quality("other " + text, profile)


def test_primacy_profile_is_detected_as_favoring_first() -> None:
    report = compute_report(
        _simulate(SimulatedProfile(position_effects=(1.5,), noise_sd=0.5), _pairs(150, 1), 2),
        ReportOptions(judge="primacy"),
    )
    bias = report["position_bias"]
    assert bias["direction"] == "favors_first"
    assert bias["direction_sign_test_p"] < 0.001
    assert bias["flip_rate"] > 0.3


def test_low_noise_unbiased_judge_grades_well_and_agrees_with_truth() -> None:
    profile = SimulatedProfile(noise_sd=0.2, score_decimals=2)
    report = compute_report(_simulate(profile, _pairs(150, 4), 5), ReportOptions(judge="unbiased"))
    assert report["grade"] == "A"
    assert report["human_agreement"]["trusted"] is True
    assert report["human_agreement"]["accuracy"]["rate"] > 0.85


def test_narcissist_prefers_its_own_answers_and_verbose_rewards_length() -> None:
    pairs = _pairs(200, 6, model_a="narcissist")
    own = compute_report(
        _simulate(SimulatedProfile(self_preference=2.0, noise_sd=0.8), pairs, 7, "narcissist"),
        ReportOptions(judge="simulated:narcissist"),
    )
    neutral = compute_report(
        _simulate(SimulatedProfile(noise_sd=0.8), pairs, 7, "narcissist"),
        ReportOptions(judge="simulated:narcissist"),
    )
    assert (
        own["self_preference"]["own_win_rate"]["ci_low"]
        > neutral["self_preference"]["own_win_rate"]["ci_high"]
    )
    verbose = compute_report(
        _simulate(SimulatedProfile(verbosity=2.0, noise_sd=0.8), pairs, 8), ReportOptions(judge="v")
    )
    assert verbose["verbosity"]["length_correlation"] > 0.3
    assert abs(neutral["verbosity"]["length_correlation"]) < 0.2


def _direction_false_positive_rate(replicates: int, n_pairs: int, alpha: float = 0.05) -> float:
    """How often the sign test on flip direction fires for a judge with no position effect."""
    profile = SimulatedProfile(noise_sd=1.0)
    fired = 0
    for replicate in range(replicates):
        outcomes = _simulate(profile, _pairs(n_pairs, 1000 + replicate), 2000 + replicate)
        fired += (
            compute_report(outcomes, ReportOptions(judge="null"))["position_bias"][
                "direction_sign_test_p"
            ]
            < alpha
        )
    return fired / replicates


def test_direction_test_false_positive_rate_quick() -> None:
    # 60 null replicates of 40 pairs; the exact sign test is conservative, so <= 5% in
    # expectation; 0.15 bounds binomial noise at n = 60 (P(X >= 9 | p = .05) ~ 0.01)
    assert _direction_false_positive_rate(60, 40) <= 0.15


@pytest.mark.slow
def test_direction_test_false_positive_rate_slow() -> None:
    # 1000 null replicates of 100 pairs: rate <= 0.05 + 3 * sqrt(0.05 * 0.95 / 1000) = 0.0707
    rate = _direction_false_positive_rate(1000, 100)
    print(f"direction sign test false-positive rate (1000 x 100 pairs, alpha 0.05): {rate:.3f}")
    assert rate <= 0.0707


def test_live_calibration_through_simulated_provider_with_bias_check() -> None:
    pairs = _pairs(40, 9, model_a="narcissist")
    report = run_live(
        pairs,
        LiveSettings(
            spec="simulated:narcissist", options={"self_preference": 3.0, "noise_sd": 0.5}
        ),
        bias_check_probability=1.0,
    )
    assert report["pairs_evaluated"] == 40
    assert report["self_preference"]["own_win_rate"]["rate"] > 0.6
    identity = report["probes"]["identity"]
    assert identity["failed"] is True  # signing with its own name wins it over
    assert (
        report["probes"]["distraction"]["robustness"]["rate"] == 1.0
    )  # nothing in the profile reacts to it


def _untrusted_rate(replicates: int, n_pairs: int) -> tuple[float, float]:
    """How often a good judge (low noise, humans = latent truth) is flagged untrusted, and its mean kappa."""
    profile = SimulatedProfile(noise_sd=0.3, score_decimals=1)
    flagged = 0
    kappas = []
    for replicate in range(replicates):
        outcomes = _simulate(profile, _pairs(n_pairs, 5000 + replicate), 6000 + replicate)
        humans = compute_report(outcomes, ReportOptions(judge="good"))["human_agreement"]
        flagged += humans["trusted"] is False
        kappas.append(humans["kappa"])
    return flagged / replicates, float(np.mean(kappas))


def test_human_threshold_rarely_flags_a_good_judge_quick() -> None:
    rate, mean_kappa = _untrusted_rate(30, 40)
    assert mean_kappa > 0.75
    assert rate <= 0.2


@pytest.mark.slow
def test_human_threshold_false_flag_rate_slow() -> None:
    rate, mean_kappa = _untrusted_rate(500, 40)
    print(
        f"good judge (mean human kappa {mean_kappa:.3f}) flagged untrusted at 0.6: {rate:.3f} of 500 runs x 40 pairs"
    )
    assert rate <= 0.1
