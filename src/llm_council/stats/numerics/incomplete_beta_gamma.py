"""Log-gamma, the regularized incomplete beta and gamma functions, vectorised in numpy.

The kernels behind :mod:`llm_council.stats.numerics.special_functions` (the t, F, chi-squared and
binomial tails), written without ``scipy`` so the audited ``ask`` need not import
``scipy.special`` (ADR 0063). Each kernel returns the function and its complement, each
computed directly where it is the smaller, so upper tails keep their relative accuracy
down to 1e-300.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

FloatArray = np.ndarray

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
#: below this argument the Stirling series is reached by the recurrence Gamma(z+1) = z Gamma(z)
_STIRLING_FROM = 10.0
_EPSILON = 1e-16
#: Lentz's stopping rule, |step - 1| <= machine epsilon (Numerical Recipes, 3rd ed., sec.
#: 5.2 and 6.4, ``betacf``): a tighter bound can never be met when the step rounds to the
#: float next above 1 (1 + 2.2e-16), which it does for a parameter near 0 (a t tail with
#: 1e-10 degrees of freedom did not converge before)
_LENTZ_EPSILON = float(np.finfo(float).eps)
_TINY = 1e-300
_MAX_TERMS = 100_000
#: above this a or b the continued fraction with x near 1 loses about 1e-16 * max(a, b) of
#: relative accuracy (it works with x, not the small 1 - x): past it scipy computes I_x
LARGE_BETA_PARAMETER = 5_000.0
#: parameters below this (subnormal halves of degrees of freedom) give NaN: the logs and
#: reciprocals of the kernels overflow there
SMALLEST_PARAMETER = 1e-300
#: past this a (2e7 degrees of freedom) the incomplete gamma is scipy's
LARGE_GAMMA_PARAMETER = 1e7
#: arrays of at most this many entries go through the same steps in Python floats: the
#: session path's calls are this small, and numpy's per-operation overhead dominated them
SCALAR_PATH_AT_MOST = 16
#: B_2k / (2k (2k - 1)), k = 1..7 (A&S 6.1.40)
_STIRLING_SERIES = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def stirling_error(z: FloatArray) -> FloatArray:
    r"""The Stirling-series remainder :math:`\delta(z) = \ln\Gamma(z) - [(z - \tfrac12)\ln z
    - z + \tfrac12\ln 2\pi]` for :math:`z > 0`.

    For :math:`z \ge 10` the series :math:`\sum_k B_{2k}/(2k(2k-1) z^{2k-1})` to the
    :math:`z^{-13}` term (truncation below 3e-17; Abramowitz & Stegun 6.1.40); below 10 by
    the recurrence :math:`\ln\Gamma(z) = \ln\Gamma(z+n) - \ln\prod_{k<n}(z+k)`, absolute
    error about 1e-14. Computing :math:`\ln B(a, b)` from :math:`\delta` instead of three
    log-gammas avoids the cancellation of :math:`\ln\Gamma` values near :math:`10^6`.
    """
    z = np.asarray(z, dtype=float)
    if z.size <= SCALAR_PATH_AT_MOST and bool(np.all((z > 0.0) & np.isfinite(z))):
        values = [_stirling_error_scalar(float(v)) for v in z.ravel()]
        return np.array(values, dtype=float).reshape(z.shape)
    shift = np.maximum(np.ceil(_STIRLING_FROM - z), 0.0)
    product = np.ones_like(z)
    for k in range(int(_STIRLING_FROM) + 1):
        product = np.where(k < shift, product * (z + k), product)
    big = z + shift
    inverse = 1.0 / big
    inverse_square = inverse * inverse
    # Horner in 1/z^2 of 1/12 - 1/(360 z^2) + 1/(1260 z^4) - ... + 1/(156 z^12)
    series = np.zeros_like(big)
    for coefficient in reversed(_STIRLING_SERIES):
        series = series * inverse_square + coefficient
    series = series * inverse
    with np.errstate(divide="ignore", invalid="ignore"):
        # delta(z) = lnGamma(z+n) - ln prod - (z - 1/2) ln z + z - ln sqrt(2 pi), n = shift
        shifted = (
            (big - 0.5) * np.log(big) - big + series - np.log(product) - (z - 0.5) * np.log(z) + z
        )
    return np.where(shift > 0, shifted, series)


@functools.lru_cache(maxsize=4096)
def _stirling_error_scalar(z: float) -> float:
    """:func:`stirling_error` of one float: the same steps in Python floats (no array overhead).

    The session path calls the tails on a handful of entries at a time, where numpy's
    per-operation cost (about a microsecond) dominated: 35 calls an audit took 15 ms. The
    Horner sum is written out (the same operations in the same order as the loop of the
    array path, so the same bits), and values are cached: a session's tails ask for the
    same half-integer degrees of freedom (and the t's 1/2) again and again.
    """
    shift = max(math.ceil(_STIRLING_FROM - z), 0)
    product = 1.0
    for k in range(shift):
        product = product * (z + k)
    big = z + shift
    inverse = 1.0 / big
    r2 = inverse * inverse
    c0, c1, c2, c3, c4, c5, c6 = _STIRLING_SERIES
    series = (((((c6 * r2 + c5) * r2 + c4) * r2 + c3) * r2 + c2) * r2 + c1) * r2 + c0
    series = series * inverse
    if shift > 0:
        return (
            (big - 0.5) * math.log(big)
            - big
            + series
            - math.log(product)
            - (z - 0.5) * math.log(z)
            + z
        )
    return series


def log_gamma(z: FloatArray) -> FloatArray:
    r""":math:`\ln\Gamma(z)` for :math:`z > 0` (Stirling with :func:`stirling_error`)."""
    z = np.asarray(z, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (z - 0.5) * np.log(z) - z + _HALF_LOG_2PI + stirling_error(z)


def _log_beta_prefactor(
    a: FloatArray, b: FloatArray, x: FloatArray, y: FloatArray, log_x: FloatArray
) -> FloatArray:
    r""":math:`\ln[x^a y^b / B(a, b)]` with :math:`y = 1 - x` given separately.

    :math:`1/B(a,b) = \sqrt{ab/(2\pi(a+b))}\,(a+b)^{a+b}/(a^a b^b)\,
    e^{\delta(a+b)-\delta(a)-\delta(b)}` (Stirling; the form of DiDonato & Morris 1992,
    ACM TOMS 18, 360, sec. 2), so the prefactor is :math:`a\ln(x/x_0) + b\ln(y/y_0) +
    \tfrac12\ln(ab/(2\pi(a+b))) + \delta(a+b) - \delta(a) - \delta(b)` with :math:`x_0 =
    a/(a+b)`: no difference of large log-gammas. :math:`\ln x` is ``log1p(-y)`` when
    :math:`x > 1/2` (and the same for :math:`\ln y`), so an accurate small :math:`y` is kept;
    a finite ``log_x`` given by the caller (an ``x`` that underflows) is used as it is.
    """
    total = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        log_x = np.where(np.isfinite(log_x), log_x, np.where(x > 0.5, np.log1p(-y), np.log(x)))
        log_y = np.where(y > 0.5, np.log1p(-x), np.log(y))
        log_x0 = -np.log1p(b / a)  # ln(a / (a + b))
        log_y0 = -np.log1p(a / b)
        return (
            a * (log_x - log_x0)
            + b * (log_y - log_y0)
            + 0.5 * (np.log(a) + np.log(b) - np.log(total))
            - _HALF_LOG_2PI
            + stirling_error(total)
            - stirling_error(a)
            - stirling_error(b)
        )


def _beta_continued_fraction(a: FloatArray, b: FloatArray, x: FloatArray) -> FloatArray:
    r"""The continued fraction of :math:`I_x(a,b)` by the modified Lentz method.

    :math:`I_x(a,b) = \frac{x^a(1-x)^b}{aB(a,b)}\,\cfrac{1}{1+\cfrac{d_1}{1+\cfrac{d_2}{1+
    \cdots}}}`, :math:`d_{2m+1} = -\frac{(a+m)(a+b+m)x}{(a+2m)(a+2m+1)}`, :math:`d_{2m} =
    \frac{m(b-m)x}{(a+2m-1)(a+2m)}`; converges fast for :math:`x < (a+1)/(a+b+2)`, in
    :math:`O(\sqrt{\max(a,b)})` steps (Numerical Recipes, 3rd ed., sec. 6.4, ``betacf``;
    Lentz's method, sec. 5.2). Iterates only on the entries not yet converged.
    """
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    a, b, x = a.ravel(), b.ravel(), x.ravel()
    if x.size <= SCALAR_PATH_AT_MOST:
        values = [
            _beta_continued_fraction_scalar(*map(float, v)) for v in zip(a, b, x, strict=True)
        ]
        return np.array(values, dtype=float)
    result = np.zeros_like(x)
    active = np.arange(x.size)
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1.0 / d
    h = d.copy()
    for m in range(1, _MAX_TERMS + 1):
        if active.size == 0:
            break
        aa_, bb_, xx_, cc, dd, hh = a[active], b[active], x[active], c[active], d[active], h[active]
        m2 = 2 * m
        even = m * (bb_ - m) * xx_ / ((qam[active] + m2) * (aa_ + m2))
        dd = 1.0 + even * dd
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = 1.0 + even / cc
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        dd = 1.0 / dd
        hh = hh * dd * cc
        odd = -(aa_ + m) * (qab[active] + m) * xx_ / ((aa_ + m2) * (qap[active] + m2))
        dd = 1.0 + odd * dd
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = 1.0 + odd / cc
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        dd = 1.0 / dd
        step = dd * cc
        hh = hh * step
        done = np.abs(step - 1.0) <= _LENTZ_EPSILON
        result[active[done]] = hh[done]
        keep = ~done
        c[active], d[active], h[active] = cc, dd, hh
        active = active[keep]
    if active.size:
        raise ArithmeticError(
            f"incomplete beta: continued fraction did not converge at a={a[active[0]]}"
        )
    return result


def _beta_continued_fraction_scalar(a: float, b: float, x: float) -> float:
    """:func:`_beta_continued_fraction` of one entry, the same steps in Python floats
    (Lentz's guard, a denominator below :data:`_TINY` in magnitude made :data:`_TINY`, is
    written out inline: this loop is the session audit's hottest, and a call a step cost a
    third of its time)."""
    tiny = _TINY
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (tiny if -tiny < d < tiny else d)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + even * d
        d = 1.0 / (tiny if -tiny < d < tiny else d)
        c = 1.0 + even / c
        if -tiny < c < tiny:
            c = tiny
        h = h * d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + odd * d
        d = 1.0 / (tiny if -tiny < d < tiny else d)
        c = 1.0 + odd / c
        if -tiny < c < tiny:
            c = tiny
        step = d * c
        h = h * step
        if -_LENTZ_EPSILON <= step - 1.0 <= _LENTZ_EPSILON:
            return h
    raise ArithmeticError(f"incomplete beta: continued fraction did not converge at a={a}")


def incomplete_beta_pair(
    a: ArrayLike, b: ArrayLike, x: ArrayLike, y: ArrayLike, log_x: ArrayLike | None = None
) -> tuple[FloatArray, FloatArray]:
    r"""Regularized incomplete beta :math:`I_x(a, b)` and its complement :math:`I_y(b, a)`.

    ``y`` is :math:`1 - x`, passed separately so a tail near :math:`x = 1` is not rounded
    away. For :math:`x < (a+1)/(a+b+2)` the continued fraction gives :math:`I_x(a,b)` and the
    complement is :math:`1 - I`; otherwise the symmetry :math:`I_x(a,b) = 1 - I_y(b,a)` swaps
    the roles (Numerical Recipes, 3rd ed., sec. 6.4). Needs :math:`a, b \ge 10^{-300}` and
    :math:`0 \le x \le 1`; NaN elsewhere. ``log_x``, where finite, is :math:`\ln x` for an
    ``x`` too small to hold (a t tail at :math:`|t| > 10^{154}`).
    """
    if log_x is None:
        log_x = np.nan
    arrays = (np.asarray(v, dtype=float) for v in (a, b, x, y, log_x))
    a, b, x, y, log_x = np.broadcast_arrays(*arrays)
    shape = a.shape
    a, b, x, y, log_x = a.ravel(), b.ravel(), x.ravel(), y.ravel(), log_x.ravel()
    valid = (a >= SMALLEST_PARAMETER) & (b >= SMALLEST_PARAMETER)
    valid = valid & (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
    x_held = (x > 0) | (np.isfinite(log_x) & (y > 0.5))
    inner = valid & x_held & (y > 0) & np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore"):  # inf / inf for an infinite a or b, left out below
        swap = x > (a + 1.0) / (a + b + 2.0)
    lower = np.where(x >= 1, 1.0, 0.0)
    large = inner & (np.maximum(a, b) > LARGE_BETA_PARAMETER)
    inner = inner & ~large
    if np.any(large):
        lower = lower.copy()
        lower[large] = _scipy_incomplete_beta(a[large], b[large], x[large], y[large])
    if np.any(inner):
        aa = np.where(swap, b, a)[inner]
        bb = np.where(swap, a, b)[inner]
        xx = np.where(swap, y, x)[inner]
        yy = np.where(swap, x, y)[inner]
        log_xx = np.where(swap, np.nan, log_x)[inner]
        prefactor = np.exp(_log_beta_prefactor(aa, bb, xx, yy, log_xx))
        direct = prefactor * _beta_continued_fraction(aa, bb, xx) / aa
        lower = lower.copy()
        upper = 1.0 - lower
        if np.any(large):
            upper[large] = _scipy_incomplete_beta(b[large], a[large], y[large], x[large])
        lower[inner] = np.where(swap[inner], 1.0 - direct, direct)
        upper[inner] = np.where(swap[inner], direct, 1.0 - direct)
    else:
        upper = 1.0 - lower
        if np.any(large):
            upper[large] = _scipy_incomplete_beta(b[large], a[large], y[large], x[large])
    return (
        np.where(valid, lower, np.nan).reshape(shape),
        np.where(valid, upper, np.nan).reshape(shape),
    )


def _scipy_incomplete_beta(
    a: FloatArray, b: FloatArray, x: FloatArray, y: FloatArray
) -> FloatArray:
    """:math:`I_x(a, b)` from scipy (Boost), for parameters past :data:`LARGE_BETA_PARAMETER`.

    Imported here, not at the top: the session's degrees of freedom are far below the limit,
    so its path never loads ``scipy.special`` (``tests/test_import_cost.py``); the report's
    large designs may pass it. :math:`I_x(a,b) = 1 - I_y(b,a)` is taken from the side whose
    argument is at most 1/2, so an accurate small ``y`` is kept.
    """
    from scipy.special import betainc, betaincc

    return np.where(x <= 0.5, betainc(a, b, x), betaincc(b, a, y))


def _log_gamma_prefactor(a: FloatArray, x: FloatArray) -> FloatArray:
    r""":math:`\ln[x^a e^{-x}/\Gamma(a)] = a(\ln(1+d) - d) + \tfrac12\ln(a/2\pi) - \delta(a)`,
    :math:`d = (x-a)/a`, with :math:`\ln(1+d) = \ln(x/a)` when :math:`|d| \ge 1/2`
    (Stirling again: no difference of large numbers; Temme 1979's form of the prefactor,
    DiDonato & Morris 1986, ACM TOMS 12, 377)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        deviation = (x - a) / a
        # log1p(d) loses 1 + d's relative accuracy when d is near -1, so ln(x/a) there
        log_ratio = np.where(np.abs(deviation) < 0.5, np.log1p(deviation), np.log(x / a))
        return a * (log_ratio - deviation) + 0.5 * np.log(a) - _HALF_LOG_2PI - stirling_error(a)


def incomplete_gamma_pair(a: ArrayLike, x: ArrayLike) -> tuple[FloatArray, FloatArray]:
    r"""Regularized incomplete gamma :math:`P(a, x)` and :math:`Q(a, x) = 1 - P(a, x)`.

    For :math:`x < a + 1` the series :math:`P = \frac{x^a e^{-x}}{\Gamma(a+1)}\sum_{n\ge0}
    \frac{x^n}{(a+1)\cdots(a+n)}`; otherwise the continued fraction :math:`Q =
    \frac{x^a e^{-x}}{\Gamma(a)}\,\cfrac{1}{x+1-a-\cfrac{1\cdot(1-a)}{x+3-a-\cdots}}` by
    the modified Lentz method (Numerical Recipes, 3rd ed., sec. 6.2, ``gser`` and ``gcf``;
    A&S 6.5.29 and 6.5.31). Needs :math:`a \ge 10^{-300}`, :math:`x \ge 0`; NaN elsewhere.
    """
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    valid = (a >= SMALLEST_PARAMETER) & (x >= 0) & np.isfinite(a)
    inner = valid & (x > 0) & np.isfinite(x)
    lower = np.where(x > 0, 1.0, 0.0)  # x = inf: P = 1
    upper = 1.0 - lower
    large = inner & (a > LARGE_GAMMA_PARAMETER)
    inner = inner & ~large
    if np.any(large):
        lower, upper = lower.copy(), upper.copy()
        lower[large], upper[large] = _scipy_incomplete_gamma(a[large], x[large])
    # where x^a e^-x / Gamma(a) underflows the series and continued fraction (each at most
    # a modest multiple of 1/a or 1/(x + 1 - a)) cannot lift it: the tail is 0
    log_prefactor = np.full_like(x, np.nan)
    log_prefactor[inner] = _log_gamma_prefactor(a[inner], x[inner])
    # (NaN too: inf - inf when x / a overflows, a tail far below any double)
    negligible = inner & ~(log_prefactor >= -800.0)
    if np.any(negligible):
        lower, upper = lower.copy(), upper.copy()
        series_side = x < a + 1.0
        lower[negligible] = np.where(series_side, 0.0, 1.0)[negligible]
        upper[negligible] = np.where(series_side, 1.0, 0.0)[negligible]
    inner = inner & ~negligible
    if np.any(inner):
        aa, xx = a[inner], x[inner]
        prefactor = np.exp(log_prefactor[inner])
        use_series = xx < aa + 1.0
        direct = np.empty_like(xx)
        if np.any(use_series):
            direct[use_series] = prefactor[use_series] * _gamma_series(
                aa[use_series], xx[use_series]
            )
        if np.any(~use_series):
            direct[~use_series] = prefactor[~use_series] * _gamma_continued_fraction(
                aa[~use_series], xx[~use_series]
            )
        lower, upper = lower.copy(), upper.copy()
        lower[inner] = np.where(use_series, direct, 1.0 - direct)
        upper[inner] = np.where(use_series, 1.0 - direct, direct)
    return (
        np.where(valid, lower, np.nan).reshape(shape),
        np.where(valid, upper, np.nan).reshape(shape),
    )


def _scipy_incomplete_gamma(a: FloatArray, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:math:`P(a, x)` and :math:`Q(a, x)` from scipy, for :math:`a` past
    :data:`LARGE_GAMMA_PARAMETER` (the continued fraction needs about :math:`\\sqrt a`
    steps); imported here so the session path, whose df are small, never loads it."""
    from scipy.special import gammainc, gammaincc

    return gammainc(a, x), gammaincc(a, x)


def _gamma_series(a: FloatArray, x: FloatArray) -> FloatArray:
    """:math:`\\sum_n x^n/(a(a+1)\\cdots(a+n))`, so that P = prefactor times it."""
    term = 1.0 / a
    total = term.copy()
    denominator = a.copy()
    active = np.ones(a.shape, dtype=bool)
    for _ in range(_MAX_TERMS):
        denominator = denominator + 1.0
        term = np.where(active, term * x / denominator, 0.0)
        total = total + term
        active = active & (np.abs(term) > np.abs(total) * _EPSILON)
        if not np.any(active):
            return total
    raise ArithmeticError("incomplete gamma: series did not converge")


def _gamma_continued_fraction(a: FloatArray, x: FloatArray) -> FloatArray:
    """The Lentz evaluation of Q's continued fraction (Numerical Recipes ``gcf``)."""
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    active = np.ones(x.shape, dtype=bool)
    for i in range(1, _MAX_TERMS + 1):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        step = np.where(active, d * c, 1.0)
        h = h * step
        active = active & (np.abs(step - 1.0) > _LENTZ_EPSILON)
        if not np.any(active):
            return h
    raise ArithmeticError("incomplete gamma: continued fraction did not converge")
