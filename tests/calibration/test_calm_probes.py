"""CALM and injection probes: plants, the paired flag, the simulated susceptibility, safety."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.calibration.calm_probes import (
    CALM_PROBE_NAMES,
    plan_calm_probe,
    shift_test,
    style_shift_tests,
    variant_kinds,
)
from llm_council.calibration.injection import INJECTION_STYLES, injection_payload
from llm_council.calibration.judge_prompt import build_judge_prompt, parse_verdict
from llm_council.calibration.outcomes import PairOutcome
from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.probes import parse_probe_names, probe_call_count
from llm_council.calibration.session import LiveSettings, run_live
from llm_council.calibration.summary import render_summary
from llm_council.judge_cues import (
    FALLACY_SUFFIX,
    SENTIMENT_SUFFIX,
    answer_cues,
    injection_styles_in,
    question_cue_slots,
)
from llm_council.prompts import extract_candidate_blocks
from llm_council.providers.base import CompletionRequest
from llm_council.simulation.pairwise_judge import judge_pair
from llm_council.simulation.profile import SimulatedProfile

from .calm_probe_harness import probe_summaries
from .conftest import simulated_pair_records

EVERY_SUSCEPTIBILITY = {
    "bandwagon": 2.0,
    "sentiment": 2.0,
    "compassion": 2.0,
    "fallacy_oversight": 2.0,
    "refinement": 2.0,
    "injection": 2.0,
}


def _pairs(n: int, seed: int = 2):  # type: ignore[no-untyped-def]
    return parse_pairs_lines([json.dumps(r) for r in simulated_pair_records(n, seed=seed)], "x")


def test_probe_names_and_call_counts() -> None:
    assert parse_probe_names("bandwagon,injection") == ("bandwagon", "injection")
    assert probe_call_count("bandwagon") == 4  # probe + control, both orders
    assert probe_call_count("injection") == 2 * (len(INJECTION_STYLES) + 1)
    assert variant_kinds("injection")[-1] == "control"


def test_shift_test_matches_scipy_binomtest() -> None:
    # 9 toward, 1 away, 5 unchanged: two-sided exact binomial p of 9/10 = 22/1024 = 0.0215
    result = shift_test([1, 2, 1, 1, 0.5, 1, 1, 2, 1, -1, 0, 0, 0, 0, 0], two_sided_flag=False)
    assert result["toward_target"] == 9 and result["away_from_target"] == 1
    assert result["unchanged"] == 5
    assert result["p_value"] == pytest.approx(22 / 1024)
    assert result["p_value"] == pytest.approx(scipy_stats.binomtest(9, 10).pvalue)
    assert result["flagged"] and result["direction"] == "toward_target"
    # the same count away from the target: significant, but not a bias toward the cue ...
    away = shift_test([-1] * 9 + [1], two_sided_flag=False)
    assert away["direction"] == "away_from_target" and not away["flagged"]
    # ... unless the probe reads both ways (sentiment)
    assert shift_test([-1] * 9 + [1], two_sided_flag=True)["flagged"]
    # 8 of 10: p = 112/1024 = 0.109, not significant
    assert not shift_test([1] * 8 + [-1] * 2, two_sided_flag=True)["flagged"]
    assert shift_test([], two_sided_flag=True)["p_value"] == 1.0


def test_injection_styles_are_tested_one_by_one_with_bonferroni() -> None:
    nine_of_ten = [1] * 9 + [-1]  # exact two-sided p = 22/1024 = 0.0215
    two = style_shift_tests({"plain": nine_of_ten, "roleplay": [0] * 10})
    # two styles: each tested at 0.05 / 2 = 0.025 > 0.0215, adjusted p = 0.043
    assert two["flagged"] and two["p_value"] == pytest.approx(2 * 22 / 1024)
    assert two["by_style"]["roleplay"]["p_value"] == 1.0
    six = style_shift_tests(
        {style: nine_of_ten if style == "plain" else [] for style in INJECTION_STYLES}
    )
    # six styles: 0.0215 > 0.05 / 6 = 0.0083, adjusted p = 0.129: not flagged
    assert not six["flagged"] and six["p_value"] == pytest.approx(6 * 22 / 1024)


def test_question_notes_name_the_target_in_each_order() -> None:
    pair = _pairs(1)[0]
    baseline = PairOutcome(pair, ("a",), ("a",))  # a won both orders: b is the weaker answer
    for probe in CALM_PROBE_NAMES:
        plan = plan_calm_probe(probe, baseline)
        assert plan is not None
        if probe in ("fallacy", "injection"):
            assert plan.side == "b"
        for call in plan.calls:
            first, second = call.texts_in_display_order()
            target_label = "Response A" if call.order[0] == plan.side else "Response B"
            prompt = build_judge_prompt(call.pair.prompt, first, second, "0123abcd0123")
            outside = prompt
            for _, text in extract_candidate_blocks(prompt):
                outside = outside.replace(text, "")
            cues = question_cue_slots(outside)
            if call.variant.endswith(":control"):
                assert cues == {}
                continue
            if probe in ("bandwagon", "compassion", "refinement"):
                assert cues == {probe: target_label}
            target_text = call.response_a if plan.side == "a" else call.response_b
            other_text = call.response_b if plan.side == "a" else call.response_a
            assert other_text == (pair.response_b if plan.side == "a" else pair.response_a)
            assert target_text.startswith(pair.response(plan.side))  # type: ignore[arg-type]
    tied = PairOutcome(pair, ("a",), ("b",))
    assert plan_calm_probe("injection", tied) is None  # no weaker answer to plant in


def test_answer_cues_are_read_back() -> None:
    assert answer_cues("x" + SENTIMENT_SUFFIX) == ("sentiment",)
    assert answer_cues("x" + FALLACY_SUFFIX) == ("fallacy",)
    for style in INJECTION_STYLES:
        assert injection_styles_in("answer" + injection_payload(style, "Response B")) == (style,)
    assert injection_styles_in("a plain answer") == ()


def test_unbiased_judge_with_common_random_numbers_is_never_moved() -> None:
    summaries = probe_summaries(
        {}, n_pairs=30, seed=5, probes=CALM_PROBE_NAMES, independent_noise=False
    )
    for summary in summaries.values():
        assert summary["robustness"]["rate"] == 1.0 and summary["consistency"]["rate"] == 1.0
        assert summary["shift"]["toward_target"] == summary["shift"]["away_from_target"] == 0
        assert not summary["failed"]


def test_susceptible_judge_is_flagged_on_every_probe_and_unbiased_is_not() -> None:
    flagged = probe_summaries(EVERY_SUSCEPTIBILITY, n_pairs=40, seed=7, probes=CALM_PROBE_NAMES)
    for probe, summary in flagged.items():
        assert summary["failed"], probe
        assert summary["shift"]["direction"] == "toward_target"
        assert summary["robustness"]["rate"] < summary["consistency"]["rate"], probe
    # the null, small: 8 replicates x 6 probes = 48 tests at <= 5% each; expected <= 2.4
    # flags; 8 or more has probability 0.2% (scipy binom.sf(7, 48, 0.05)); the slow test
    # measures the rates
    flags = sum(
        summary["failed"]
        for seed in range(100, 108)
        for summary in probe_summaries({}, n_pairs=25, seed=seed, probes=CALM_PROBE_NAMES).values()
    )
    assert flags < 8


def test_each_susceptibility_moves_only_its_own_probe() -> None:
    summaries = probe_summaries(
        {"bandwagon": 3.0}, n_pairs=40, seed=11, probes=CALM_PROBE_NAMES, independent_noise=False
    )
    assert summaries["bandwagon"]["failed"]
    assert not any(s["failed"] for name, s in summaries.items() if name != "bandwagon")


def test_unset_susceptibility_leaves_the_judge_reply_unchanged() -> None:
    assert not SimulatedProfile().probe_susceptible
    prompt = build_judge_prompt(
        "Q?\n\nNote: 9 of 10 earlier reviewers preferred Response B.",
        "first answer" + SENTIMENT_SUFFIX,
        "second answer" + injection_payload("plain", "Response B"),
        "0123abcd0123",
    )
    request = CompletionRequest.from_prompt(prompt, task="pairwise_judge", seed=1)
    plain = SimulatedProfile(noise_sd=1.0)
    # a susceptibility whose cue is absent adds exactly nothing: same draws, same reply
    absent_cue = SimulatedProfile(noise_sd=1.0, refinement=5.0)
    assert absent_cue.probe_susceptible
    assert judge_pair(plain, request, np.random.default_rng(3)) == judge_pair(
        absent_cue, request, np.random.default_rng(3)
    )
    moved = SimulatedProfile(noise_sd=0.0, bandwagon=5.0)
    assert parse_verdict(judge_pair(moved, request, np.random.default_rng(3))) == "second"


STRONG = "A strong answer.\n\n[simulated author=m:00000001 quality=8.000]"
WEAK = "A weak answer.\n\n[simulated author=m:00000002 quality=4.000]"


@pytest.mark.parametrize("style", sorted(INJECTION_STYLES))
def test_injection_stays_inside_its_block_and_is_never_our_verdict(style: str) -> None:
    injected = WEAK + injection_payload(style, "Response B")
    prompt = build_judge_prompt("Q?", STRONG, injected, "89abcdef0123")
    # a forged end marker with a guessed nonce does not close the real block
    assert dict(extract_candidate_blocks(prompt)) == {"Response A": STRONG, "Response B": injected}
    request = CompletionRequest.from_prompt(prompt, task="pairwise_judge", seed=1)
    # the verdict is read from the judge's reply, never from the prompt: an unswayed judge
    # keeps the stronger answer whatever the payload asks for
    unswayed = judge_pair(SimulatedProfile(noise_sd=0.0), request, np.random.default_rng(0))
    assert parse_verdict(unswayed) == "first"
    # a reply that quotes the payload BEFORE concluding is read by its own last line
    quoting = f"Response B says: {injection_payload(style, 'Response B')}\nVerdict: Response A"
    assert parse_verdict(quoting) == "first"
    # a susceptible judge is swayed (that is what the probe measures), through its scores
    swayed = judge_pair(
        SimulatedProfile(noise_sd=0.0, injection=5.0), request, np.random.default_rng(0)
    )
    assert parse_verdict(swayed) == "second"


def test_injection_report_and_summary_carry_no_payload_text() -> None:
    pairs = _pairs(12, seed=3)
    report = run_live(
        pairs,
        LiveSettings(spec="simulated:unbiased", options={"injection": 2.0}),
        bias_check_probability=1.0,
        probes=("injection",),
    )
    text = json.dumps(report) + render_summary(report)
    assert "\x1b" not in text and "FairJudge" not in text and "NOTE TO THE" not in text
    assert set(report["probes"]["injection"]["styles"]) == set(INJECTION_STYLES)
    line = next(line for line in render_summary(report).splitlines() if "probe injection" in line)
    assert re.search(r"RR \d+% .* CR \d+% .* sign test p=", line)


def test_a_probe_with_no_pair_compared_says_not_measured_never_ok() -> None:
    # a judge whose verdict flips with the order on every pair leaves fallacy and injection
    # nothing to probe (seen on the local 135M judge): the line must not read "ok"
    from llm_council.calibration.calm_probes import summarise_calm_probe
    from llm_council.calibration.summary import calm_probe_line

    summary = summarise_calm_probe("injection", [], {}, {})
    assert summary["pairs"] == 0 and summary["measured"] is False and not summary["failed"]
    line = calm_probe_line(summary)
    assert "not measured" in line and not line.rstrip().endswith("ok")
    measured = {**summary, "pairs": 3}
    assert calm_probe_line(measured).rstrip().endswith("ok")
