"""The ``scipy.special`` functions the session path uses, in numpy and ``math`` only.

``import scipy.special`` costs the audited ``ask`` about 0.29 s of CPU (it loads scipy's
array-API layer, which imports ``numpy.f2py``, ``numpy.testing`` and ``numpy.ma``), more
than all the audit's statistics together (ADR 0063). These functions take scipy's names and
argument order, so a caller changes only its import line; they agree with mpmath to 1e-12
relative and with scipy to 5e-12 over the ranges the callers use, tested in
``tests/stats/numerics/test_special_functions.py``. The t, F, chi-squared and binomial functions
are here; the normal ones (:mod:`.normal_functions`) and digamma and polygamma
(:mod:`.polygamma_functions`) are re-exported. NaN in gives NaN out; invalid degrees of freedom
(<= 0 or NaN) give NaN; a 0-d input gives a numpy float, an array input an array. Two
exceptions to "no scipy", imported inside the function: an incomplete beta with a parameter
past 5,000 (a t or F with more than 10,000 degrees of freedom, a binomial past 5,000
trials), where the continued fraction loses about 1e-16 times the parameter
(:data:`~llm_council.stats.numerics.incomplete_beta_gamma.LARGE_BETA_PARAMETER`), and an incomplete
gamma past a = 1e7. A session's residual degrees of freedom do not come near either; a
moderated test's prior df can (ADR 0063), and then that session imports ``scipy.special``.
The report, calibrate and probe paths keep ``scipy``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.float_tails import (
    OutsideFloatPath,
    f_cdf_pair_float,
    t_cdf_float,
)
from llm_council.stats.numerics.incomplete_beta_gamma import (
    SCALAR_PATH_AT_MOST,
    incomplete_beta_pair,
    incomplete_gamma_pair,
    log_gamma,
)
from llm_council.stats.numerics.normal_functions import log_ndtr, ndtr, ndtri
from llm_council.stats.numerics.polygamma_functions import digamma, polygamma
from llm_council.stats.numerics.special_function_inputs import as_floats, quiet, scalar_or_array

#: the functions in scipy.special's names; the normal and polygamma ones live in their own
#: modules and are re-exported here, so a caller imports them all from one place
__all__ = [
    "bdtrc",
    "chdtr",
    "chdtrc",
    "digamma",
    "fdtr",
    "fdtr_both",
    "fdtrc",
    "log_ndtr",
    "ndtr",
    "ndtri",
    "polygamma",
    "stdtr",
    "stdtr_floats",
    "stdtrit",
]

#: degrees of freedom past which the t is computed as the normal (see :func:`stdtr`)
NORMAL_DF = 1e20
#: degrees of freedom below which the t's CDF is its limit 1/2 (subnormal df overflow)
TINY_DF = 1e-300


def _float_entries(*values: ArrayLike) -> tuple[tuple[int, ...], list[tuple[float, ...]]] | None:
    """The arguments' broadcast shape and entries as float tuples, when they have at most
    :data:`SCALAR_PATH_AT_MOST` entries (the float path of :mod:`.float_tails`); else None."""
    if all(isinstance(value, (float, int, np.floating, np.integer)) for value in values):
        return (), [tuple(float(value) for value in values)]
    arrays = np.broadcast_arrays(*as_floats(*values))
    if not 0 < arrays[0].size <= SCALAR_PATH_AT_MOST:
        return None
    return arrays[0].shape, list(zip(*(array.ravel().tolist() for array in arrays), strict=True))


def _t_two_sided_tail(df: np.ndarray, t: np.ndarray) -> np.ndarray:
    r""":math:`P(|T_{df}| > |t|) = I_{df/(df+t^2)}(df/2, 1/2)` (A&S 26.7.1), finite df > 0."""
    t_abs = np.abs(t)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # |t| >= 1: r = df/t^2 without squaring t (no overflow); |t| < 1: t^2 without overflow
        ratio = (df / np.maximum(t_abs, 1.0)) / np.maximum(t_abs, 1.0)
        square = np.minimum(t_abs, 1.0) ** 2
        x = np.where(t_abs >= 1.0, ratio / (1.0 + ratio), df / (df + square))
        y = np.where(t_abs >= 1.0, 1.0 / (1.0 + ratio), square / (df + square))
        # ln x for the far tail, where df / t^2 may underflow (ln r - ln(1 + r) loses
        # nothing for r <= 1/2; nearer x = 1 the incomplete beta takes ln x from y)
        far = (t_abs >= 1.0) & (ratio <= 0.5)
        log_x = np.where(far, np.log(df) - 2.0 * np.log(t_abs) - np.log1p(ratio), np.nan)
    return incomplete_beta_pair(df / 2.0, 0.5, x, y, log_x)[0]


def stdtr_floats(dfs: list[float], ts: list[float]) -> list[float] | None:
    """:func:`stdtr` of float entries on the float path only (the same values :func:`stdtr`
    gives for them), or None when an entry lies outside it (then call :func:`stdtr`)."""
    if not 0 < len(ts) <= SCALAR_PATH_AT_MOST:
        return None  # stdtr takes its numpy path for these
    try:
        return [
            t_cdf_float(d, v, tiny_df=TINY_DF, normal_df=NORMAL_DF)
            for d, v in zip(dfs, ts, strict=True)
        ]
    except OutsideFloatPath:
        return None


def stdtr(df: ArrayLike, t: ArrayLike) -> np.ndarray:
    r"""Student t CDF :math:`P(T_{df} \le t)`; ``df = inf`` is the normal CDF.

    :math:`\tfrac12 I_{df/(df+t^2)}(df/2, \tfrac12)` for :math:`t < 0` and one minus that for
    :math:`t > 0` (A&S 26.7.1; Cephes ``stdtr``), the incomplete beta by
    :func:`~llm_council.stats.numerics.incomplete_beta_gamma.incomplete_beta_pair`; the normal
    past ``df`` = 1e20, the limit 1/2 below 1e-300. A few entries inside the ordinary domain
    take the float path (:mod:`.float_tails`), which raises no numpy warning and so needs no
    ``errstate``; the rest the numpy path.
    """
    small = _float_entries(df, t)
    if small is not None:
        shape, entries = small
        try:
            values = [t_cdf_float(d, v, tiny_df=TINY_DF, normal_df=NORMAL_DF) for d, v in entries]
            return scalar_or_array(np.array(values, dtype=float).reshape(shape))
        except OutsideFloatPath:  # an edge or a limit: the numpy path below holds them all
            pass
    return _stdtr_numpy(df, t)


@quiet
def _stdtr_numpy(df: ArrayLike, t: ArrayLike) -> np.ndarray:
    """:func:`stdtr`'s numpy path: every edge and limit."""
    df_values, t_values = np.broadcast_arrays(*as_floats(df, t))
    finite_df = (df_values >= TINY_DF) & (df_values <= NORMAL_DF)
    half_tail = 0.5 * _t_two_sided_tail(np.where(finite_df, df_values, 1.0), t_values)
    result = np.where(t_values < 0, half_tail, 1.0 - half_tail)
    result = np.where(t_values == 0, 0.5, result)
    # past NORMAL_DF the t is the normal to 5e-15 relative wherever the CDF is above 1e-300
    # (the difference is about (t^4 + t^2) / (4 df) relative, A&S 26.7.8, and |t| < 38
    # there); below TINY_DF half the mass is at each infinity (the limit scipy returns)
    result = np.where(df_values > NORMAL_DF, ndtr(t_values), result)
    tiny = (df_values > 0) & (df_values < TINY_DF)
    result = np.where(tiny, np.where(np.isinf(t_values), (t_values > 0) * 1.0, 0.5), result)
    valid = (df_values > 0) & ~np.isnan(t_values)
    return scalar_or_array(np.where(valid, result, np.nan))


