"""Holm's adjustment and the step-down leniency reference, against hand derivations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.reviewers.robust_leniency import (
    paired_deviation_by_session,
    step_down_leniency,
)


def test_holm_adjusted_matches_hand_derivation() -> None:
    # sorted p = 0.01, 0.02, 0.03, 0.04 (m = 4): 4*0.01 = 0.04, 3*0.02 = 0.06,
    # 2*0.03 = 0.06 -> max(0.06, 0.06) = 0.06, 1*0.04 = 0.04 -> running max 0.06
    adjusted = holm_adjusted([0.03, 0.01, 0.04, 0.02])
    assert adjusted == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # NaN is not a hypothesis: m = 2 here, 2*0.2 = 0.4, then min(1, 0.5) -> 0.5
    with_nan = holm_adjusted([0.5, np.nan, 0.2])
    assert with_nan[0] == pytest.approx(0.5) and with_nan[2] == pytest.approx(0.4)
    assert np.isnan(with_nan[1])
    # sorted 0.2, 0.9: 2*0.2 = 0.4, then max(0.4, 1*0.9) = 0.9; and 2*0.8 = 1.6 caps at 1
    assert holm_adjusted([0.9, 0.2]) == pytest.approx([0.9, 0.4])
    assert holm_adjusted([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_paired_deviation_against_a_reference_subset() -> None:
    # one session, one answer, reviewers 0, 1, 2 score 4, 6, 8; the reference is {1, 2}.
    # reviewer 0 (outside): 4 - mean(6, 8) = -3; reviewer 1: 6 - 8 = -2; reviewer 2: 8 - 6 = 2
    deviation = paired_deviation_by_session(
        [0, 0, 0], [0, 0, 0], [0, 1, 2], [4.0, 6.0, 8.0], [False] * 3, np.array([False, True, True])
    )
    assert deviation[:, 0] == pytest.approx([-3.0, -2.0, 2.0])


def test_self_reviews_are_neither_leniency_nor_reference() -> None:
    # reviewer 0 scores its own answer 10: left out of its leniency and of reviewer 1's
    # reference, so reviewer 1 (score 5 vs reviewer 2's 7) has deviation -2 and
    # reviewer 0 has no comparable score (NaN)
    deviation = paired_deviation_by_session(
        [0, 0, 0], [0, 0, 0], [0, 1, 2], [10.0, 5.0, 7.0], [True, False, False], np.ones(3, bool)
    )
    assert np.isnan(deviation[0, 0])
    assert deviation[1, 0] == pytest.approx(-2.0)


def _council(n_sessions: int, offsets: list[float], seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    n_answers_per_session = 4
    rows = []
    for s in range(n_sessions):
        for a in range(n_answers_per_session):
            quality = rng.normal(0, 1.5)
            for r, offset in enumerate(offsets):
                rows.append((s * n_answers_per_session + a, s, r, quality + offset + rng.normal()))
    answer, session, reviewer, score = (np.array(column) for column in zip(*rows, strict=True))
    return answer, session, reviewer, score, np.zeros(score.size, bool)


def test_one_harsh_reviewer_does_not_make_the_others_generous() -> None:
    data = _council(150, [-1.5, 0.0, 0.0, 0.0, 0.0], seed=3)
    results = step_down_leniency(*data, n_reviewers=5)
    assert results[0].flagged and not results[0].in_reference
    assert results[0].estimate.estimate == pytest.approx(-1.5, abs=0.15)
    for neutral in results[1:]:
        assert not neutral.flagged and neutral.in_reference
        assert abs(neutral.estimate.estimate) < 0.15  # not +1.5/4 = +0.375
    # the naive reference (all others) does label the neutral ones: what this fixes
    naive = paired_deviation_by_session(*data, np.ones(5, bool))
    naive_p = [scipy_stats.ttest_1samp(row, 0.0).pvalue for row in naive[1:]]
    assert max(naive_p) < 0.05


def test_estimates_equal_the_t_interval_over_session_means() -> None:
    data = _council(30, [0.5, 0.0, 0.0], seed=5)
    results = step_down_leniency(*data, n_reviewers=3)
    reference = np.array([result.in_reference for result in results])
    per_session = paired_deviation_by_session(*data, reference)
    for row, result in zip(per_session, results, strict=True):
        expected = scipy_stats.ttest_1samp(row, 0.0)
        assert result.estimate.estimate == pytest.approx(row.mean())
        assert result.estimate.p_value == pytest.approx(expected.pvalue)
        low, high = expected.confidence_interval(0.95)
        assert (result.estimate.ci_low, result.estimate.ci_high) == pytest.approx((low, high))


def test_at_most_a_minority_leaves_the_reference() -> None:
    # three reviewers at three different levels: only one can ever be removed
    data = _council(100, [-2.0, 0.0, 2.0], seed=9)
    results = step_down_leniency(*data, n_reviewers=3)
    assert sum(not result.in_reference for result in results) <= 1
