"""Kish effective number of judges: hand derivations, numpy reference, generators."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from generators.shared_error_judges import error_matrix, true_effective_judges
from llm_council.stats.reliability.effective_judges import (
    effective_judges,
    error_correlation,
    kish_effective_number,
    mean_error_correlation,
)


def test_hand_derivation_three_judges() -> None:
    # e1 = e3 = [1,1,0,0], e2 = [1,0,1,0]; every column has mean 1/2, deviations +-1/2.
    # r(e1,e2): products .25, -.25, -.25, .25 -> 0; r(e1,e3) = 1; r(e2,e3) = 0.
    # rho = (0 + 1 + 0) / 3 = 1/3; n_eff = 3 / (1 + 2/3) = 9/5 = k^2 / 1'R1 = 9 / (3 + 2).
    errors = [[1, 1, 1], [1, 0, 1], [0, 1, 0], [0, 0, 0]]
    assert mean_error_correlation(errors) == pytest.approx(1 / 3)
    result = effective_judges(errors, interval=False)
    assert result.effective_judges == pytest.approx(9 / 5)
    assert math.isnan(result.ci_low) and result.resamples == 0


def test_correlations_match_numpy_and_scipy() -> None:
    rng = np.random.default_rng(3)
    errors = (rng.random((200, 4)) < [0.2, 0.3, 0.25, 0.4]).astype(float)
    np.testing.assert_allclose(error_correlation(errors), np.corrcoef(errors.T), atol=1e-12)
    r, _ = scipy_stats.pearsonr(errors[:, 0], errors[:, 2])
    assert error_correlation(errors)[0, 2] == pytest.approx(r)


def test_identical_judges_are_one_and_kish_closed_form() -> None:
    column = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 0], dtype=float)
    assert effective_judges(np.tile(column[:, None], (1, 5))).effective_judges == pytest.approx(1)
    assert kish_effective_number(0.0, 7) == 7
    assert kish_effective_number(0.5, 5) == pytest.approx(5 / 3)
    # the floor rho = -1/(k-1): errors cancel exactly, n_eff unbounded
    assert kish_effective_number(-1.0, 2) == math.inf
    assert math.isnan(kish_effective_number(-0.9, 3))


def test_perfectly_complementary_judges_have_an_unbounded_n_eff() -> None:
    first = np.array([1, 0] * 20, dtype=float)
    result = effective_judges(np.column_stack([first, 1 - first]), resamples=200)
    assert result.mean_error_correlation == pytest.approx(-1)
    assert result.effective_judges == math.inf and result.ci_high == math.inf


def test_independent_judges_are_worth_k() -> None:
    errors = error_matrix(20000, 5, shared=0.0, error=0.2, rng=np.random.default_rng(1))
    result = effective_judges(errors, resamples=300)
    # rho's standard error ~ 1/sqrt(20000) = 0.007 -> n_eff within ~ 4 * 4 * 0.007 * 5/1 of 5
    assert result.effective_judges == pytest.approx(5, abs=0.35)
    assert result.ci_low <= 5 <= result.ci_high


def test_shared_component_recovers_the_hand_derived_n_eff() -> None:
    # q = 0.1, p = 0.2: rho = 2/7 and n_eff = 7/3 (derivation in the generator's docstring)
    assert true_effective_judges(0.1, 0.2, 5) == pytest.approx(7 / 3)
    errors = error_matrix(20000, 5, shared=0.1, error=0.2, rng=np.random.default_rng(2))
    result = effective_judges(errors, resamples=300)
    assert result.mean_error_correlation == pytest.approx(2 / 7, abs=0.02)
    assert result.effective_judges == pytest.approx(7 / 3, abs=0.15)
    assert result.ci_low <= 7 / 3 <= result.ci_high < 5


def test_interval_is_reproducible_and_ordered() -> None:
    errors = error_matrix(150, 3, shared=0.05, error=0.3, rng=np.random.default_rng(5))
    first = effective_judges(errors, resamples=400, seed=9)
    again = effective_judges(errors, resamples=400, seed=9)
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert first.ci_low <= first.effective_judges <= first.ci_high
    assert first.rho_ci_low <= first.mean_error_correlation <= first.rho_ci_high
    # the n_eff bounds are the mapped rho bounds, swapped (n_eff decreases in rho)
    assert first.ci_low == pytest.approx(kish_effective_number(first.rho_ci_high, 3))
    assert first.resamples == 400


def test_a_judge_without_error_variation_is_undefined() -> None:
    errors = np.column_stack([np.zeros(20), np.arange(20) % 2])
    result = effective_judges(errors, resamples=100)
    assert math.isnan(result.mean_error_correlation) and math.isnan(result.ci_low)


@pytest.mark.parametrize(
    "bad", [np.zeros((5, 1)), np.zeros(5), np.array([[1.0, np.nan], [0.0, 1.0]])]
)
def test_bad_shapes_and_missing_values_are_refused(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        effective_judges(bad)


def test_second_generator_latent_shared_difficulty() -> None:
    # a different mechanism: errors from a thresholded Gaussian with a shared component;
    # the true indicator correlation comes from scipy's bivariate normal orthant probability
    from generators.shared_error_judges import latent_error_matrix, latent_true_error_correlation

    rho = latent_true_error_correlation(0.3, 0.25)
    assert 0.15 < rho < 0.2  # ~0.174: well below the latent 0.3
    errors = latent_error_matrix(
        20000, 4, shared_share=0.3, error=0.25, rng=np.random.default_rng(8)
    )
    result = effective_judges(errors, resamples=300)
    assert result.effective_judges == pytest.approx(4 / (1 + 3 * rho), abs=0.15)
    assert result.ci_low <= 4 / (1 + 3 * rho) <= result.ci_high < 4


def test_signed_score_errors_in_any_unit() -> None:
    # correlation is scale-free: errors in millipoints give the same n_eff as in points,
    # and a constant column is undefined at any scale
    rng = np.random.default_rng(4)
    shared = rng.standard_normal((300, 1))
    errors = shared + rng.standard_normal((300, 3))
    points = effective_judges(errors, interval=False).effective_judges
    assert effective_judges(errors * 1e-6, interval=False).effective_judges == pytest.approx(points)
    constant = np.column_stack([errors[:, :2], np.full(300, 3e-7)])
    assert math.isnan(mean_error_correlation(constant))
