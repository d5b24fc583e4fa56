"""Each analysis on hand-made stores (values derived by hand) and on simulated councils."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from bias_audit.report.conftest import record_line, scores_to_lines
from llm_council.bias_audit.report import build_report, reliability_tier, render_text
from llm_council.errors import RecordError

Writer = Callable[[Sequence[str]], Path]

# Three reviewers score two answers (authors m1, m2 are not reviewers) in three sessions.
HAND_TABLE = {
    "s1": {"m1": {"r1": 5, "r2": 7, "r3": 9}, "m2": {"r1": 4, "r2": 4, "r3": 7}},
    "s2": {"m1": {"r1": 6, "r2": 6, "r3": 6}, "m2": {"r1": 3, "r2": 5, "r3": 7}},
    "s3": {"m1": {"r1": 8, "r2": 8, "r3": 5}, "m2": {"r1": 2, "r2": 4, "r3": 6}},
}


def test_leniency_is_paired_against_the_others_on_the_same_answers(write_lines: Writer) -> None:
    # r1's deviation = its score - mean of r2, r3 on the same answer:
    #   s1: 5 - 8 = -3,  4 - 5.5 = -1.5  -> session mean -2.25
    #   s2: 6 - 6 =  0,  3 - 6   = -3    -> -1.5
    #   s3: 8 - 6.5 = 1.5, 2 - 5 = -3    -> -0.75
    # leniency = mean(-2.25, -1.5, -0.75) = -1.5 with a t(2) interval over the 3 sessions.
    report = build_report(write_lines(scores_to_lines(HAND_TABLE)), n_resamples=20)
    r1 = next(p for p in report.profiles if p.reviewer == "r1")
    per_session = np.array([-2.25, -1.5, -0.75])
    low, high = scipy_stats.t.interval(0.95, 2, loc=-1.5, scale=scipy_stats.sem(per_session))
    assert r1.leniency.estimate == pytest.approx(-1.5)
    assert (r1.leniency.ci_low, r1.leniency.ci_high) == pytest.approx((low, high))
    assert r1.leniency_label == "neutral"  # the interval [-3.36, 0.36] includes 0
    assert r1.mean_score == pytest.approx(np.mean([5, 4, 6, 3, 8, 2]))
    assert r1.reliability == "insufficient"
    assert r1.n_sessions == 3 and r1.n_scores == 6


def test_reliability_tiers() -> None:
    assert [reliability_tier(n) for n in (0, 9, 10, 19, 20, 49, 50, 500)] == [
        "insufficient",
        "insufficient",
        "preliminary",
        "preliminary",
        "moderate",
        "moderate",
        "high",
        "high",
    ]


def test_missing_scores_are_counted_not_zero(write_lines: Writer) -> None:
    lines = scores_to_lines(HAND_TABLE)
    lines.append(
        record_line(session_id="s1", reviewer_id="r1", model_id="m3", score_value=None, rank=None)
    )
    report = build_report(write_lines(lines), n_resamples=20)
    r1 = next(p for p in report.profiles if p.reviewer == "r1")
    assert r1.n_missing_scores == 1
    assert r1.mean_score == pytest.approx(np.mean([5, 4, 6, 3, 8, 2]))


def test_empty_store_is_a_clear_error(write_lines: Writer) -> None:
    with pytest.raises(RecordError, match="no usable bias-audit records"):
        build_report(write_lines([]))


def test_known_biases_are_recovered(biased_store: Path) -> None:
    """The default council's configured biases, as the joint model should see them.

    Truth (simulation/profile.py, config/simulated_members.toml): harsh leniency -1.5,
    against the robust reference (the four others; harsh is flagged and removed) -1.5, not
    -1.2 as centring on all five would give; verbose verbosity 1.5 -> centred 1.2;
    primacy +1 at slot A for 1 of 5 reviewers -> slots B..E vs A: -0.2; narcissist +1.5.
    Clipping to 1..10 and rounding shrink these a little.
    """
    report = build_report(biased_store, n_resamples=100)
    effects = {(e.group, e.term): e for e in report.joint.effects}
    assert effects[("reviewer_leniency", "harsh")].estimate == pytest.approx(-1.5, abs=0.15)
    for other in ("verbose", "narcissist", "balanced"):
        assert abs(effects[("reviewer_leniency", other)].estimate) < 0.15, other
    # +1 at one slot of five raises primacy's average score by 1/5: the joint model's one
    # council-wide slot profile leaves that in its level (the position section shows why)
    assert effects[("reviewer_leniency", "primacy")].estimate == pytest.approx(0.2, abs=0.1)
    assert effects[("reviewer_verbosity", "verbose")].estimate == pytest.approx(1.2, abs=0.2)
    for slot in "BCDE":
        assert effects[("position", f"slot {slot}")].estimate == pytest.approx(-0.2, abs=0.1)
    assert effects[("self_review", "narcissist")].estimate == pytest.approx(1.5, abs=0.25)

    labels = {p.reviewer: p.leniency_label for p in report.profiles}
    assert labels["harsh"] == "harsh"
    assert report.position.council.direction == "primacy"
    assert report.position.council.test_p_value < 1e-4
    # per reviewer: only "primacy" (+1 at slot A) is flagged; centred on its own average
    # slot that is +1 - 1/5 = +0.8 at A and -0.2 elsewhere (shrunk a little by clipping)
    by_reviewer = {profile.subject: profile for profile in report.position.per_reviewer}
    primacy = by_reviewer["primacy"]
    assert primacy.flagged and primacy.direction == "primacy"
    assert primacy.slot_effect[0].estimate == pytest.approx(0.8, abs=0.15)
    assert primacy.slot_effect[0].ci_low > 0.5
    for slot_effect in primacy.slot_effect[1:]:
        assert slot_effect.estimate == pytest.approx(-0.2, abs=0.15)
    assert [name for name, p in by_reviewer.items() if p.flagged] == ["primacy"]
    assert report.length.pooled.ci_low > 0
    self_detected = {s.reviewer: s.detected for s in report.self_preference}
    assert self_detected["narcissist"]
    verbose_profile = next(p for p in report.profiles if p.reviewer == "verbose")
    assert verbose_profile.length_correlation.ci_low > 0.3

    board = {entry.model: entry for entry in report.leaderboard.entries}
    # the verbose member writes longer answers: ranked up by length, not after controlling it
    assert board["verbose"].strength.estimate > board["verbose"].length_controlled.estimate
    assert report.leaderboard.length_slope.ci_low > 0


def test_null_council_estimates_are_near_zero(null_store: Path) -> None:
    report = build_report(null_store, n_resamples=100)
    for profile in report.profiles:
        assert abs(profile.leniency.estimate) < 0.15
        assert profile.reliability == "high"
    for effect in report.joint.effects:
        assert abs(effect.estimate) < 0.25, effect
    assert abs(report.length.pooled.estimate) < 0.08
    for entry in report.leaderboard.entries:
        assert entry.strength.ci_low < entry.strength.estimate < entry.strength.ci_high


def test_models_never_compared_have_no_common_leaderboard(write_lines: Writer) -> None:
    # sessions s1-s3 rank m1 vs m2, sessions s4-s6 rank m3 vs m4: two islands, no scale
    table = {
        f"s{i}": {
            pair[0]: {"r1": 7.0, "r2": 6.0, "r3": 8.0},
            pair[1]: {"r1": 5.0, "r2": 4.0, "r3": 6.0 + i % 2},
        }
        for i, pair in enumerate([("m1", "m2")] * 3 + [("m3", "m4")] * 3, start=1)
    }
    report = build_report(write_lines(scores_to_lines(table)), n_resamples=20)
    assert report.leaderboard is None
    assert "Leaderboard === no rankings to compare" in render_text(report)


def test_a_model_that_always_scores_zero_has_mean_zero_not_missing(write_lines: Writer) -> None:
    # verdict-style scores (1 / 0.5 / 0): m3 loses every verdict, so its mean score is 0.0
    # exactly; it used to be shown as missing (NaN) because 0.0 is falsy
    table = {
        f"s{i}": {
            "m1": {"r1": 1.0, "r2": 1.0, "r3": 0.5 + 0.5 * (i % 2)},
            "m2": {"r1": 0.5, "r2": 0.5 * (i % 2), "r3": 0.5},
            "m3": {"r1": 0.0, "r2": 0.0, "r3": 0.0},
        }
        for i in range(1, 7)
    }
    report = build_report(write_lines(scores_to_lines(table)), n_resamples=20)
    board = {entry.model: entry for entry in report.leaderboard.entries}
    assert board["m3"].mean_score == 0.0
    # m1: r1 and r2 give 1 in all six sessions, r3 gives 1 in s1, s3, s5 and 0.5 in s2, s4,
    # s6: (12 + 3 + 1.5) / 18 = 0.91666...
    assert board["m1"].mean_score == pytest.approx(16.5 / 18)


def test_a_fixed_display_order_does_not_identify_slot_effects(write_lines: Writer) -> None:
    # scores_to_lines shows the models in sorted order to every reviewer in every session:
    # m1 is always at slot A, so slot and model cannot be told apart
    report = build_report(write_lines(scores_to_lines(HAND_TABLE)), n_resamples=20)
    assert report.position is not None
    council = report.position.council
    assert not council.identified and council.direction == "not identified"
    assert all(np.isnan(effect.estimate) for effect in council.slot_effect)
    assert np.isnan(council.test_p_value)
    assert not any(p.identified or p.flagged for p in report.position.per_reviewer)
    text = render_text(report)
    assert "Council: not identified (the display slot is confounded with the candidate)" in text
    assert report.joint is None or not report.joint.position_identified


def test_length_scatter_sample_is_full_and_the_same_on_every_run(biased_store: Path) -> None:
    """The plot's sample has all 1,500 points the store can give, drawn from the scored
    cells, in the same order with 1 or 2 DuckDB threads (a reservoir sample under the
    parallel scan came back with about 1,200 and changed from run to run)."""
    one = build_report(biased_store, n_resamples=20, threads=1).length
    two = build_report(biased_store, n_resamples=20, threads=2).length
    assert one is not None and two is not None
    assert len(one.sample_words) == len(one.sample_scores) == 1500 < one.n_records
    assert (one.sample_words, one.sample_scores) == (two.sample_words, two.sample_scores)
    assert len(set(zip(one.sample_words, one.sample_scores, strict=True))) > 100
