"""Count, mean and centred sum of squares of two disjoint samples, pooled exactly."""

from __future__ import annotations

import numpy as np


def merged_moments(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    r"""Rows ``(n, mean, M2)`` of two disjoint samples pooled, row by row.

    .. math::

        n = n_a + n_b,\qquad \bar x = \bar x_a + \delta\,\frac{n_b}{n},\qquad
        M_2 = M_{2,a} + M_{2,b} + \delta^2\,\frac{n_a n_b}{n},\qquad
        \delta = \bar x_b - \bar x_a

    Chan, Golub & LeVeque (1979), "Updating formulae and a pairwise algorithm for computing
    sample variances", eq. 2.1. ``M2`` is the sum of squared deviations from the mean
    (the sample variance is ``M2 / (n - 1)``). A row with ``n = 0`` (mean NaN) leaves the
    other sample's row unchanged.

    Parameters
    ----------
    first, second : ndarray, shape (k, 3)
        Each row's ``n``, ``mean`` and ``M2`` of one sample.

    Returns
    -------
    ndarray, shape (k, 3)
        The pooled rows.
    """
    n_a, n_b = first[:, 0], second[:, 0]
    n = n_a + n_b
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = second[:, 1] - first[:, 1]
        mean = first[:, 1] + delta * n_b / n
        m2 = first[:, 2] + second[:, 2] + delta * delta * n_a * n_b / n
    mean = np.where(n_b == 0, first[:, 1], np.where(n_a == 0, second[:, 1], mean))
    m2 = np.where(n_b == 0, first[:, 2], np.where(n_a == 0, second[:, 2], m2))
    return np.column_stack([n, mean, m2])
