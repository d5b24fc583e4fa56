"""The standard normal CDF, its log and its quantile, in numpy and ``math`` (ADR 0063)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.special_function_inputs import as_floats, quiet, scalar_or_array

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _erfc_array(z: np.ndarray) -> np.ndarray:
    """``math.erfc`` over an array (numpy has no erfc; libm's is accurate to about 1 ulp)."""
    return np.asarray(_erfc(z), dtype=float).reshape(np.shape(z))


@quiet
def ndtr(x: ArrayLike) -> np.ndarray:
    r"""Standard normal CDF :math:`\Phi(x) = \tfrac12\operatorname{erfc}(-x/\sqrt2)`
    (A&S 7.1.2, 26.2.29): relative accuracy kept in the lower tail."""
    (x_values,) = as_floats(x)
    return scalar_or_array(0.5 * _erfc_array(-x_values * _SQRT1_2))


@quiet
def log_ndtr(x: ArrayLike) -> np.ndarray:
    r""":math:`\ln\Phi(x)` without underflow.

    :math:`x \ge 0`: ``log1p(-erfc(x/sqrt2)/2)``; :math:`-20 < x < 0`:
    :math:`\ln(\tfrac12\operatorname{erfc}(-x/\sqrt2))`; :math:`x \le -20`: the asymptotic
    series :math:`\ln\Phi(x) = -\tfrac{x^2}2 - \ln(-x) - \ln\sqrt{2\pi} + \ln\sum_{k=0}^{10}
    (-1)^k (2k-1)!!\,x^{-2k}` (A&S 26.2.12; truncation below 1e-17 at :math:`x = -20`).
    """
    (x_values,) = as_floats(x)
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
    return scalar_or_array(result)


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


@quiet
def ndtri(p: ArrayLike) -> np.ndarray:
    r"""Standard normal quantile :math:`\Phi^{-1}(p)`: Wichura's AS 241 (PPND16).

    Three rational approximations of degree 7: :math:`|p - \tfrac12| \le 0.425` in
    :math:`r = 0.180625 - q^2`; otherwise in :math:`r = \sqrt{-\ln\min(p, 1-p)}` shifted by
    1.6 (:math:`r \le 5`) or 5; relative accuracy about 1e-16 (Wichura 1988, Applied
    Statistics 37, 477-484; the coefficients as in CPython's ``statistics``). :math:`p = 0`
    gives -inf, 1 gives inf, outside [0, 1] NaN.
    """
    (p_values,) = as_floats(p)
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
    return scalar_or_array(np.where((p_values >= 0) & (p_values <= 1), result, np.nan))
