"""The incomplete beta and the t and F tails of one entry, in Python floats.

The session audit asks for about 35 tails of a few entries each (noise screens, moderated
t tests, slot tests). Through numpy each cost about 0.3 ms, of which nearly all was
numpy's per-operation overhead (broadcasting, masks, ``np.where``) on arrays of one entry:
about 9 ms a session against scipy's 1.5 ms. These functions run the same steps as
:func:`~llm_council.stats.numerics.incomplete_beta_gamma.incomplete_beta_pair` and
:mod:`~llm_council.stats.numerics.special_functions`'s ``stdtr`` and ``fdtr`` on
floats, for the ordinary domain only (finite, positive degrees of freedom below
:data:`~llm_council.stats.numerics.incomplete_beta_gamma.LARGE_BETA_PARAMETER`, an
argument strictly inside the support). Anything else raises :class:`OutsideFloatPath`,
and the callers then take the numpy path, which holds every edge case and limit; so the
two paths cannot disagree at an edge. Inside, they agree to a few ulp (``math.log`` and
numpy's ``log`` may round differently), tested in
``tests/stats/numerics/test_float_tails.py`` against the numpy path and scipy.
"""

from __future__ import annotations

import math

from llm_council.stats.numerics.incomplete_beta_gamma import (
    _HALF_LOG_2PI,
    LARGE_BETA_PARAMETER,
    SMALLEST_PARAMETER,
    _beta_continued_fraction_scalar,
    _stirling_error_scalar,
)


class OutsideFloatPath(ArithmeticError):
    """The arguments lie outside the float path's ordinary domain: use the numpy path."""


def _log_beta_prefactor_float(a: float, b: float, x: float, y: float, log_x: float) -> float:
    r""":math:`\ln[x^a y^b / B(a, b)]`, the same formula as the numpy kernel's
    ``_log_beta_prefactor`` (DiDonato & Morris 1992, sec. 2: Stirling remainders, no
    difference of large log-gammas), ``log1p`` on the side whose argument exceeds 1/2."""
    if not math.isfinite(log_x):
        log_x = math.log1p(-y) if x > 0.5 else math.log(x)
    log_y = math.log1p(-x) if y > 0.5 else math.log(y)
    log_x0 = -math.log1p(b / a)  # ln(a / (a + b))
    log_y0 = -math.log1p(a / b)
    return (
        a * (log_x - log_x0)
        + b * (log_y - log_y0)
        + 0.5 * (math.log(a) + math.log(b) - math.log(a + b))
        - _HALF_LOG_2PI
        + _stirling_error_scalar(a + b)
        - _stirling_error_scalar(a)
        - _stirling_error_scalar(b)
    )


def incomplete_beta_pair_float(
    a: float, b: float, x: float, y: float, log_x: float = math.nan
) -> tuple[float, float]:
    r""":math:`I_x(a, b)` and its complement :math:`I_y(b, a)` for one entry, ``y = 1 - x``.

    The continued fraction on the side where it converges fast, :math:`x < (a+1)/(a+b+2)`,
    and the symmetry :math:`I_x(a,b) = 1 - I_y(b,a)` on the other (Numerical Recipes, 3rd
    ed., sec. 6.4), exactly as the numpy path. Raises :class:`OutsideFloatPath` unless
    :math:`10^{-300} \le a, b \le 5000` and :math:`0 < x, y < 1` (or ``log_x`` finite with
    :math:`y > 1/2`).
    """
    ordinary = (
        SMALLEST_PARAMETER <= a <= LARGE_BETA_PARAMETER
        and SMALLEST_PARAMETER <= b <= LARGE_BETA_PARAMETER
        and 0.0 <= x < 1.0
        and 0.0 < y <= 1.0
        and (x > 0.0 or (math.isfinite(log_x) and y > 0.5))
    )
    if not ordinary:
        raise OutsideFloatPath(f"incomplete beta outside the float path: a={a}, b={b}")
    if x > (a + 1.0) / (a + b + 2.0):
        prefactor = math.exp(_log_beta_prefactor_float(b, a, y, x, math.nan))
        direct = prefactor * _beta_continued_fraction_scalar(b, a, y) / b
        return 1.0 - direct, direct
    prefactor = math.exp(_log_beta_prefactor_float(a, b, x, y, log_x))
    direct = prefactor * _beta_continued_fraction_scalar(a, b, x) / a
    return direct, 1.0 - direct


def t_cdf_float(df: float, t: float, *, tiny_df: float, normal_df: float) -> float:
    r"""Student t CDF :math:`P(T_{df} \le t)` of one entry: :math:`\tfrac12
    I_{df/(df+t^2)}(df/2, \tfrac12)` for :math:`t < 0`, one minus it for :math:`t > 0`
    (A&S 26.7.1), with the numpy path's overflow-free forms of :math:`x` and :math:`1-x`.
    Raises :class:`OutsideFloatPath` for ``t`` = 0 or not finite, and ``df`` outside
    [``tiny_df``, ``normal_df``] (the numpy path's limits)."""
    if not (tiny_df <= df <= normal_df and math.isfinite(t) and t != 0.0):
        raise OutsideFloatPath(f"t CDF outside the float path: df={df}, t={t}")
    t_abs = abs(t)
    if t_abs >= 1.0:
        ratio = (df / t_abs) / t_abs  # df / t^2 without squaring t
        x, y = ratio / (1.0 + ratio), 1.0 / (1.0 + ratio)
        # ln x for the far tail, where df / t^2 may underflow
        log_x = (
            math.log(df) - 2.0 * math.log(t_abs) - math.log1p(ratio) if ratio <= 0.5 else math.nan
        )
    else:
        square = t_abs * t_abs
        x, y, log_x = df / (df + square), square / (df + square), math.nan
    half_tail = 0.5 * incomplete_beta_pair_float(df / 2.0, 0.5, x, y, log_x)[0]
    return half_tail if t < 0.0 else 1.0 - half_tail


def f_cdf_pair_float(dfn: float, dfd: float, x: float) -> tuple[float, float]:
    r"""The F CDF and survival :math:`(I_w(dfn/2, dfd/2),\ I_{1-w}(dfd/2, dfn/2))`,
    :math:`w = dfn\,x/(dfn\,x + dfd)` (A&S 26.6.2), of one entry. Raises
    :class:`OutsideFloatPath` unless the df are finite and positive and :math:`0 < x <
    \infty`."""
    if not (0.0 < dfn < math.inf and 0.0 < dfd < math.inf and 0.0 < x < math.inf):
        raise OutsideFloatPath(f"F CDF outside the float path: dfn={dfn}, dfd={dfd}, x={x}")
    product = dfn * x
    if product == 0.0 or math.isinf(product):
        raise OutsideFloatPath(f"F CDF outside the float path: dfn * x = {product}")
    # w = 1 / (1 + dfd / (dfn x)) and 1 - w = 1 / (1 + dfn x / dfd), neither overflowing
    w = 1.0 / (1.0 + dfd / product)
    w_complement = 1.0 / (1.0 + product / dfd)
    return incomplete_beta_pair_float(dfn / 2.0, dfd / 2.0, w, w_complement)
