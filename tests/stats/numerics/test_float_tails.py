"""The float path of the t and F tails against the numpy path, scipy and mpmath.

A scalar or an array of at most ``SCALAR_PATH_AT_MOST`` entries takes the float path
(:mod:`llm_council.stats.numerics.float_tails`); more entries take numpy's. Inside the
float path's domain the two must agree to a few ulp and both match scipy; outside it
(edges, limits, NaN, huge df) the float path must refuse, so the value is numpy's, bit
for bit.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import special

from llm_council.stats.numerics import float_tails
from llm_council.stats.numerics import incomplete_beta_gamma as kernels
from llm_council.stats.numerics import special_functions as ours
from llm_council.stats.numerics.float_tails import (
    OutsideFloatPath,
    f_cdf_pair_float,
    incomplete_beta_pair_float,
    t_cdf_float,
)

mpmath.mp.dps = 40
#: float path against the numpy path: the same steps, ``math.log`` against ``np.log``
REL_PATHS = 1e-13
#: against scipy (its own error reaches 2.3e-12 in places; see test_special_functions.py)
REL_SCIPY = 5e-12
LONG = 4 * kernels.SCALAR_PATH_AT_MOST + 1  # an array this long takes the numpy path


def _relative(got: float, expected: float) -> float:
    return abs(got - expected) / abs(expected)


def _random_beta_arguments(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = np.exp(rng.uniform(np.log(1e-3), np.log(4000.0), LONG))
    b = np.exp(rng.uniform(np.log(1e-3), np.log(4000.0), LONG))
    x = rng.uniform(1e-9, 1.0 - 1e-9, LONG)
    return a, b, x, 1.0 - x


def test_incomplete_beta_float_agrees_with_the_numpy_path_and_scipy() -> None:
    a, b, x, y = _random_beta_arguments(11)
    lower_numpy, upper_numpy = kernels.incomplete_beta_pair(a, b, x, y)  # LONG: numpy's path
    for i in range(LONG):
        lower, upper = incomplete_beta_pair_float(a[i], b[i], x[i], y[i])
        for got, expected in ((lower, lower_numpy[i]), (upper, upper_numpy[i])):
            if expected > 1e-300:
                assert _relative(got, expected) < REL_PATHS, (a[i], b[i], x[i])
        scipy_lower = special.betainc(a[i], b[i], x[i])
        if scipy_lower > 1e-300:
            assert _relative(lower, scipy_lower) < REL_SCIPY, (a[i], b[i], x[i])


@pytest.mark.parametrize(
    ("df", "t"),
    [(1.0, -3.0), (2.5, 0.3), (3.0, -2.1), (7.5, 0.4), (41.0, 3.3), (4000.0, -1.9), (0.7, 50.0)],
)
def test_t_cdf_float_matches_mpmath(df: float, t: float) -> None:
    # P(T_df <= t) = I_{df/(df+t^2)}(df/2, 1/2) / 2 for t < 0 (A&S 26.7.1), at 40 digits
    df_mp, t_mp = mpmath.mpf(df), mpmath.mpf(t)
    tail = mpmath.betainc(df_mp / 2, mpmath.mpf(1) / 2, 0, df_mp / (df_mp + t_mp**2), True) / 2
    expected = float(tail if t < 0 else 1 - tail)
    got = t_cdf_float(df, t, tiny_df=ours.TINY_DF, normal_df=ours.NORMAL_DF)
    assert _relative(got, expected) < 1e-12


def test_far_t_tail_keeps_its_relative_accuracy() -> None:
    # |t| = 1e200: df / t^2 underflows to 0, so ln x comes from ln df - 2 ln|t| - ln(1 + r);
    # the tail is about 1e-100 at df = 1/2 (scipy's Boost returns 0 here; mpmath is the
    # reference, as in test_special_functions.py)
    got = float(ours.stdtr(0.5, -1e200))
    df, t = mpmath.mpf(0.5), mpmath.mpf(-1e200)
    expected = float(mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, df / (df + t * t), True) / 2)
    assert _relative(got, expected) < 1e-12
    padded = ours.stdtr(np.full(LONG, 0.5), np.full(LONG, -1e200))
    assert _relative(got, padded[0]) < REL_PATHS


@pytest.mark.parametrize(
    ("dfn", "dfd", "x"),
    [(1.0, 3.0, 0.2), (3.0, 12.0, 1.7), (2.0, 2.0, 40.0), (12.0, 3.0, 1e-4), (7.0, 9.0, 1e6)],
)
def test_f_pair_float_matches_scipy(dfn: float, dfd: float, x: float) -> None:
    lower, upper = f_cdf_pair_float(dfn, dfd, x)
    assert _relative(lower, special.fdtr(dfn, dfd, x)) < REL_SCIPY
    assert _relative(upper, special.fdtrc(dfn, dfd, x)) < REL_SCIPY


def test_small_calls_agree_with_the_long_array_path() -> None:
    rng = np.random.default_rng(5)
    df = np.exp(rng.uniform(np.log(0.2), np.log(5000.0), LONG))
    t = rng.standard_t(3.0, LONG) * 3.0
    x = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), LONG))
    long_t, long_f = ours.stdtr(df, t), ours.fdtr_both(df, 30.0, x)
    for i in range(LONG):
        assert _relative(float(ours.stdtr(df[i], t[i])), long_t[i]) < REL_PATHS
        lower, upper = ours.fdtr_both(df[i], 30.0, x[i])
        assert _relative(float(lower), long_f[0][i]) < REL_PATHS
        assert _relative(float(upper), long_f[1][i]) < REL_PATHS
    # and three at a time, as the session passes them
    pieces = np.concatenate([ours.stdtr(df[i : i + 3], t[i : i + 3]) for i in range(0, LONG, 3)])
    assert np.max(np.abs(pieces - long_t) / long_t) < REL_PATHS


EDGES_T = [
    (3.0, 0.0),
    (3.0, math.inf),
    (3.0, -math.inf),
    (math.inf, 1.2),
    (1e21, -0.3),
    (1e-301, 2.0),
    (0.0, 1.0),
    (-2.0, 1.0),
    (math.nan, 1.0),
    (3.0, math.nan),
    (30000.0, 2.0),  # a = 15,000: past LARGE_BETA_PARAMETER, scipy's
]


@pytest.mark.parametrize(("df", "t"), EDGES_T)
def test_t_edges_leave_the_float_path_and_give_the_numpy_value(df: float, t: float) -> None:
    with pytest.raises(OutsideFloatPath):
        t_cdf_float(df, t, tiny_df=ours.TINY_DF, normal_df=ours.NORMAL_DF)
    padded_df = np.full(LONG, 5.0)
    padded_t = np.full(LONG, 0.5)
    padded_df[0], padded_t[0] = df, t
    numpy_value = ours.stdtr(padded_df, padded_t)[0]
    got = ours.stdtr(df, t)
    assert np.array_equal(got, numpy_value, equal_nan=True)
    expected = special.stdtr(df, t)
    assert np.isnan(got) == np.isnan(expected)
    if not np.isnan(expected):
        assert got == pytest.approx(expected, rel=REL_SCIPY)


EDGES_F = [
    (3.0, 12.0, 0.0),
    (3.0, 12.0, math.inf),
    (3.0, 12.0, -1.0),
    (math.inf, 12.0, 1.0),
    (3.0, math.inf, 1.0),
    (0.0, 12.0, 1.0),
    (3.0, 12.0, math.nan),
    (3.0, 20000.0, 1.1),  # b = 10,000: scipy's
    (1e-200, 12.0, 1e-200),  # dfn x underflows to 0
]


@pytest.mark.parametrize(("dfn", "dfd", "x"), EDGES_F)
def test_f_edges_leave_the_float_path_and_give_the_numpy_value(
    dfn: float, dfd: float, x: float
) -> None:
    with pytest.raises(OutsideFloatPath):
        f_cdf_pair_float(dfn, dfd, x)
    for ours_function, scipy_function in ((ours.fdtr, special.fdtr), (ours.fdtrc, special.fdtrc)):
        padded = [np.full(LONG, 2.0) for _ in range(3)]
        for array, value in zip(padded, (dfn, dfd, x), strict=True):
            array[0] = value
        assert np.array_equal(ours_function(dfn, dfd, x), ours_function(*padded)[0], equal_nan=True)
        expected = scipy_function(dfn, dfd, x)
        got = ours_function(dfn, dfd, x)
        assert np.isnan(got) == np.isnan(expected)


def test_incomplete_beta_float_refuses_outside_its_domain() -> None:
    for arguments in [
        (0.0, 1.0, 0.5, 0.5),
        (1.0, 6000.0, 0.5, 0.5),
        (1.0, 1.0, 0.0, 1.0),  # x = 0 with no ln x given
        (1.0, 1.0, 1.0, 0.0),
        (1.0, 1.0, -0.1, 1.1),
        (math.nan, 1.0, 0.5, 0.5),
        (math.inf, 1.0, 0.5, 0.5),
    ]:
        with pytest.raises(OutsideFloatPath):
            incomplete_beta_pair_float(*arguments)
    # x underflowed to 0 but ln x given: the far tail, inside the domain
    lower, upper = incomplete_beta_pair_float(1.5, 0.5, 0.0, 1.0, -300.0)
    assert 0.0 < lower < 1e-150 and upper == 1.0


def test_shapes_and_types_are_scipys() -> None:
    assert isinstance(ours.stdtr(3.0, 1.0), np.float64)
    assert isinstance(ours.stdtr(3, True), np.float64)  # integers and booleans as floats
    assert isinstance(ours.stdtr(np.float64(3.0), np.array(1.0)), np.float64)
    grid = np.array([[0.5, -1.0, 2.0], [3.0, -0.1, 0.0]])
    assert ours.stdtr(4.0, grid).shape == (2, 3)
    assert np.allclose(ours.stdtr(4.0, grid), special.stdtr(4.0, grid), rtol=REL_SCIPY)
    assert ours.stdtr(4.0, np.array([])).shape == (0,)
    lower, upper = ours.fdtr_both(3.0, 12.0, np.array([[1.0], [2.0]]))
    assert lower.shape == upper.shape == (2, 1)
    assert isinstance(ours.fdtr_both(3.0, 12.0, 1.0)[0], np.float64)
    assert ours.fdtrc(3.0, 12.0, np.array([])).shape == (0,)


def test_the_stirling_cache_gives_the_uncached_value() -> None:
    uncached = kernels._stirling_error_scalar.__wrapped__
    for z in (0.5, 1.5, 3.7, 9.999, 10.0, 23.7, 1e6):
        assert kernels._stirling_error_scalar(z) == uncached(z)
        assert kernels._stirling_error_scalar(z) == uncached(z)  # the cached value


def test_float_path_module_imports_no_scipy() -> None:
    # the float path is the session's: it must not pull scipy in (ADR 0063)
    assert "scipy" not in float_tails.__dict__
