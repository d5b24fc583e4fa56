"""Leniency from per reviewer-pair sums (ADR 0079), against independent references:
scipy's one-sample t test on the per-session mean deviations where every reviewer scores
every answer, a brute-force per-session CR1 sum where cells are missing, and the old
per-session step-down's verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.reviewers.pairwise_leniency import (
    PairDeviationSums,
    leniency_from_pair_sums,
    pair_deviation_sums,
    session_pair_deviations,
    step_down_pair_leniency,
)
from llm_council.stats.reviewers.robust_leniency import step_down_leniency


def _cube(seed: int, n_sessions: int, offsets: list[float], n_answers: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    quality = rng.normal(6, 1.5, size=(n_sessions, 1, n_answers))
    noise = rng.normal(0, 1, size=(n_sessions, len(offsets), n_answers))
    return np.rint(quality + noise + np.asarray(offsets)[None, :, None])  # integer scores


@pytest.mark.parametrize("n_reviewers", [3, 5, 9])
def test_complete_data_is_the_one_sample_t_test_of_session_means(n_reviewers: int) -> None:
    offsets = [0.0] * n_reviewers
    offsets[0] = -0.7
    scores = _cube(n_reviewers, 30, offsets)
    sums = pair_deviation_sums(scores)
    reference = np.ones(n_reviewers, dtype=bool)
    reference[0] = False
    for reviewer in range(n_reviewers):
        others = [j for j in range(n_reviewers) if reference[j] and j != reviewer]
        # per session: mean over answers of the score minus the others' mean on the answer
        session_means = (scores[:, reviewer, :] - scores[:, others, :].mean(axis=1)).mean(axis=1)
        expected = stats.ttest_1samp(session_means, 0.0)
        low, high = expected.confidence_interval(0.95)
        estimate = leniency_from_pair_sums(sums, reviewer, reference)
        assert estimate.estimate == pytest.approx(session_means.mean(), rel=1e-12, abs=1e-14)
        assert estimate.p_value == pytest.approx(expected.pvalue, rel=1e-9)
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), rel=1e-9)
        assert estimate.n_clusters == 30


def _brute_force(scores: np.ndarray, reviewer: int, reference: np.ndarray) -> tuple[float, float]:
    """The module docstring's estimator and CR1 variance, session by session."""
    deviation = session_pair_deviations(scores)[:, reviewer, :]
    others = [
        j for j in np.flatnonzero(reference) if j != reviewer and np.isfinite(deviation[:, j]).any()
    ]
    pair_mean = {j: np.nanmean(deviation[:, j]) for j in others}
    n_pair = {j: np.isfinite(deviation[:, j]).sum() for j in others}
    estimate = np.mean([pair_mean[j] for j in others])
    u = []
    for session in range(scores.shape[0]):
        row = deviation[session]
        if not np.isfinite(np.delete(row, reviewer)).any():
            continue  # r met no one in this session: not a cluster
        u.append(
            sum(
                (row[j] - pair_mean[j]) / (len(others) * n_pair[j])
                for j in others
                if np.isfinite(row[j])
            )
        )
    g = len(u)
    return float(estimate), float(np.sqrt(g / (g - 1) * np.sum(np.square(u))))


def test_missing_cells_and_self_reviews_match_the_per_session_sandwich() -> None:
    rng = np.random.default_rng(4)
    scores = _cube(4, 40, [0.0, 0.0, 0.5, 0.0, -0.3], n_answers=5)
    scores[rng.random(scores.shape) < 0.25] = np.nan  # missing cells
    for reviewer in range(5):
        scores[:, reviewer, reviewer] = np.nan  # its own answer is no comparison
    sums = pair_deviation_sums(scores)
    reference = np.array([True, True, False, True, True])
    for reviewer in range(5):
        estimate, se = _brute_force(scores, reviewer, reference)
        got = leniency_from_pair_sums(sums, reviewer, reference)
        assert got.estimate == pytest.approx(estimate, rel=1e-12)
        assert got.standard_error == pytest.approx(se, rel=1e-9)


def test_sums_of_session_parts_add_to_the_same_bits() -> None:
    scores = _cube(7, 50, [0.0, 0.2, -0.2, 0.0])
    whole = pair_deviation_sums(scores)
    parts = PairDeviationSums.empty(4)
    for part in np.array_split(scores[::-1], 7):
        parts = parts + pair_deviation_sums(part)
    for field in ("cross", "first", "both", "sessions"):
        np.testing.assert_array_equal(getattr(parts, field), getattr(whole, field), err_msg=field)


@pytest.mark.parametrize("n_reviewers", [3, 5, 9])
def test_the_step_down_agrees_with_the_per_session_one_on_complete_data(n_reviewers: int) -> None:
    offsets = [0.0] * n_reviewers
    offsets[-1] = 1.2
    scores = _cube(10 + n_reviewers, 40, offsets)
    n_sessions, _, n_answers = scores.shape
    s, r, a = np.meshgrid(
        np.arange(n_sessions), np.arange(n_reviewers), np.arange(n_answers), indexing="ij"
    )
    old = step_down_leniency(
        (s * n_answers + a).ravel(),
        s.ravel(),
        r.ravel(),
        scores.ravel(),
        np.zeros(scores.size, dtype=bool),
        n_reviewers,
    )
    new = step_down_pair_leniency(pair_deviation_sums(scores))
    assert [x.flagged for x in new] == [x.flagged for x in old]
    assert [x.in_reference for x in new] == [x.in_reference for x in old]
    assert new[-1].flagged and not new[-1].in_reference
    for x, y in zip(new, old, strict=True):
        assert x.estimate.estimate == pytest.approx(y.estimate.estimate, abs=1e-12)
        assert x.estimate.standard_error == pytest.approx(y.estimate.standard_error, rel=1e-9)


def test_degenerate_judges_give_zero_spread_not_rounding() -> None:
    scores = _cube(3, 20, [0.0, 0.0, 0.0])
    same = np.repeat(scores[:, :1, :], 3, axis=1)  # three judges always agree
    sums = pair_deviation_sums(same)
    estimate = leniency_from_pair_sums(sums, 0, np.ones(3, dtype=bool))
    assert estimate.estimate == 0.0 and estimate.standard_error == 0.0
    assert estimate.p_value == 1.0
    shifted = same + np.array([0.0, 0.0, 1.0])[None, :, None]  # judge 2 always one higher
    estimate = leniency_from_pair_sums(pair_deviation_sums(shifted), 2, np.ones(3, dtype=bool))
    assert estimate.estimate == 1.0 and estimate.standard_error == 0.0
    assert estimate.p_value == 0.0
    # one session, or a reviewer that met no one: no interval
    one = leniency_from_pair_sums(pair_deviation_sums(scores[:1]), 0, np.ones(3, dtype=bool))
    assert one.n_clusters == 1 and np.isnan(one.estimate)
    alone = scores.copy()
    alone[:, 0, :2] = np.nan
    alone[:, 1:, 2:] = np.nan
    lonely = leniency_from_pair_sums(pair_deviation_sums(alone), 0, np.ones(3, dtype=bool))
    assert lonely.n_clusters == 0 and np.isnan(lonely.estimate)
