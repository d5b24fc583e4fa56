"""Winners three ways per session (raw rank, debiased, unadjusted score): hand-built cases."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.bias_effects.winner_changes import (
    effect_adjusted_scores,
    group_mean,
    session_winners,
)
from llm_council.stats.reviewers.reviewer_effects import ReviewerEffects

NAN = float("nan")


def test_group_mean_skips_non_finite_values() -> None:
    group = np.array([0, 0, 1, 1, 2])
    values = np.array([1.0, 3.0, NAN, 5.0, NAN])
    assert group_mean(group, values, 4) == pytest.approx([2.0, 5.0, NAN, NAN], nan_ok=True)


def test_three_sessions_by_hand() -> None:
    # session 0: the raw winner is model 1 (best mean rank), the unadjusted winner model 0
    #   (best mean score), the debiased winner model 2: changed, and by the adjustments
    # session 1: models 0 and 1 tie on mean score; model 0 wins raw (rank) and unadjusted
    #   (its raw place breaks the tie); debiased picks model 1: a broken tie
    # session 2: no votes at all: left out
    pair_session = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    pair_model = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    mean_rank = np.array([1.5, 1.0, 2.5, 1.0, 2.0, 3.0, NAN, NAN])
    mean_score = np.array([7.0, 6.0, 5.0, 8.0, 8.0, 3.0, NAN, NAN])
    mean_adjusted = np.array([6.5, 6.0, 7.0, 7.9, 8.1, 3.0, NAN, NAN])
    winners = session_winners(pair_session, pair_model, mean_rank, mean_score, mean_adjusted, 1e-9)
    assert winners.sessions.tolist() == [0, 1]
    assert winners.changed.tolist() == [[True, True, False], [True, False, True]]


def test_no_adjustment_changes_nothing_but_the_rank_to_score_switch() -> None:
    # the raw winner (rank) is model 0, the best mean score model 1: a change vs raw that
    # the adjustments did not make
    winners = session_winners(
        np.array([0, 0]),
        np.array([0, 1]),
        np.array([1.0, 2.0]),
        np.array([6.0, 7.0]),
        np.array([6.0, 7.0]),
        1e-9,
    )
    assert winners.changed.tolist() == [[True, False, False]]


def test_effect_adjusted_scores_by_hand() -> None:
    effects = [
        ReviewerEffects(leniency=1.0, slot_effects=(0.5, -0.5), length_slope=2.0, n_scores=20),
        None,  # too few scores: not adjusted
    ]
    reviewer = np.array([0, 0, 0, 1])
    position = np.array([0, 1, 5, 0])  # slot 5 was never fitted: the leniency only
    x = np.array([0.5, NAN, 0.0, 3.0])  # NaN length counts as 0
    score = np.array([8.0, 8.0, 8.0, 8.0])
    adjusted = effect_adjusted_scores(effects, reviewer, position, x, score)
    # 8 - (1 + 0.5) - 2 * 0.5 = 5.5; 8 - (1 - 0.5) - 0 = 7.5; 8 - 1 - 0 = 7; untouched 8
    assert adjusted.tolist() == pytest.approx([5.5, 7.5, 7.0, 8.0])
