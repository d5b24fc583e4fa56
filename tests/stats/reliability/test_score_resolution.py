"""Effective score levels (stats/reliability/score_resolution.py) against hand-computed entropies."""

from __future__ import annotations

import math

import pytest
from scipy.stats import entropy

from llm_council.stats.reliability.score_resolution import score_resolution


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
