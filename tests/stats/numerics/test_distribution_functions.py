"""The tails and quantiles against scipy.stats: 5e-12 relative above 1e-300 (the numpy
special functions' accuracy against scipy; tests/stats/numerics/test_special_functions.py), NaN and
infinities in the same places."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.numerics.distribution_functions import (
    binomial_greater_p,
    chi2_sf,
    f_sf,
    normal_ppf,
    t_ppf,
    t_sf,
    t_two_sided_p,
)

X = np.concatenate([np.linspace(-40.0, 40.0, 801), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300]])
Q = np.concatenate([np.linspace(0.0, 1.0, 1001), [np.nan, -0.1, 1.1, 1e-300, 1 - 1e-16]])
DFS = [0.5, 1.0, 2.0, 3.0, 4.5, 10.0, 29.0, 100.0, 1e4, 1e8, np.inf, 0.0, -1.0, np.nan]
#: scipy's own error near df = 1 is 3e-11 (tests/stats/numerics/test_special_functions.py)
REL = 5e-12


def assert_close(got: np.ndarray, expected: np.ndarray, rel: float = REL) -> None:
    """Same NaN and infinite entries; relative error at most ``rel`` where above 1e-300."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    infinite = np.isinf(expected)
    assert np.array_equal(got[infinite], expected[infinite])
    usable = np.isfinite(expected) & (np.abs(expected) > 1e-300)
    assert np.all(np.abs(got[usable] - expected[usable]) <= rel * np.abs(expected[usable]))


@pytest.mark.parametrize("df", DFS)
def test_t_tail_and_quantile_match_scipy_stats(df: float) -> None:
    # df = 1 near t = 0 scipy itself is 3e-11 off (the Cauchy's closed form says so)
    rel = 5e-11 if df == 1.0 else REL
    assert_close(t_sf(X, df), stats.t.sf(X, df), rel)
    # q = 1e-300: scipy's stdtrit returns +inf at df 3 to 10 (a wrong sign and value; the far
    # tail is tested against mpmath in tests/stats/numerics/test_special_functions.py)
    q = Q[Q != 1e-300]
    assert_close(t_ppf(q, df), stats.t.ppf(q, df), rel)
    assert_close(t_two_sided_p(X, df), 2 * stats.t.sf(np.abs(X), df), rel)


def test_t_quantile_end_points_are_infinite_like_scipy_stats() -> None:
    # scipy.special.stdtrit(3, 0) is +inf; the quantile at 0 is -inf
    assert t_ppf(0.0, 3.0) == -np.inf and t_ppf(1.0, 3.0) == np.inf
    # a hand value: t_{0.975, 10} = 2.228138851986 (standard tables)
    assert float(t_ppf(0.975, 10)) == pytest.approx(2.228138851986, abs=1e-12)


@pytest.mark.parametrize("dfn", [0.5, 1.0, 3.0, 10.0, 1e6, np.inf, 0.0])
@pytest.mark.parametrize("dfd", [1.0, 2.0, 5.0, 50.0, np.inf, 0.0])
def test_f_tail_matches_scipy_stats(dfn: float, dfd: float) -> None:
    x = np.abs(X) * 0.1 - 0.5  # negative, zero and positive values, inf and nan
    assert_close(f_sf(x, dfn, dfd), stats.f.sf(x, dfn, dfd))


@pytest.mark.parametrize("df", [0.5, 1.0, 2.0, 3.0, 7.0, 100.0, 1e6, 0.0, -1.0, np.nan])
def test_chi2_tail_matches_scipy_stats(df: float) -> None:
    x = np.abs(X) - 0.5  # negative, zero and positive values, inf and nan
    assert_close(chi2_sf(x, df), stats.chi2.sf(x, df))
    # a hand value: P(chi2_1 > 3.841458820694124) = 0.05 (the 95% point, standard tables)
    assert float(chi2_sf(3.841458820694124, 1.0)) == pytest.approx(0.05, abs=1e-12)


def test_chi2_tail_with_infinite_df_matches_scipy_stats_but_at_x_infinite() -> None:
    # chdtrc(inf, inf) is NaN where scipy.stats.chi2.sf(inf, inf) is 0; the callers' df is
    # a count of slot contrasts, so the corner is documented, not patched
    finite = X[np.isfinite(X)]
    assert_close(chi2_sf(finite, np.inf), stats.chi2.sf(finite, np.inf))
    assert np.isnan(chi2_sf(np.inf, np.inf)) and stats.chi2.sf(np.inf, np.inf) == 0.0


def test_normal_quantile_matches_scipy_stats() -> None:
    assert_close(normal_ppf(Q), stats.norm.ppf(Q), 1e-15)
    assert float(normal_ppf(0.975)) == pytest.approx(1.959963984540054, abs=1e-15)


def test_binomial_greater_p_agrees_with_binomtest_to_1e_9() -> None:
    for n in (1, 2, 5, 20, 100, 1000, 40_000):
        for k in range(0, n + 1, max(1, n // 50)):
            for p in (0.01, 0.05, 0.5, 0.9):
                expected = stats.binomtest(k, n, p, alternative="greater").pvalue
                got = binomial_greater_p(k, n, p)
                assert got == pytest.approx(expected, rel=1e-9, abs=1e-300)
    # by hand: P(X >= 2), X ~ B(3, 1/2) = (3 + 1) / 8
    assert binomial_greater_p(2, 3, 0.5) == pytest.approx(0.5, rel=1e-14)


def test_binomial_greater_p_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="successes"):
        binomial_greater_p(5, 3, 0.5)
