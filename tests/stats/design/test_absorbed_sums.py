"""Absorbed least squares from per-cluster sums against the textbook dense computation:
explicit answer dummies, ``np.linalg.lstsq`` and the CR1 sandwich written out (a hand
derivation independent of :mod:`llm_council.stats.design`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from llm_council.stats.design.absorbed_sums import (
    absorbed_cluster_sums,
    add_absorbed_sums,
    embed_absorbed_sums,
    ols_absorbed_cluster_robust_from_sums,
    transform_absorbed_sums,
)


def _data(seed: int, n_clusters: int = 30, k: int = 4, integer: bool = False) -> tuple:
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(n_clusters), rng.integers(3, 10, n_clusters))
    group = cluster * 4 + rng.integers(0, 3, cluster.size)  # answers nested in sessions
    x = rng.normal(size=(cluster.size, k))
    y = x @ np.arange(1.0, k + 1) + rng.normal(size=cluster.size) + 0.3 * group
    if integer:
        y = np.round(y)
    return x, y, group, cluster


def _dense_reference(x: np.ndarray, y: np.ndarray, group: np.ndarray, cluster: np.ndarray):
    """OLS on [X, one dummy per group], CR1 (Cameron & Miller 2015 eq. 12) with K = X's
    columns only (the absorbed effects are nested in clusters, their section III.B)."""
    groups = np.unique(group)
    dummies = (group[:, None] == groups[None, :]).astype(float)
    full = np.column_stack([x, dummies])
    coefficients = np.linalg.lstsq(full, y, rcond=None)[0]
    residual = y - full @ coefficients
    # Frisch-Waugh: the X part of (Z'Z)^-1 is the inverse of the demeaned X'X
    demeaned = x - (dummies @ np.linalg.lstsq(dummies, x, rcond=None)[0])
    bread = np.linalg.inv(demeaned.T @ demeaned)
    meat = np.zeros((x.shape[1], x.shape[1]))
    for c in np.unique(cluster):
        score = demeaned[cluster == c].T @ residual[cluster == c]
        meat += np.outer(score, score)
    n, k, g = y.size, x.shape[1], np.unique(cluster).size
    factor = g / (g - 1) * (n - 1) / (n - k)
    return coefficients[:k], factor * bread @ meat @ bread, float(residual @ residual)


@pytest.mark.parametrize("integer", [False, True])
def test_sums_fit_equals_the_dense_textbook_fit(integer: bool) -> None:
    x, y, group, cluster = _data(1, integer=integer)
    beta, covariance, rss = _dense_reference(x, y, group, cluster)
    summed = ols_absorbed_cluster_robust_from_sums(absorbed_cluster_sums(x, y, group, cluster))
    np.testing.assert_allclose(summed.fit.coefficients, beta, rtol=1e-10)
    np.testing.assert_allclose(summed.fit.covariance, covariance, rtol=1e-9)
    assert summed.residual_squares == pytest.approx(rss, rel=1e-9)
    assert summed.fit.n_clusters == 30 and summed.fit.null_space.shape == (4, 0)


def test_sums_of_parts_add_to_the_whole_and_a_sparse_design_gives_the_same() -> None:
    x, y, group, cluster = _data(2, n_clusters=40)
    whole = ols_absorbed_cluster_robust_from_sums(absorbed_cluster_sums(x, y, group, cluster))
    cut = int(np.searchsorted(cluster, 17))
    first = absorbed_cluster_sums(sparse.csr_matrix(x[:cut]), y[:cut], group[:cut], cluster[:cut])
    second = absorbed_cluster_sums(x[cut:], y[cut:], group[cut:], cluster[cut:])
    for sums in (add_absorbed_sums(first, second), add_absorbed_sums(second, first)):
        merged = ols_absorbed_cluster_robust_from_sums(sums)
        assert sums.n_clusters == 40 and sums.n_observations == y.size
        np.testing.assert_allclose(merged.fit.coefficients, whole.fit.coefficients, rtol=1e-12)
        np.testing.assert_allclose(merged.fit.covariance, whole.fit.covariance, rtol=1e-10)


def test_a_transform_and_an_embedding_equal_fitting_the_changed_design() -> None:
    x, y, group, cluster = _data(3)
    sums = absorbed_cluster_sums(x, y, group, cluster)
    transform = np.random.default_rng(4).normal(size=(4, 3))
    expected = _dense_reference(x @ transform, y, group, cluster)
    got = ols_absorbed_cluster_robust_from_sums(transform_absorbed_sums(sums, transform))
    np.testing.assert_allclose(got.fit.coefficients, expected[0], rtol=1e-9)
    np.testing.assert_allclose(got.fit.covariance, expected[1], rtol=1e-8)
    wide = np.zeros((y.size, 6))
    wide[:, [0, 2, 3, 5]] = x
    embedded = ols_absorbed_cluster_robust_from_sums(embed_absorbed_sums(sums, [0, 2, 3, 5], 6))
    direct = ols_absorbed_cluster_robust_from_sums(absorbed_cluster_sums(wide, y, group, cluster))
    np.testing.assert_array_equal(embedded.fit.null_space.shape, (6, 2))
    np.testing.assert_allclose(embedded.fit.coefficients, direct.fit.coefficients, atol=1e-12)
    np.testing.assert_allclose(embedded.fit.covariance, direct.fit.covariance, atol=1e-12)


def test_degenerate_inputs() -> None:
    x, y, group, cluster = _data(5)
    with pytest.raises(ValueError, match="sorted by cluster"):
        absorbed_cluster_sums(x, y, group, cluster[::-1])
    spanning = group.copy()
    spanning[cluster == 1] = group[cluster == 0][0]  # one answer in two sessions
    with pytest.raises(ValueError, match="spans two clusters"):
        absorbed_cluster_sums(x, y, spanning, cluster)
    with pytest.raises(ValueError, match="embed"):
        embed_absorbed_sums(absorbed_cluster_sums(x, y, group, cluster), [0, 0, 1, 2], 6)
    empty = absorbed_cluster_sums(np.zeros((0, 4)), np.zeros(0), np.zeros(0), np.zeros(0))
    assert empty.n_observations == 0 and not empty.gram.any()
    # a constant response (a judge that always gives 5): zero slopes, zero covariance
    flat = ols_absorbed_cluster_robust_from_sums(
        absorbed_cluster_sums(x, np.full(y.size, 5.0), group, cluster)
    )
    np.testing.assert_allclose(flat.fit.coefficients, 0, atol=1e-12)
    np.testing.assert_allclose(flat.fit.covariance, 0, atol=1e-20)
    assert flat.residual_squares == pytest.approx(0, abs=1e-20)
