"""The ``scipy.special`` functions the session path uses, in numpy and ``math`` only.

``import scipy.special`` costs the audited ``ask`` about 0.29 s of CPU (it loads scipy's
array-API layer, which imports ``numpy.f2py``, ``numpy.testing`` and ``numpy.ma``), more
than all the audit's statistics together (ADR 0063). These functions take scipy's names and
argument order, so a caller changes only its import line; they agree with scipy to 1e-12
relative (looser bounds where stated) over the ranges the callers use, tested in
``tests/stats/test_special_functions.py``. NaN in gives NaN out; invalid degrees of freedom
(<= 0 or NaN) give NaN; a 0-d input gives a numpy float, an array input an array. One
exception to "no scipy": an incomplete beta with a parameter past 5,000 (a t or F with more
than 10,000 degrees of freedom, a binomial past 5,000 trials) is scipy's, imported inside
the function, because the continued fraction loses about 1e-16 times the parameter there
(:data:`~llm_council.stats.incomplete_beta_gamma.LARGE_BETA_PARAMETER`); one session's
degrees of freedom never come near it. The report, calibrate and probe paths keep ``scipy``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.incomplete_beta_gamma import (
    incomplete_beta_pair,
    incomplete_gamma_pair,
    log_gamma,
)

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _floats(*values: ArrayLike) -> list[np.ndarray]:
    return [np.asarray(value, dtype=float) for value in values]


def _out(values: np.ndarray) -> np.ndarray:
    """A numpy float for a 0-d result (as scipy's ufuncs return), the array otherwise."""
    return np.asarray(values, dtype=float)[()]


def _erfc_array(z: np.ndarray) -> np.ndarray:
    """``math.erfc`` over an array (numpy has no erfc; libm's is accurate to about 1 ulp)."""
    return np.asarray(_erfc(z), dtype=float).reshape(np.shape(z))


def ndtr(x: ArrayLike) -> np.ndarray:
    r"""Standard normal CDF :math:`\Phi(x) = \tfrac12\operatorname{erfc}(-x/\sqrt2)`
    (A&S 7.1.2, 26.2.29): relative accuracy kept in the lower tail."""
    (x_values,) = _floats(x)
    return _out(0.5 * _erfc_array(-x_values * _SQRT1_2))


def log_ndtr(x: ArrayLike) -> np.ndarray:
    r""":math:`\ln\Phi(x)` without underflow.

    :math:`x \ge 0`: ``log1p(-erfc(x/sqrt2)/2)``; :math:`-20 < x < 0`:
    :math:`\ln(\tfrac12\operatorname{erfc}(-x/\sqrt2))`; :math:`x \le -20`: the asymptotic
    series :math:`\ln\Phi(x) = -\tfrac{x^2}2 - \ln(-x) - \ln\sqrt{2\pi} + \ln\sum_{k=0}^{10}
    (-1)^k (2k-1)!!\,x^{-2k}` (A&S 26.2.12; truncation below 1e-17 at :math:`x = -20`).
    """
    (x_values,) = _floats(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = 0.5 * _erfc_array(np.abs(x_values) * _SQRT1_2)
        result = np.where(x_values >= 0, np.log1p(-tail), np.log(tail))
        far = x_values <= -20.0
        if np.any(far):
            z = x_values[far]
            inverse_square = 1.0 / (z * z)
            series = np.ones_like(z)
            term = np.ones_like(z)
            for k in range(1, 11):
                term = -term * (2 * k - 1) * inverse_square
                series = series + term
            result = result.copy()
            result[far] = -0.5 * z * z - np.log(-z) - _LOG_SQRT_2PI + np.log(series)
    return _out(result)


_AS241_CENTRAL = (
    (3.3871328727963666080e0, 1.3314166789178437745e2, 1.9715909503065514427e3,
     1.3731693765509461125e4, 4.5921953931549871457e4, 6.7265770927008700853e4,
     3.3430575583588128105e4, 2.5090809287301226727e3),
    (1.0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3,
     2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4,
     5.2264952788528545610e3),
)  # fmt: skip
_AS241_INTERMEDIATE = (
    (1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
     3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
     2.27238449892691845833e-2, 7.74545014278341407640e-4),
    (1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
     1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4,
     1.05075007164441684324e-9),
)  # fmt: skip
_AS241_TAIL = (
    (6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
     2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
     2.71155556874348757815e-5, 2.01033439929228813265e-7),
    (1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
     7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7,
     2.04426310338993978564e-15),
)  # fmt: skip


def _rational(
    coefficients: tuple[tuple[float, ...], tuple[float, ...]], r: np.ndarray
) -> np.ndarray:
    numerator_coefficients, denominator_coefficients = coefficients
    numerator = np.zeros_like(r)
    denominator = np.zeros_like(r)
    for coefficient in reversed(numerator_coefficients):
        numerator = numerator * r + coefficient
    for coefficient in reversed(denominator_coefficients):
        denominator = denominator * r + coefficient
    return numerator / denominator


def ndtri(p: ArrayLike) -> np.ndarray:
    r"""Standard normal quantile :math:`\Phi^{-1}(p)`: Wichura's AS 241 (PPND16).

    Three rational approximations of degree 7: :math:`|p - \tfrac12| \le 0.425` in
    :math:`r = 0.180625 - q^2`; otherwise in :math:`r = \sqrt{-\ln\min(p, 1-p)}` shifted by
    1.6 (:math:`r \le 5`) or 5; relative accuracy about 1e-16 (Wichura 1988, Applied
    Statistics 37, 477-484; the coefficients as in CPython's ``statistics``). :math:`p = 0`
    gives -inf, 1 gives inf, outside [0, 1] NaN.
    """
    (p_values,) = _floats(p)
    q = p_values - 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        central = q * _rational(_AS241_CENTRAL, 0.180625 - q * q)
        r = np.sqrt(-np.log(np.where(q <= 0, p_values, 1.0 - p_values)))
        tail = np.where(
            r <= 5.0, _rational(_AS241_INTERMEDIATE, r - 1.6), _rational(_AS241_TAIL, r - 5.0)
        )
        tail = np.where(q < 0, -tail, tail)
    result = np.where(np.abs(q) <= 0.425, central, tail)
    result = np.where(p_values == 0, -np.inf, np.where(p_values == 1, np.inf, result))
    return _out(np.where((p_values >= 0) & (p_values <= 1), result, np.nan))


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


def stdtr(df: ArrayLike, t: ArrayLike) -> np.ndarray:
    r"""Student t CDF :math:`P(T_{df} \le t)`; ``df = inf`` is the normal CDF.

    :math:`\tfrac12 I_{df/(df+t^2)}(df/2, \tfrac12)` for :math:`t < 0` and one minus that for
    :math:`t > 0` (A&S 26.7.1; Cephes ``stdtr``), the incomplete beta by
    :func:`~llm_council.stats.incomplete_beta_gamma.incomplete_beta_pair`.
    """
    df_values, t_values = np.broadcast_arrays(*_floats(df, t))
    finite_df = np.isfinite(df_values) & (df_values > 0)
    half_tail = 0.5 * _t_two_sided_tail(np.where(finite_df, df_values, 1.0), t_values)
    result = np.where(t_values < 0, half_tail, 1.0 - half_tail)
    result = np.where(t_values == 0, 0.5, result)
    result = np.where(np.isinf(df_values) & (df_values > 0), ndtr(t_values), result)
    valid = (df_values > 0) & ~np.isnan(t_values)
    return _out(np.where(valid, result, np.nan))


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
    ``df = inf`` is :func:`ndtri`; :math:`p = 0, 1` give -inf, inf (as scipy's); invalid
    df or :math:`p` outside [0, 1] NaN.
    """
    df_values, p_values = np.broadcast_arrays(*_floats(df, p))
    valid = (df_values > 0) & (p_values >= 0) & (p_values <= 1)
    result = np.where(p_values == 0, -np.inf, np.where(p_values == 1, np.inf, 0.0))
    result = np.where(np.isinf(df_values) & valid, ndtri(p_values), result)
    solve = valid & np.isfinite(df_values) & (p_values > 0) & (p_values < 1) & (p_values != 0.5)
    if np.any(solve):
        result = result.copy()
        result[solve] = _t_quantile_lower_tail(df_values[solve], p_values[solve])
    return _out(np.where(valid, result, np.nan))


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


def fdtr(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""F CDF :math:`P(F_{dfn,dfd} \le x) = I_{w}(dfn/2, dfd/2)`, :math:`w =
    dfn\,x/(dfn\,x + dfd)` (A&S 26.6.2; Cephes ``fdtr``); NaN for :math:`x < 0` and for an
    infinite df (but at :math:`x = \infty`, 1), as scipy's."""
    return _out(_f_pair(dfn, dfd, x)[0])


def fdtrc(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""F survival :math:`P(F_{dfn,dfd} > x) = I_{1-w}(dfn/2, dfd/2)`'s complement, computed
    directly (small tails keep their relative accuracy); NaN for :math:`x < 0`."""
    return _out(_f_pair(dfn, dfd, x)[1])


def _f_pair(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    dfn_values, dfd_values, x_values = np.broadcast_arrays(*_floats(dfn, dfd, x))
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


def chdtr(df: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Chi-squared CDF :math:`P(\chi^2_{df} \le x) = P(df/2, x/2)` (A&S 26.4.19); NaN for
    :math:`x < 0`; ``df = 0`` and ``df = inf`` give scipy's limits (1 and 0 for finite
    :math:`x > 0`)."""
    return _out(_chi2_pair(df, x)[0])


def chdtrc(df: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Chi-squared survival :math:`P(\chi^2_{df} > x) = Q(df/2, x/2)`, computed directly."""
    return _out(_chi2_pair(df, x)[1])


def _chi2_pair(df: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    df_values, x_values = np.broadcast_arrays(*_floats(df, x))
    lower, upper = incomplete_gamma_pair(df_values / 2.0, x_values / 2.0)
    lower = np.where(np.isfinite(df_values), lower, np.nan)
    upper = np.where(np.isfinite(df_values), upper, np.nan)
    # the limits scipy returns: df = 0 is a point mass at 0, df = inf puts no mass below x
    point_mass = (df_values == 0) & (x_values > 0)
    no_mass = np.isposinf(df_values) & (x_values >= 0) & np.isfinite(x_values)
    lower = np.where(point_mass, 1.0, np.where(no_mass, 0.0, lower))
    upper = np.where(point_mass, 0.0, np.where(no_mass, 1.0, upper))
    return lower, upper


def bdtrc(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> np.ndarray:
    r"""Binomial upper tail :math:`P(X > k) = I_p(\lfloor k\rfloor + 1, n - \lfloor k\rfloor)`,
    :math:`X \sim B(n, p)` (A&S 26.5.24; Cephes ``bdtrc``): 1 for :math:`k < 0`, 0 for
    :math:`k = n`; NaN for :math:`k > n` or :math:`p` outside [0, 1] (as scipy's)."""
    k_values, n_values, p_values = np.broadcast_arrays(*_floats(k, n, p))
    floor_k = np.floor(k_values)
    middle = (floor_k >= 0) & (floor_k < n_values)
    a = np.where(middle, floor_k + 1.0, 1.0)
    b = np.where(middle, n_values - floor_k, 1.0)
    tail = incomplete_beta_pair(a, b, p_values, 1.0 - p_values)[0]
    result = np.where(floor_k < 0, 1.0, np.where(floor_k >= n_values, 0.0, tail))
    result = np.where(floor_k > n_values, np.nan, result)  # as scipy's
    valid = (p_values >= 0) & (p_values <= 1) & ~np.isnan(k_values) & ~np.isnan(n_values)
    return _out(np.where(valid, result, np.nan))


#: coefficients B_2k / (2k) of the digamma asymptotic series, k = 1..7 (A&S 6.3.18)
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
#: B_2k of the trigamma series sum_k B_2k / x^(2k+1), k = 1..7 (A&S 6.4.12)
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
#: (2k+1) B_2k of the tetragamma series sum_k (2k+1) B_2k / x^(2k+2), k = 1..7 (A&S 6.4.13)
_TETRAGAMMA_SERIES = (1 / 2, -1 / 6, 1 / 6, -3 / 10, 5 / 6, -691 / 210, 35 / 2)
_ASYMPTOTIC_FROM = 10.0


def _shift_up(x: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """``x`` moved to >= 10 by unit steps, with the (mask, value) of each step taken."""
    steps = []
    shifted = x.copy()
    for _ in range(int(_ASYMPTOTIC_FROM) + 1):
        below = shifted < _ASYMPTOTIC_FROM
        if not np.any(below):
            break
        steps.append((below, shifted.copy()))
        shifted = np.where(below, shifted + 1.0, shifted)
    return shifted, steps


def digamma(x: ArrayLike) -> np.ndarray:
    r"""Digamma :math:`\psi(x) = \Gamma'(x)/\Gamma(x)` for :math:`x > 0`.

    The recurrence :math:`\psi(x) = \psi(x+1) - 1/x` up to :math:`x \ge 10`, then
    :math:`\psi(x) = \ln x - \tfrac1{2x} - \sum_{k=1}^{7} B_{2k}/(2k\,x^{2k})` (A&S 6.3.5,
    6.3.18; truncation below 1e-17 at 10). NaN for :math:`x \le 0` (scipy returns the
    reflection there; the callers' arguments are half degrees of freedom, positive).
    """
    (x_values,) = _floats(x)
    positive = x_values > 0
    base = np.where(positive, x_values, 1.0)
    shifted, steps = _shift_up(base)
    inverse_square = 1.0 / (shifted * shifted)
    series = np.zeros_like(shifted)
    for coefficient in reversed(_DIGAMMA_SERIES):
        series = (series + coefficient) * inverse_square
    result = np.log(shifted) - 0.5 / shifted - series
    for below, value in reversed(steps):
        result = np.where(below, result - 1.0 / value, result)
    return _out(np.where(positive, result, np.nan))


def polygamma(n: int, x: ArrayLike) -> np.ndarray:
    r"""Trigamma (``n = 1``) and tetragamma (``n = 2``) for :math:`x > 0`.

    Recurrences :math:`\psi'(x) = \psi'(x+1) + 1/x^2`, :math:`\psi''(x) = \psi''(x+1) -
    2/x^3` up to :math:`x \ge 10`, then :math:`\psi'(x) = \tfrac1x + \tfrac1{2x^2} +
    \sum_{k=1}^{7} B_{2k}/x^{2k+1}` and :math:`\psi''(x) = -[\tfrac1{x^2} + \tfrac1{x^3} +
    \sum_{k=1}^{7} (2k+1)B_{2k}/x^{2k+2}]` (A&S 6.4.10-6.4.13). NaN for :math:`x \le 0`;
    other orders raise ``ValueError``.
    """
    if n not in (1, 2):
        raise ValueError(f"polygamma: only orders 1 and 2 are implemented, got n={n!r}")
    (x_values,) = _floats(x)
    positive = x_values > 0
    base = np.where(positive, x_values, 1.0)
    shifted, steps = _shift_up(base)
    inverse = 1.0 / shifted
    inverse_square = inverse * inverse
    series = np.zeros_like(shifted)
    if n == 1:
        for coefficient in reversed(_TRIGAMMA_SERIES):
            series = (series + coefficient) * inverse_square
        result = inverse + 0.5 * inverse_square + series * inverse
        for below, value in reversed(steps):
            result = np.where(below, result + 1.0 / (value * value), result)
    else:
        for coefficient in reversed(_TETRAGAMMA_SERIES):
            series = (series + coefficient) * inverse_square
        result = -(inverse_square + inverse_square * inverse + series * inverse_square)
        for below, value in reversed(steps):
            result = np.where(below, result - 2.0 / (value * value * value), result)
    return _out(np.where(positive, result, np.nan))
