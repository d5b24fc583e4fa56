"""Session-clustered estimates from per-cluster sums (ADR 0085) against references computed
from the raw values: the dummy-variable sandwich written with matrices, scipy's standard
error of the mean, and hand derivations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.inference.clustered_sums import (
    cluster_bootstrap_icc,
    clustered_mean_from_sums,
    icc_from_moments,
    within_slope_from_sums,
)


def _clusters(sizes: list[int]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), sizes)


def _sandwich(design: np.ndarray, y: np.ndarray, cluster: np.ndarray) -> tuple[float, float]:
    """First coefficient and its CR1 standard error, (X'X)^-1 (sum_g X_g'e_g e_g'X_g)
    (X'X)^-1 times G/(G-1), written out with matrices."""
    bread = np.linalg.pinv(design.T @ design)
    coef = bread @ design.T @ y
    residual = y - design @ coef
    meat = np.zeros((design.shape[1],) * 2)
    g = int(cluster.max()) + 1
    for index in range(g):
        score = design[cluster == index].T @ residual[cluster == index]
        meat += np.outer(score, score)
    variance = g / (g - 1) * bread @ meat @ bread
    return float(coef[0]), math.sqrt(variance[0, 0])


def test_clustered_mean_matches_the_intercept_only_sandwich() -> None:
    rng = np.random.default_rng(1)
    cluster = _clusters([3, 1, 5, 2, 4, 4])
    values = rng.integers(1, 11, size=cluster.size).astype(float)  # integer scores, ties
    sums = np.bincount(cluster, weights=values)
    counts = np.bincount(cluster)
    mean, se = clustered_mean_from_sums(sums, counts)
    want_mean, want_se = _sandwich(np.ones((values.size, 1)), values, cluster)
    assert mean == pytest.approx(want_mean, rel=1e-12)
    assert se == pytest.approx(want_se, rel=1e-10)


def test_clustered_mean_of_one_value_per_cluster_is_scipy_s_standard_error() -> None:
    values = np.array([0.5, -1.0, 2.0, 0.0, 1.5])
    mean, se = clustered_mean_from_sums(values, np.ones(5))
    assert mean == pytest.approx(0.6)
    assert se == pytest.approx(float(stats.sem(values)), rel=1e-12)


def test_clustered_mean_degenerate_inputs() -> None:
    mean, se = clustered_mean_from_sums(np.array([6.0]), np.array([3]))
    assert mean == 2.0 and math.isnan(se)  # one cluster: no clustered variance
    mean, se = clustered_mean_from_sums(np.array([10.0, 5.0]), np.array([2, 1]))
    assert mean == 5.0 and se == 0.0  # always the same score


def test_within_slope_matches_the_dummy_variable_sandwich() -> None:
    rng = np.random.default_rng(2)
    cluster = _clusters([4, 4, 3, 4, 2, 4, 4])
    x = rng.integers(-3, 4, size=cluster.size).astype(float)
    y = 0.4 * x + rng.normal(size=cluster.size) + cluster  # a shift per cluster
    g = int(cluster.max()) + 1
    counts = np.bincount(cluster).astype(float)
    xt = x - (np.bincount(cluster, weights=x) / counts)[cluster]
    yt = y - (np.bincount(cluster, weights=y) / counts)[cluster]
    slope, se = within_slope_from_sums(
        np.bincount(cluster, weights=xt * xt), np.bincount(cluster, weights=xt * yt)
    )
    dummies = (cluster[:, None] == np.arange(g)[None, :]).astype(float)
    want_slope, want_se = _sandwich(np.column_stack([x, dummies]), y, cluster)
    assert slope == pytest.approx(want_slope, rel=1e-10)
    assert se == pytest.approx(want_se, rel=1e-8)


def test_within_slope_without_variation_or_with_one_cluster() -> None:
    slope, se = within_slope_from_sums(np.zeros(3), np.zeros(3))
    assert math.isnan(slope) and math.isnan(se)
    slope, se = within_slope_from_sums(np.array([2.0]), np.array([1.0]))
    assert slope == 0.5 and math.isnan(se)


def _moments(first: np.ndarray, second: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, ...]:
    g = int(cluster.max()) + 1
    counts = np.bincount(cluster, minlength=g).astype(float)
    means = (first + second) / 2
    mean_g = np.bincount(cluster, weights=means, minlength=g) / counts
    within = np.bincount(cluster, weights=(means - mean_g[cluster]) ** 2, minlength=g)
    squares = np.bincount(cluster, weights=(first - second) ** 2 / 2, minlength=g)
    return counts, mean_g, within, squares


def test_icc_hand_derivation() -> None:
    # pairs (1,2), (3,3), (5,4) in clusters {0,1}, {2}: means 1.5, 3, 4.5, grand mean 3;
    # between SS 4.5 -> MSB = 2 * 4.5 / 2 = 4.5; MSW = (0.5 + 0 + 0.5) / 3 = 1/3;
    # ICC = (4.5 - 1/3) / (4.5 + 1/3) = 25/29
    first, second = np.array([1.0, 3.0, 5.0]), np.array([2.0, 3.0, 4.0])
    value = icc_from_moments(*_moments(first, second, np.array([0, 0, 1])))
    assert value == pytest.approx(25 / 29, rel=1e-12)


def test_icc_from_moments_equals_the_anova_over_raw_pairs() -> None:
    rng = np.random.default_rng(3)
    cluster = _clusters([5, 2, 7, 1, 4])
    truth = rng.normal(5, 2, size=cluster.size)
    first = np.round(truth + rng.normal(size=cluster.size))
    second = np.round(truth + rng.normal(size=cluster.size))
    # one-way random ANOVA with k = 2 over the raw pairs (Shrout & Fleiss 1979, ICC(1,1))
    data = np.column_stack([first, second])
    n = data.shape[0]
    ms_between = 2 * np.sum((data.mean(axis=1) - data.mean()) ** 2) / (n - 1)
    ms_within = np.sum((data - data.mean(axis=1, keepdims=True)) ** 2) / n
    want = (ms_between - ms_within) / (ms_between + ms_within)
    assert icc_from_moments(*_moments(first, second, cluster)) == pytest.approx(want, rel=1e-12)


def test_icc_of_a_judge_that_always_gives_the_same_score() -> None:
    same = np.full(6, 5.0)
    moments = _moments(same, same, _clusters([3, 3]))
    assert math.isnan(icc_from_moments(*moments, constant=True))
    low, high = cluster_bootstrap_icc(
        *moments, np.full(2, 5.0), np.full(2, 5.0), n_resamples=20, seed=0
    )
    assert math.isnan(low) and math.isnan(high)


def test_cluster_bootstrap_equals_resampling_the_raw_pairs() -> None:
    """Weighting a cluster's moments by its draw count is concatenating its pairs."""
    rng = np.random.default_rng(4)
    cluster = _clusters([3, 4, 2, 5, 3, 3])
    first = rng.integers(1, 11, size=cluster.size).astype(float)
    second = np.clip(first + rng.integers(-1, 2, size=cluster.size), 1, 10)
    g = int(cluster.max()) + 1
    means = (first + second) / 2
    lowest = np.array([means[cluster == i].min() for i in range(g)])
    highest = np.array([means[cluster == i].max() for i in range(g)])
    got = cluster_bootstrap_icc(
        *_moments(first, second, cluster), lowest, highest, n_resamples=50, seed=9
    )
    draws_rng = np.random.default_rng(9)
    members = [np.flatnonzero(cluster == i) for i in range(g)]
    draws = []
    for _ in range(50):
        chosen = np.concatenate([members[i] for i in draws_rng.integers(g, size=g)])
        data = np.column_stack([first[chosen], second[chosen]])
        n = data.shape[0]
        msb = 2 * np.sum((data.mean(axis=1) - data.mean()) ** 2) / (n - 1)
        msw = np.sum((data - data.mean(axis=1, keepdims=True)) ** 2) / n
        if msb + msw > 0:
            draws.append((msb - msw) / (msb + msw))
    want = (np.percentile(draws, 2.5), np.percentile(draws, 97.5))
    assert got == pytest.approx(want, rel=1e-9)
