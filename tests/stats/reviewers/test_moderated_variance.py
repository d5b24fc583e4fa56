"""Smyth's moderated variances, prior estimate and moderated t tests, against references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from llm_council.stats.reviewers.moderated_variance import (
    fit_variance_prior,
    moderated_t_tests,
    moderated_variances,
    trigamma_inverse,
)


@pytest.mark.parametrize("value", [1e-7, 1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 1e3, 1e8])
def test_trigamma_inverse_inverts_scipy_polygamma(value: float) -> None:
    y = trigamma_inverse(value)
    assert float(special.polygamma(1, y)) == pytest.approx(value, rel=1e-6)


def test_trigamma_inverse_known_points() -> None:
    # psi'(1) = pi^2 / 6 and psi'(1/2) = pi^2 / 2 (Abramowitz & Stegun 6.4.2, 6.4.4)
    assert trigamma_inverse(math.pi**2 / 6) == pytest.approx(1.0, rel=1e-8)
    assert trigamma_inverse(math.pi**2 / 2) == pytest.approx(0.5, rel=1e-8)
    with pytest.raises(ValueError, match="positive finite"):
        trigamma_inverse(float("nan"))


def _brent_prior(variances: np.ndarray, dfs: np.ndarray) -> tuple[float, float]:
    """Smyth's sec. 6.2 moments solved by bracketing (an independent route to the root)."""
    half = dfs / 2
    e = np.log(variances) - special.digamma(half) + np.log(half)
    g = e.size
    target = np.mean((e - e.mean()) ** 2 * g / (g - 1) - special.polygamma(1, half))
    y = optimize.brentq(lambda y: special.polygamma(1, y) - target, 1e-8, 1e8, xtol=1e-14)
    d0 = 2 * y
    return math.exp(e.mean() + special.digamma(d0 / 2) - math.log(d0 / 2)), d0


def test_prior_estimate_matches_a_bracketing_solution_and_recovers_the_truth() -> None:
    rng = np.random.default_rng(7)
    d0_true, s0_true, d = 4.0, 2.0, np.full(20000, 3.0)
    sigma2 = s0_true * d0_true / rng.chisquare(d0_true, d.size)
    s2 = sigma2 * rng.chisquare(d) / d
    prior = fit_variance_prior(s2, d)
    assert prior is not None
    reference_s0, reference_d0 = _brent_prior(s2, d)
    assert prior.df == pytest.approx(reference_d0, rel=1e-6)
    assert prior.variance == pytest.approx(reference_s0, rel=1e-6)
    # and the model's own parameters, within sampling error of 20000 draws
    assert prior.df == pytest.approx(d0_true, rel=0.1)
    assert prior.variance == pytest.approx(s0_true, rel=0.05)


def test_prior_is_infinite_when_variances_vary_no_more_than_sampling() -> None:
    prior = fit_variance_prior([1.0, 1.0, 1.0, 1.0], [5, 5, 5, 5])
    assert prior is not None and prior.df == math.inf
    # e_r all equal: s0^2 = exp(mean e) = exp(log 1 - psi(2.5) + log 2.5)
    assert prior.variance == pytest.approx(math.exp(-special.digamma(2.5) + math.log(2.5)))
    assert fit_variance_prior([1.0, 2.0], [3, 3]) is None  # fewer than 3 usable


def test_moderated_variances_by_hand() -> None:
    # (d0 s0^2 + d s^2) / (d0 + d): (4 * 2 + 2 * 5) / 6 = 3, df 6; no residual info: prior;
    # an infinite prior df: the prior variance exactly
    moderated, dfs = moderated_variances(
        [5.0, np.nan, 5.0], [2.0, 0.0, 2.0], 2.0, [4.0, 4.0, np.inf]
    )
    assert moderated.tolist() == pytest.approx([3.0, 2.0, 2.0])
    assert dfs.tolist() == [6.0, 4.0, math.inf]


def test_one_reviewer_test_is_student_t_with_the_moderated_df() -> None:
    tests = moderated_t_tests([2.0], [[0.5]], [3.0], [6.0], one_sided=False)
    t = 2.0 / math.sqrt(1.5)
    assert tests.dfs[0] == pytest.approx(6.0)
    assert tests.p_values[0] == pytest.approx(2 * stats.t.sf(t, 6))


def test_welch_satterthwaite_df_by_hand() -> None:
    # V = 1 * 2 + 0.5 * 4 = 4; df = 16 / ((2^2)/3 + (2^2)/9) = 16 / (16/9) = 9
    tests = moderated_t_tests([1.0], [[1.0], [0.5]], [2.0, 4.0], [3.0, 9.0], one_sided=True)
    assert tests.dfs[0] == pytest.approx(9.0)
    assert tests.standard_errors[0] == pytest.approx(2.0)
    assert tests.p_values[0] == pytest.approx(stats.t.sf(0.5, 9))
    known = moderated_t_tests([1.0], [[1.0]], [4.0], [math.inf], one_sided=True)
    assert known.p_values[0] == pytest.approx(stats.norm.sf(0.5))
