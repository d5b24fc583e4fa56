r"""Sums kept as double-double (``hi + lo``), so sums of parts merge to the same bits.

A summary saved beside a store adds the sums of the new sessions to the saved sums; in
plain float64 ``(a + b) + c`` and ``a + (b + c)`` differ in the last bit, so a merged
report would differ from a cold one. Carried as an unevaluated pair ``hi + lo`` with
about 106 bits, each partial sum is within :math:`\approx 2^{-104} \sum |x_i|` of the
exact one, and its rounding to float64 (``hi``) is the correctly rounded exact sum unless
the exact sum lies within that distance of a rounding boundary: the same bits whatever
the grouping, except with probability of order :math:`2^{-50}` per number.

Error-free transformations: Knuth's TwoSum (TAOCP vol. 2, 4.2.2, theorem B) and Dekker's
FastTwoSum (1971, "A floating-point technique for extending the available precision",
Numer. Math. 18); the accurate double-double addition is the QD library's ``ieee_add``
(Hida, Li & Bailey 2001, "Algorithms for quad-double precision floating point
arithmetic", ARITH-15).
"""

from __future__ import annotations

import numpy as np


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth)."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def _fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TwoSum for ``|a| >= |b|`` (Dekker)."""
    s = a + b
    return s, b - (s - a)


def add_double_double(
    a_hi: np.ndarray, a_lo: np.ndarray, b_hi: np.ndarray, b_lo: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(a_hi + a_lo) + (b_hi + b_lo)`` as a normalized double-double (QD ``ieee_add``)."""
    s1, s2 = two_sum(a_hi, b_hi)
    t1, t2 = two_sum(a_lo, b_lo)
    s1, s2 = _fast_two_sum(s1, s2 + t1)
    return _fast_two_sum(s1, s2 + t2)


def double_double_sum(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)``: the sum of ``values`` along ``axis`` as a double-double, by a pairwise
    tree of :func:`add_double_double` (vectorized over the other axes). A non-finite input
    makes ``hi`` non-finite (NaN where an infinity's error term is inf - inf) and ``lo`` 0:
    callers pass finite values, and a saved summary with a non-finite sum is refused."""
    hi = np.moveaxis(np.asarray(values, dtype=float), axis, 0)
    if hi.shape[0] == 0:
        return np.zeros(hi.shape[1:]), np.zeros(hi.shape[1:])
    lo = np.zeros_like(hi)
    with np.errstate(invalid="ignore"):
        while hi.shape[0] > 1:
            if hi.shape[0] % 2:
                pad = np.zeros((1, *hi.shape[1:]))
                hi, lo = np.concatenate([hi, pad]), np.concatenate([lo, pad])
            hi, lo = add_double_double(hi[0::2], lo[0::2], hi[1::2], lo[1::2])
    return hi[0].copy(), np.where(np.isfinite(hi[0]), lo[0], 0.0)
