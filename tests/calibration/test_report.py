"""The report's definitions on small hand-built cases, derived by hand in comments."""

from __future__ import annotations

import pytest

from llm_council.calibration.pairs import Pair
from llm_council.calibration.report import PairOutcome, ReportOptions, compute_report, grade


def _pair(
    pair_id: str, human: str | None = None, a_words: int = 10, b_words: int = 10, **meta: str
) -> Pair:
    return Pair(
        pair_id=pair_id,
        prompt="q",
        response_a=" ".join(["w"] * a_words),
        response_b=" ".join(["w"] * b_words),
        human_label=human,  # type: ignore[arg-type]
        model_a=meta.get("model_a"),
        model_b=meta.get("model_b"),
    )


def _outcome(pair: Pair, ab: str, ba: str) -> PairOutcome:
    return PairOutcome(pair, tuple(ab.split()), tuple(ba.split()))


@pytest.mark.parametrize(
    ("kappa", "bias", "expected"),
    [
        (0.81, 0.09, "A"),
        (0.81, 0.10, "B"),  # bias must be strictly below 10% for A
        (0.8, 0.05, "B"),  # kappa must be strictly above 0.8 for A
        (0.61, 0.19, "B"),
        (0.61, 0.20, "C"),
        (0.41, 0.29, "C"),
        (0.41, 0.30, "D"),
        (0.21, 0.90, "D"),
        (0.2, 0.0, "F"),
        (-0.3, 0.5, "F"),
        (None, 0.1, None),
    ],
)
def test_grade_table(kappa: float | None, bias: float, expected: str | None) -> None:
    assert grade(kappa, bias) == expected


def test_consistency_flips_direction_and_human_agreement() -> None:
    outcomes = [
        _outcome(_pair("1", "a"), "a", "a"),  # consistent a
        _outcome(_pair("2", "b"), "b", "b"),  # consistent b
        _outcome(_pair("3", "a"), "a", "b"),  # first shown won twice: favors_first
        _outcome(_pair("4", "b"), "a", "b"),  # favors_first again
        _outcome(_pair("5", "tie"), "tie", "b"),  # lean +1 (b shown first in ba): favors_first
        _outcome(_pair("6", "a"), "b", "a"),  # second shown won twice: favors_second
        PairOutcome(_pair("7", "a"), ("a",), ()),  # order ba missing: unevaluated
    ]
    report = compute_report(outcomes, ReportOptions(judge="j"))
    assert report["pairs_evaluated"] == 6
    assert report["unevaluated"] == [{"id": "7", "reason": "missing order ba"}]
    # agreement 2/6; flips 4/6 with 3 toward first, 1 toward second
    assert report["consistency"]["percent_agreement"] == pytest.approx(2 / 6)
    bias = report["position_bias"]
    assert bias["flip_rate"] == pytest.approx(4 / 6)
    # 3 vs 1 is not significant (sign test p = 2 * 5/16 = 0.625): no direction is named
    assert (bias["flips_favoring_first"], bias["flips_favoring_second"], bias["direction"]) == (
        3,
        1,
        None,
    )
    assert bias["direction_sign_test_p"] == pytest.approx(0.625)
    # kappa between orders: ab = a b a a tie b ; ba = a b b b b a (categories a, b, tie)
    # p_o = 2/6; ab marginals a 3, b 2, tie 1; ba marginals a 2, b 4, tie 0
    # p_e = (3*2 + 2*4 + 1*0)/36 = 14/36 ; kappa = (12/36 - 14/36)/(22/36) = -2/22
    assert report["consistency"]["kappa"] == pytest.approx(-2 / 22)
    # 6 pairs: too few to grade or to give kappa an interval (issue 13.4: no zero-width
    # or tiny-n intervals); grade() itself would say F
    assert report["grade"] is None and report["grade_note"] == "too few pairs (n=6 < 10)"
    assert report["consistency"]["too_few"] and report["consistency"]["kappa_ci"] == [None, None]
    assert grade(report["consistency"]["kappa"], report["position_bias"]["flip_rate"]) == "F"
    # consolidated verdicts: a b tie tie tie tie vs human a b a b tie a -> 3 of 6 correct
    assert report["human_agreement"]["accuracy"]["rate"] == pytest.approx(0.5)
    assert report["human_agreement"]["trusted"] is False


def test_verbosity_prefers_longer_and_self_preference_by_family() -> None:
    outcomes = [
        _outcome(_pair("1", "a", 100, 10, model_a="gpt-4o", model_b="claude-3"), "a", "a"),
        _outcome(_pair("2", "b", 10, 100, model_a="gpt-4-turbo", model_b="llama"), "b", "b"),
        _outcome(
            _pair("3", "b", 100, 10, model_a="gpt-4", model_b="gpt-4o"), "a", "a"
        ),  # both own: skipped
        _outcome(_pair("4", "a", 10, 100, model_a="mistral", model_b="openai:gpt-4"), "b", "b"),
    ]
    report = compute_report(outcomes, ReportOptions(judge="openai:gpt-4o-mini"))
    # the longer answer won all 4 decisive pairs
    assert report["verbosity"]["prefers_longer"]["rate"] == 1.0
    assert report["verbosity"]["length_correlation"] == pytest.approx(1.0)
    own = report["self_preference"]
    # pairs 1, 2, 4 have exactly one gpt-4 answer; own won 1 and 4, lost 2
    assert (own["judge_family"], own["pairs_with_own_answer"], own["own_wins"]) == ("gpt-4", 3, 2)
    # humans preferred the gpt-4 answer in pair 1 only (of 3)
    assert own["human_own_win_rate"]["rate"] == pytest.approx(1 / 3)
    # own scores (own 1, other 0; ties left out), judge minus human: 1: 1-1, 2: 0-0, 4: 1-0
    assert own["excess_over_humans"]["estimate"] == pytest.approx(1 / 3)
    # 3 pairs are too few for an interval: no baseline verdict, no advice
    assert own["excess_over_humans"]["too_few"] and own["basis"] == "unadjusted"
    (item,) = [i for i in report["checklist"] if i["check"].startswith("own answers")]
    assert item["check"] == "own answers preferred (unadjusted)" and not item["failed"]


def test_repetition_stability() -> None:
    outcomes = [
        PairOutcome(_pair("1"), ("a", "a"), ("a", "b")),  # ab stable, ba unstable
        PairOutcome(_pair("2"), ("b", "b"), ("b",)),  # ab stable; ba has one repetition
    ]
    stability = compute_report(outcomes, ReportOptions(judge="j"))["repetition_stability"]
    assert stability["orders_with_repetitions"] == 3
    assert stability["all_repetitions_agree"]["successes"] == 2
    # rep1 vs rep2 over (a,a), (a,b), (b,b): p_o = 2/3; marginals a 2,b 1 vs a 1,b 2 -> p_e = 4/9
    assert stability["kappa_first_vs_second"] == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))


def test_no_repetitions_means_no_stability_section_and_undefined_kappa_ungraded() -> None:
    outcomes = [_outcome(_pair(str(i)), "a", "a") for i in range(3)]
    report = compute_report(outcomes, ReportOptions(judge="j"))
    assert report["repetition_stability"] is None
    assert report["consistency"]["kappa"] is None  # one category only: kappa undefined
    assert report["grade"] is None
