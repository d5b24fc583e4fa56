"""The min-p test of two nested Wald tests against independent references (ADR 0082)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from llm_council.stats.inference.nested_wald import SMALLEST_INTEGRATED_P, nested_wald_min_p


def _model_draws(q_sub: int, q_full: int, clusters: int, n: int, seed: int) -> np.ndarray:
    """min(p_sub, p_full) drawn from the model the docstring states: F_sub and Rao's R
    independent, T^2_full composed from them."""
    rng = np.random.default_rng(seed)
    nu = clusters - 1
    f_sub = rng.f(q_sub, nu - q_sub + 1, n)
    rest = rng.f(q_full - q_sub, nu - q_full + 1, n)
    t_sub = f_sub * q_sub * nu / (nu - q_sub + 1)
    t_full = t_sub + (nu + t_sub) * (q_full - q_sub) / (nu - q_full + 1) * rest
    p_sub = special.fdtrc(q_sub, nu - q_sub + 1, f_sub)
    p_full = special.fdtrc(q_full, nu - q_full + 1, t_full * (nu - q_full + 1) / (q_full * nu))
    return np.minimum(p_sub, p_full)


def _hotelling_draws(q_full: int, clusters: int, n: int, seed: int) -> np.ndarray:
    """min(p_edge-like, p_all) from Hotelling T^2 on ``clusters`` normal vectors with a
    random covariance; the sub-test is the first two coordinates (any 2-dim subspace)."""
    rng = np.random.default_rng(seed)
    root = np.linalg.cholesky(np.cov(rng.normal(size=(q_full, q_full + 4))))
    draws = rng.normal(size=(n, clusters, q_full)) @ root.T
    mean = draws.mean(axis=1)
    centred = draws - mean[:, None]
    covariance = np.einsum("rci,rcj->rij", centred, centred) / (clusters - 1)
    t_full = clusters * np.einsum("ri,rij,rj->r", mean, np.linalg.inv(covariance), mean)
    sub_inverse = np.linalg.inv(covariance[:, :2, :2])
    t_sub = clusters * np.einsum("ri,rij,rj->r", mean[:, :2], sub_inverse, mean[:, :2])
    nu = clusters - 1
    p_sub = special.fdtrc(2, nu - 1, t_sub * (nu - 1) / (2 * nu))
    p_full = special.fdtrc(q_full, nu - q_full + 1, t_full * (nu - q_full + 1) / (q_full * nu))
    return np.minimum(p_sub, p_full)


@pytest.mark.parametrize(("q_full", "clusters"), [(3, 10), (4, 30), (8, 12)])
@pytest.mark.parametrize("level", [0.05, 0.0147, 0.005])
def test_the_p_value_is_the_model_s_tail_probability(q_full: int, clusters: int, level: float):
    minimum = _model_draws(2, q_full, clusters, 400_000, seed=q_full * 100 + clusters)
    share = float(np.mean(minimum <= level))
    se = math.sqrt(share * (1 - share) / minimum.size)
    assert nested_wald_min_p(level, 0.9, 2, q_full, clusters) == pytest.approx(share, abs=4 * se)


@pytest.mark.parametrize(("q_full", "clusters"), [(4, 12), (3, 30)])
def test_it_matches_hotelling_statistics_with_a_random_covariance(q_full: int, clusters: int):
    minimum = _hotelling_draws(q_full, clusters, 60_000, seed=clusters)
    for level in (0.05, 0.01):
        share = float(np.mean(minimum <= level))
        se = math.sqrt(share * (1 - share) / minimum.size)
        combined = nested_wald_min_p(0.5, level, 2, q_full, clusters)
        assert combined == pytest.approx(share, abs=4 * se)


def test_many_clusters_give_the_chi_square_limit():
    # C -> infinity: W_sub ~ chi2(2) and W_full - W_sub ~ chi2(q - 2), independent; the
    # rejection probability by hand: 1 - int_0^{c_sub} f_2(w) F_{q-2}(c_full - w) dw
    q_full, level = 4, 0.01
    c_sub, c_full = stats.chi2.isf(level, 2), stats.chi2.isf(level, q_full)
    kept, _ = integrate.quad(
        lambda w: stats.chi2.pdf(w, 2) * stats.chi2.cdf(c_full - w, q_full - 2),
        0,
        min(c_sub, c_full),
    )
    assert nested_wald_min_p(level, 0.3, 2, q_full, 2_000_000) == pytest.approx(1 - kept, rel=1e-3)


def test_it_lies_between_the_smallest_p_and_bonferroni():
    for p_sub, p_full in [(0.01, 0.2), (0.3, 0.004), (0.02, 0.02), (0.9, 0.7)]:
        combined = nested_wald_min_p(p_sub, p_full, 2, 4, 30)
        smallest = min(p_sub, p_full)
        assert smallest < combined < 2 * smallest or combined == 1.0


def test_edge_cases_are_stated():
    assert nested_wald_min_p(1e-15, 0.5, 2, 4, 30) == 2e-15
    assert SMALLEST_INTEGRATED_P > 1e-15
    assert nested_wald_min_p(1.0, 1.0, 2, 4, 30) == 1.0
    assert math.isnan(nested_wald_min_p(float("nan"), 0.1, 2, 4, 30))
    assert math.isnan(nested_wald_min_p(0.1, 0.1, 2, 4, 4))  # no df for the full test
    with pytest.raises(ValueError, match="q_sub < q_full"):
        nested_wald_min_p(0.1, 0.1, 3, 3, 30)


@pytest.mark.parametrize("weight", [1 / 3, 0.2])
def test_the_weighted_test_is_the_model_s_tail_probability(weight: float):
    # reject when p_sub <= w c or p_full <= (1 - w) c: the share of model draws that do
    rng_draws = 400_000
    q_full, clusters, c = 4, 30, 0.03
    rng = np.random.default_rng(17)
    nu = clusters - 1
    f_sub = rng.f(2, nu - 1, rng_draws)
    rest = rng.f(q_full - 2, nu - q_full + 1, rng_draws)
    t_sub = f_sub * 2 * nu / (nu - 1)
    t_full = t_sub + (nu + t_sub) * (q_full - 2) / (nu - q_full + 1) * rest
    p_sub = special.fdtrc(2, nu - 1, f_sub)
    p_full = special.fdtrc(q_full, nu - q_full + 1, t_full * (nu - q_full + 1) / (q_full * nu))
    share = float(np.mean((p_sub <= weight * c) | (p_full <= (1 - weight) * c)))
    se = math.sqrt(share * (1 - share) / rng_draws)
    # the observed pair on the boundary of that region: u = c
    combined = nested_wald_min_p(weight * c, 0.9, 2, q_full, clusters, weight)
    assert combined == pytest.approx(share, abs=4 * se)
    assert (1 - weight) * c < combined < c  # above the larger part, below Bonferroni


def test_weight_one_half_is_the_plain_min_p_and_bad_weights_are_refused():
    assert nested_wald_min_p(0.01, 0.2, 2, 4, 30, 0.5) == nested_wald_min_p(0.01, 0.2, 2, 4, 30)
    with pytest.raises(ValueError, match="sub_weight"):
        nested_wald_min_p(0.01, 0.2, 2, 4, 30, 1.0)
