r"""Did a judge's scores move? The paired shift of scores on the same items, with a t test.

For items scored before (:math:`x_i`) and now (:math:`y_i`), :math:`d_i = y_i - x_i`:

.. math::

    \bar d = \frac{1}{n}\sum_i d_i,\quad s_d^2 = \frac{1}{n-1}\sum_i (d_i - \bar d)^2,\quad
    t = \frac{\bar d}{s_d / \sqrt{n}} \sim t_{n-1}\ \text{under no shift},

two-sided p-value and the interval :math:`\bar d \pm t_{n-1, 1-\alpha/2}\, s_d/\sqrt{n}`
(Student 1908; the paired t test, e.g. Rice, *Mathematical Statistics and Data Analysis*,
3rd ed., section 11.3). Pairing on the item removes the items' own difficulty from the
noise, which is why a frozen canary set detects half a point with 40 items.
When every difference is equal the shift is exact: p is 0 for a non-zero shift and 1 for
none (no noise to test against).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as scipy_stats


@dataclass(frozen=True)
class PairedShift:
    """Mean shift now minus before, its standard error, interval, t, df and p-value."""

    shift: float
    standard_error: float
    ci_low: float
    ci_high: float
    t_statistic: float
    df: int
    p_value: float
    n: int


def paired_shift(
    before: Sequence[float], after: Sequence[float], confidence: float = 0.95
) -> PairedShift | None:
    """The paired t test of ``after - before`` (module docstring); ``None`` below 2 items.

    Parameters
    ----------
    before, after : sequence of float, length n
        Scores of the same n items, before and after.
    confidence : float
        Level of the t interval of the mean shift.

    Returns
    -------
    PairedShift or None
        Mean shift, its standard error and interval, t, df = n - 1, two-sided p and n;
        None when n < 2.
    """
    if len(before) != len(after):
        raise ValueError(f"{len(before)} scores before but {len(after)} after")
    differences = [b - a for a, b in zip(before, after, strict=True)]
    if not all(math.isfinite(d) for d in differences):
        raise ValueError("a score is not a finite number")
    n = len(differences)
    if n < 2:
        return None
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    se = math.sqrt(variance / n)
    if se == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return PairedShift(
            mean, 0.0, mean, mean, math.copysign(math.inf, mean) if mean else 0.0, n - 1, p, n
        )
    t = mean / se
    p = 2.0 * float(scipy_stats.t.sf(abs(t), n - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, n - 1)) * se
    return PairedShift(mean, se, mean - half, mean + half, t, n - 1, p, n)
