"""Digamma, trigamma and tetragamma for positive arguments, in numpy (ADR 0063)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.special_function_inputs import as_floats, quiet, scalar_or_array

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


@quiet
def digamma(x: ArrayLike) -> np.ndarray:
    r"""Digamma :math:`\psi(x) = \Gamma'(x)/\Gamma(x)` for :math:`x > 0`.

    The recurrence :math:`\psi(x) = \psi(x+1) - 1/x` up to :math:`x \ge 10`, then
    :math:`\psi(x) = \ln x - \tfrac1{2x} - \sum_{k=1}^{7} B_{2k}/(2k\,x^{2k})` (A&S 6.3.5,
    6.3.18; truncation below 1e-17 at 10). NaN for :math:`x \le 0` (scipy returns the
    reflection there; the callers' arguments are half degrees of freedom, positive).
    """
    (x_values,) = as_floats(x)
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
    return scalar_or_array(np.where(positive, result, np.nan))


@quiet
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
    (x_values,) = as_floats(x)
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
    return scalar_or_array(np.where(positive, result, np.nan))
