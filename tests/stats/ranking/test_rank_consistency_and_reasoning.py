"""Score/rank discordance, the clustered rate, and the reasoning-length slopes, against
hand derivations and independent computations (scipy, brute-force loops)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from llm_council.stats.bias_effects.reasoning_length import cluster_jackknife_slope, logistic_slope
from llm_council.stats.ranking.rank_consistency import clustered_rate, score_rank_discordance


def test_discordant_pairs_by_hand() -> None:
    # ranks A=1, B=2, C=3, D=4 with scores 7, 8, 8, 2:
    # (A,B): A above, 7 < 8 -> discordant; (A,C): same -> discordant; (A,D): 7 > 2 fine;
    # (B,C): 8 = 8 -> a tie, not comparable; (B,D), (C,D) concordant. 5 comparable, 2 discordant.
    counts = score_rank_discordance([7, 8, 8, 2], [1, 2, 3, 4])
    assert (counts.comparable, counts.discordant) == (5, 2)


def test_unscored_or_unranked_answers_are_not_compared() -> None:
    # D has no score, C no rank: only (A, B) is left, and it agrees
    counts = score_rank_discordance([9, 3, 5, float("nan")], [1, 2, float("nan"), 3])
    assert (counts.comparable, counts.discordant) == (1, 0)
    assert score_rank_discordance([], []).comparable == 0


def test_a_consistent_ranking_has_no_discordance_whatever_the_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.integers(1, 5, size=6).astype(float)
        order = np.lexsort((rng.random(6), -scores))
        ranks = np.empty(6)
        ranks[order] = np.arange(1, 7)
        assert score_rank_discordance(scores, ranks).discordant == 0


def test_pair_counts_equal_the_numpy_gap_tables() -> None:
    """The plain-float loop counts what the n x n gap tables it replaced counted, with
    None, NaN, 0 (unranked) and tied scores and ranks mixed in."""

    def gap_tables(scores: list[float | None], ranks: list[float | None]) -> tuple[int, int]:
        score = np.asarray(scores, dtype=float)
        rank = np.asarray(ranks, dtype=float)
        usable = np.isfinite(score) & np.isfinite(rank) & (rank > 0)
        score, rank = score[usable], rank[usable]
        score_gap = score[:, None] - score[None, :]
        rank_gap = rank[:, None] - rank[None, :]
        upper = np.triu(np.ones(score_gap.shape, dtype=bool), k=1)
        comparable = upper & (score_gap != 0) & (rank_gap != 0)
        discordant = comparable & (np.sign(score_gap) == np.sign(rank_gap))
        return int(comparable.sum()), int(discordant.sum())

    rng = np.random.default_rng(5)
    values: list[float | None] = [None, math.nan, math.inf, 0.0, 1.0, 2.0, 2.5, 3.0]
    for _ in range(400):
        size = int(rng.integers(0, 9))
        scores = [values[i] for i in rng.integers(0, len(values), size)]
        ranks = [values[i] for i in rng.integers(0, len(values), size)]
        counts = score_rank_discordance(scores, ranks)
        assert (counts.comparable, counts.discordant) == gap_tables(scores, ranks)


def test_clustered_rate_by_hand() -> None:
    # clusters (events, trials): (1, 4), (0, 2), (3, 4). R = 4 / 10 = 0.4.
    # residuals y - R n: 1 - 1.6 = -0.6, 0 - 0.8 = -0.8, 3 - 1.6 = 1.4; squares sum 0.36 +
    # 0.64 + 1.96 = 2.96; se^2 = 3/2 * 2.96 / 100 = 0.0444; se = 0.210713...
    estimate = clustered_rate([1, 0, 3], [4, 2, 4])
    assert estimate.estimate == pytest.approx(0.4)
    assert estimate.standard_error == pytest.approx(math.sqrt(0.0444))
    t = scipy_stats.t.ppf(0.975, 2)
    assert estimate.ci_low == pytest.approx(max(0.0, 0.4 - t * math.sqrt(0.0444)))
    assert estimate.ci_high == pytest.approx(min(1.0, 0.4 + t * math.sqrt(0.0444)))


def test_clustered_rate_of_zero_events_keeps_a_wilson_upper_bound() -> None:
    estimate = clustered_rate([0] * 30, [3] * 30)
    assert estimate.estimate == 0.0 and estimate.ci_low == 0.0
    # Wilson 95% for 0/30: upper = z^2/n / (1 + z^2/n) = 3.8415/30 / (1 + 3.8415/30) = 0.1135
    assert estimate.ci_high == pytest.approx(0.11351, abs=1e-4)


def test_jackknife_slope_matches_linregress_and_a_brute_force_jackknife() -> None:
    rng = np.random.default_rng(3)
    cluster = np.repeat(np.arange(12), 4)
    x = rng.standard_normal(48)
    y = 0.7 * x + rng.standard_normal(48)
    result = cluster_jackknife_slope(x, y, cluster)
    assert result.estimate == pytest.approx(scipy_stats.linregress(x, y).slope)
    leave_out = np.array(
        [scipy_stats.linregress(x[cluster != c], y[cluster != c]).slope for c in range(12)]
    )
    se = math.sqrt(11 / 12 * np.sum((leave_out - leave_out.mean()) ** 2))
    assert result.standard_error == pytest.approx(se)
    t = result.estimate / se
    assert result.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(t), 11))
    assert result.n_clusters == 12


def test_jackknife_slope_needs_three_clusters_and_varying_x() -> None:
    assert math.isnan(cluster_jackknife_slope([1, 2], [1, 2], [0, 1]).estimate)
    assert math.isnan(cluster_jackknife_slope([1, 1, 1, 1], [1, 2, 3, 4], [0, 1, 2, 3]).estimate)


def test_logistic_slope_matches_direct_likelihood_and_a_hand_sandwich() -> None:
    rng = np.random.default_rng(5)
    n = 400
    cluster = np.repeat(np.arange(100), 4)
    x = rng.standard_normal(n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-0.5 + 0.8 * x)))).astype(float)
    result = logistic_slope(x, y, cluster)

    def negative_log_likelihood(beta: np.ndarray) -> float:
        eta = beta[0] + beta[1] * x
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    fitted = optimize.minimize(negative_log_likelihood, np.zeros(2), method="BFGS", tol=1e-10)
    assert result.estimate == pytest.approx(fitted.x[1], abs=1e-5)
    # the CR1 sandwich, written out with loops over clusters
    p = 1 / (1 + np.exp(-(fitted.x[0] + fitted.x[1] * x)))
    design = np.column_stack([np.ones(n), x])
    hessian = sum(p[i] * (1 - p[i]) * np.outer(design[i], design[i]) for i in range(n))
    meat = np.zeros((2, 2))
    for c in range(100):
        rows = cluster == c
        score = (design[rows] * (y[rows] - p[rows])[:, None]).sum(axis=0)
        meat += np.outer(score, score)
    bread = np.linalg.inv(hessian)
    covariance = 100 / 99 * bread @ meat @ bread
    assert result.standard_error == pytest.approx(math.sqrt(covariance[1, 1]), rel=1e-4)


def test_logistic_slope_is_nan_under_separation_or_one_outcome() -> None:
    x = np.arange(10.0)
    assert math.isnan(logistic_slope(x, (x > 4).astype(float), np.arange(10)).estimate)
    assert math.isnan(logistic_slope(x, np.zeros(10), np.arange(10)).estimate)


def test_clustered_rate_interval_covers_the_true_rate() -> None:
    """Coverage over 400 councils of 200 sessions: each session has 3-10 comparable pairs
    and one discordant pair with probability 0.3 (a reviewer that slips once in a while),
    so the true rate is E[events] / E[trials] = 0.3 / 6.5. Measured 94.3% here (seed 11)
    and 95.3% over 2000 councils (seed 12);
    the binomial range of a 95% interval over 400 runs is about 92.9%-97.1%."""
    rng = np.random.default_rng(11)
    truth = 0.3 / 6.5
    covered = 0
    for _ in range(400):
        trials = rng.integers(3, 11, size=200)
        events = (rng.random(200) < 0.3).astype(float)
        estimate = clustered_rate(events, trials)
        covered += estimate.ci_low <= truth <= estimate.ci_high
    assert 0.925 <= covered / 400 <= 0.975