def _t_log_density(df: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:math:`\\ln f_{df}(t)` of Student's t."""
    return (
        log_gamma((df + 1.0) / 2.0)
        - log_gamma(df / 2.0)
        - 0.5 * np.log(df * math.pi)
        - (df + 1.0) / 2.0 * _log1p_square_over(t, df)
    )


def _log1p_square_over(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """:math:`\\ln(1 + t^2/df)`, as :math:`\\ln(t^2/df) + \\ln(1 + df/t^2)` where :math:`t^2/df > 1`
    (no overflow of :math:`t^2` up to the largest double)."""
    t_abs = np.abs(t)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratio = (t_abs / np.sqrt(df)) ** 2
        large = 2.0 * (np.log(t_abs) - 0.5 * np.log(df)) + np.log1p(1.0 / ratio)
        return np.where(ratio > 1.0, large, np.log1p(ratio))


@quiet
def stdtrit(df: ArrayLike, p: ArrayLike) -> np.ndarray:
    r"""Student t quantile: the :math:`t` with :math:`P(T_{df} \le t) = p`.

    Solved on the lower tail :math:`q = \min(p, 1-p)` (symmetry) for :math:`u = \ln(-t)`:
    :math:`h(u) = \ln F(-e^u) - \ln q` is decreasing and nearly linear in the tails, so
    Newton's step :math:`u \leftarrow u - h/h'`, :math:`h' = f(t)\,t/F(t)`, converges in a
    few steps, kept inside a bracket and replaced by bisection when it leaves it. The
    bracket: the normal quantile :math:`|z_q| \le |t_q|` (t tails are heavier) and the tail
    bound :math:`|t_q| \le (K df^{(df-1)/2}/q)^{1/df}`, :math:`K = f(0)`, from
    :math:`f(t) \le K (t^2/df)^{-(df+1)/2}`. Converged after a Newton step below 1e-9
    relative in :math:`u` (quadratic convergence leaves about 1e-18), any step below 4e-16,
    or when the bracket closes; 200 steps (bisection alone needs about 60) else ``ArithmeticError``.
    ``df`` past 1e20 (and inf) is :func:`ndtri`; below 1e-300 the quantiles are infinite;
    :math:`p = 0, 1` give -inf, inf (as scipy's); invalid df or :math:`p` outside [0, 1]
    NaN.
    """
    df_values, p_values = np.broadcast_arrays(*as_floats(df, p))
    valid = (df_values > 0) & (p_values >= 0) & (p_values <= 1)
    result = np.where(p_values == 0, -np.inf, np.where(p_values == 1, np.inf, 0.0))
    result = np.where((df_values > NORMAL_DF) & valid, ndtri(p_values), result)
    # below TINY_DF every quantile but the median lies past the largest double
    tiny = valid & (df_values < TINY_DF) & (p_values != 0.5)
    result = np.where(tiny, np.where(p_values < 0.5, -np.inf, np.inf), result)
    middle = (df_values >= TINY_DF) & (df_values <= NORMAL_DF)
    solve = valid & middle & (p_values > 0) & (p_values < 1) & (p_values != 0.5)
    if np.any(solve):
        result = result.copy()
        result[solve] = _t_quantile_lower_tail(df_values[solve], p_values[solve])
    return scalar_or_array(np.where(valid, result, np.nan))


def _t_quantile_lower_tail(df: np.ndarray, p: np.ndarray) -> np.ndarray:
    """:func:`stdtrit` for finite df and 0 < p < 1, p != 1/2 (1-d arrays)."""
    lower = p < 0.5
    q = np.where(lower, p, 1.0 - p)  # exact for p >= 1/2 (Sterbenz)
    log_q = np.log(q)
    normal = np.abs(ndtri(q))
    log_k = log_gamma((df + 1.0) / 2.0) - log_gamma(df / 2.0) - 0.5 * np.log(df * math.pi)
    low = np.log(normal)
    high = (log_k + 0.5 * (df - 1.0) * np.log(df) - log_q) / df
    high = np.minimum(np.maximum(high, low), math.log(np.finfo(float).max))
    u = np.minimum(high, np.maximum(low, np.log(np.maximum(normal, 1e-300))))
    converged = np.zeros(df.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(200):
            t = -np.exp(u)
            log_cdf = np.log(stdtr(df, t))
            gap = log_cdf - log_q
            low = np.where(gap > 0, u, low)
            high = np.where(gap <= 0, u, high)
            slope = np.exp(_t_log_density(df, t) - log_cdf) * t
            newton = u - gap / slope
            inside = np.isfinite(newton) & (newton >= low) & (newton <= high)
            proposal = np.where(inside, newton, 0.5 * (low + high))
            step = np.abs(proposal - u)
            u = np.where(converged, u, proposal)
            # Newton converges quadratically: after a step of 1e-9 the error is near 1e-18
            scale = np.maximum(1.0, np.abs(u))
            small_step = (inside & (step <= 1e-9 * scale)) | (step <= 4e-16 * scale)
            converged = converged | small_step | (high - low <= 0) | (gap == 0)
            if np.all(converged):
                break
        else:
            raise ArithmeticError("stdtrit: the t quantile did not converge in 200 steps")
        # the quantile lies beyond the largest double: -inf, as the limit
        beyond = np.log(stdtr(df, -np.finfo(float).max)) > log_q
    t = np.where(beyond, -np.inf, -np.exp(u))
    return np.where(lower, t, -t)


@quiet
def fdtr(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""F CDF :math:`P(F_{dfn,dfd} \le x) = I_{w}(dfn/2, dfd/2)`, :math:`w =
    dfn\,x/(dfn\,x + dfd)` (A&S 26.6.2; Cephes ``fdtr``); NaN for :math:`x < 0` and for an
    infinite df (but at :math:`x = \infty`, 1), as scipy's."""
    return scalar_or_array(_f_pair(dfn, dfd, x)[0])


@quiet
def fdtrc(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""F survival :math:`P(F_{dfn,dfd} > x) = I_{1-w}(dfn/2, dfd/2)`'s complement, computed
    directly (small tails keep their relative accuracy); NaN for :math:`x < 0`."""
    return scalar_or_array(_f_pair(dfn, dfd, x)[1])


def fdtr_both(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fdtr` and :func:`fdtrc` from one incomplete beta (a two-sided F test needs
    both; each alone computes the pair and drops half). Scalars inside the ordinary
    domain take the float path without ``errstate`` (it raises no numpy warning)."""
    if all(isinstance(value, float | int) for value in (dfn, dfd, x)):
        try:
            lower, upper = f_cdf_pair_float(float(dfn), float(dfd), float(x))
            return np.float64(lower), np.float64(upper)
        except OutsideFloatPath:  # an edge or a limit: the numpy path holds them all
            pass
    return _fdtr_both_numpy(dfn, dfd, x)


@quiet
def _fdtr_both_numpy(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fdtr_both` through :func:`_f_pair` (its float path for small arrays)."""
    lower, upper = _f_pair(dfn, dfd, x)
    return scalar_or_array(lower), scalar_or_array(upper)


def _f_pair(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    small = _float_entries(dfn, dfd, x)
    if small is not None:
        shape, entries = small
        try:
            pairs = np.array([f_cdf_pair_float(*entry) for entry in entries], dtype=float)
            return pairs[:, 0].reshape(shape), pairs[:, 1].reshape(shape)
        except OutsideFloatPath:  # an edge or a limit: the numpy path below holds them all
            pass
    dfn_values, dfd_values, x_values = np.broadcast_arrays(*as_floats(dfn, dfd, x))
    finite = np.isfinite(dfn_values) & np.isfinite(dfd_values)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # w = 1 / (1 + dfd / (dfn x)) and 1 - w = 1 / (1 + dfn x / dfd), neither overflowing
        w = 1.0 / (1.0 + dfd_values / (dfn_values * x_values))
        w_complement = 1.0 / (1.0 + dfn_values * x_values / dfd_values)
    w = np.where(x_values == 0, 0.0, w)
    w_complement = np.where(x_values == 0, 1.0, w_complement)
    lower, upper = incomplete_beta_pair(dfn_values / 2.0, dfd_values / 2.0, w, w_complement)
    ok = finite & (x_values >= 0)
    lower, upper = np.where(ok, lower, np.nan), np.where(ok, upper, np.nan)
    # x = inf is the end of the support whatever the df, infinite ones too (as scipy's)
    at_end = np.isposinf(x_values) & (dfn_values > 0) & (dfd_values > 0)
    return np.where(at_end, 1.0, lower), np.where(at_end, 0.0, upper)


@quiet
def chdtr(df: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Chi-squared CDF :math:`P(\chi^2_{df} \le x) = P(df/2, x/2)` (A&S 26.4.19); NaN for
    :math:`x < 0`; ``df = 0`` and ``df = inf`` give scipy's limits (1 and 0 for finite
    :math:`x > 0`)."""
    return scalar_or_array(_chi2_pair(df, x)[0])


@quiet
def chdtrc(df: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Chi-squared survival :math:`P(\chi^2_{df} > x) = Q(df/2, x/2)`, computed directly."""
    return scalar_or_array(_chi2_pair(df, x)[1])


def _chi2_pair(df: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    df_values, x_values = np.broadcast_arrays(*as_floats(df, x))
    lower, upper = incomplete_gamma_pair(df_values / 2.0, x_values / 2.0)
    lower = np.where(np.isfinite(df_values), lower, np.nan)
    upper = np.where(np.isfinite(df_values), upper, np.nan)
    # the limits scipy returns: df = 0 is a point mass at 0, df = inf puts no mass below x
    point_mass = (df_values == 0) & (x_values > 0)
    no_mass = np.isposinf(df_values) & (x_values >= 0) & np.isfinite(x_values)
    lower = np.where(point_mass, 1.0, np.where(no_mass, 0.0, lower))
    upper = np.where(point_mass, 0.0, np.where(no_mass, 1.0, upper))
    return lower, upper


@quiet
def bdtrc(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> np.ndarray:
    r"""Binomial upper tail :math:`P(X > k) = I_p(\lfloor k\rfloor + 1, n - \lfloor k\rfloor)`,
    :math:`X \sim B(n, p)` (A&S 26.5.24; Cephes ``bdtrc``): 1 for :math:`k < 0`, 0 for
    :math:`k = n`; NaN for :math:`k > n` or :math:`p` outside [0, 1]; ``n`` floored, NaN
    past :math:`2^{31} - 1` (all as scipy's)."""
    k_values, n_values, p_values = np.broadcast_arrays(*as_floats(k, n, p))
    # scipy takes n as a C int: floored, NaN past its range (and for inf)
    n_in_range = (n_values >= 0) & (n_values <= _INT_MAX)
    n_values = np.floor(np.where(n_in_range, n_values, 0.0))
    floor_k = np.floor(k_values)
    middle = (floor_k >= 0) & (floor_k < n_values)
    a = np.where(middle, floor_k + 1.0, 1.0)
    b = np.where(middle, n_values - floor_k, 1.0)
    tail = incomplete_beta_pair(a, b, p_values, 1.0 - p_values)[0]
    result = np.where(floor_k < 0, 1.0, np.where(floor_k >= n_values, 0.0, tail))
    result = np.where(floor_k > n_values, np.nan, result)  # as scipy's
    valid = (p_values >= 0) & (p_values <= 1) & ~np.isnan(k_values) & n_in_range
    return scalar_or_array(np.where(valid, result, np.nan))


_INT_MAX = 2**31 - 1
