"""Effective score levels (stats/reliability/score_resolution.py) against hand-computed entropies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import entropy

from llm_council.stats.reliability.score_resolution import (
    score_resolution,
    score_resolution_from_counts,
)


def test_a_judge_that_always_says_seven_uses_one_level():
    result = score_resolution([7, 7, 7, 7], scale=(1, 10))
    assert result.effective_levels == 1.0
    assert result.distinct_levels == 1
    assert result.unused_levels == (1, 2, 3, 4, 5, 6, 8, 9, 10)


def test_even_spread_over_k_levels_is_k():
    assert score_resolution([1, 2, 3, 4] * 5).effective_levels == pytest.approx(4.0)


def test_seven_or_eight_against_scipy_entropy():
    scores = [7] * 30 + [8] * 10
    # H = -(0.75 log2 0.75 + 0.25 log2 0.25) = 0.8113 bits -> 2^H = 1.7548
    expected = 2 ** entropy([0.75, 0.25], base=2)
    assert expected == pytest.approx(1.7548, abs=1e-4)
    assert score_resolution(scores, scale=(1, 10)).effective_levels == pytest.approx(expected)


def test_non_finite_scores_are_left_out_and_nothing_is_none():
    assert score_resolution([]) is None
    assert score_resolution([math.nan, math.inf]) is None
    result = score_resolution([1.5, 2.5, math.nan], scale=(1, 10))
    assert result.n_scores == 2 and result.effective_levels == pytest.approx(2.0)
    assert 1 in result.unused_levels and 2 in result.unused_levels


# score_resolution_from_counts against score_resolution on the same scores expanded: the
# reference is the existing per-score function (itself checked above against scipy's entropy).

_COUNTED_CASES = [
    ([(1.0, 5), (2.0, 3), (7.0, 11), (10.0, 1)], (1, 10)),  # integer scores
    ([(0.5, 2), (1.5, 9), (2.0, 4), (4.5, 1)], (0, 5)),  # half points: counted by value
    ([(7.0, 40)], (1, 10)),  # a single level
    ([(3.0, 1), (4.0, 1), (5.0, 1)], None),  # no scale: no unused levels
    ([(1.0, 2), (2.0, 2)], (0.5, 10.5)),  # fractional scale ends: none listed
]


def _expanded(levels):
    return [score for score, count in levels for _ in range(max(count, 0))]


@pytest.mark.parametrize(("levels", "scale"), _COUNTED_CASES)
def test_from_counts_matches_the_expanded_scores(levels, scale):
    counted = score_resolution_from_counts(levels, scale)
    expected = score_resolution(_expanded(levels), scale)
    assert counted.effective_levels == pytest.approx(expected.effective_levels, abs=1e-12)
    assert counted.distinct_levels == expected.distinct_levels
    assert counted.unused_levels == expected.unused_levels
    assert counted.n_scores == expected.n_scores


def test_from_counts_is_bit_identical_in_first_appearance_order():
    # the report's numbers must not move: same terms, same summation order
    rng = np.random.default_rng(35)
    for _ in range(50):
        levels = sorted(set(rng.integers(1, 11, size=6).tolist()))
        counts = rng.integers(1, 50_000, size=len(levels)).tolist()
        pairs = [(float(v), n) for v, n in zip(levels, counts, strict=True)]
        assert score_resolution_from_counts(pairs, (1, 10)) == score_resolution(
            _expanded(pairs), (1, 10)
        )


def test_from_counts_ignores_non_finite_scores_and_zero_counts():
    levels = [(math.nan, 4), (math.inf, 2), (2.0, 0), (3.0, -1), (5.0, 3), (6.0, 1)]
    counted = score_resolution_from_counts(levels, (1, 10))
    expected = score_resolution([5.0, 5.0, 5.0, 6.0, math.nan, math.inf], (1, 10))
    assert counted == expected
    assert counted.n_scores == 4 and counted.distinct_levels == 2
    # H = -(3/4 log2 3/4 + 1/4 log2 1/4) = 0.811278 bits -> 2^H = 1.754765
    assert counted.effective_levels == pytest.approx(1.7547654, abs=1e-6)
    assert 2 in counted.unused_levels and 3 in counted.unused_levels


def test_from_counts_with_nothing_counted_is_none():
    assert score_resolution_from_counts([]) is None
    assert score_resolution_from_counts([(4.0, 0), (math.nan, 3)]) is None


def test_from_counts_merges_a_level_listed_twice():
    assert score_resolution_from_counts([(2.0, 3), (4.0, 1), (2.0, 1)]) == score_resolution(
        [2.0, 2.0, 2.0, 4.0, 2.0]
    )
