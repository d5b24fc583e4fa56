"""Multiplicity control for families of tests."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def holm_adjusted(p_values: ArrayLike) -> np.ndarray:
    r"""Holm (1979) step-down adjusted p-values; NaN entries are left out of the family.

    With the ``m`` finite p-values sorted ascending, :math:`\tilde p_{(i)} = \max_{j \le i}
    \min(1, (m - j + 1)\, p_{(j)})`. Rejecting where :math:`\tilde p < \alpha` controls the
    family-wise error rate at ``alpha`` under any dependence between the tests.

    Parameters
    ----------
    p_values : array_like, shape (m,)
        Raw p-values; NaN marks a test not run.

    Returns
    -------
    ndarray, shape (m,)
        Adjusted p-values in the input order; NaN where the input is NaN.
    """
    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(values.ravel()))
    if finite.size == 0:
        return adjusted
    family = values.ravel()[finite]
    order = np.argsort(family, kind="stable")
    multipliers = family.size - np.arange(family.size)
    stepped = np.minimum(1.0, np.maximum.accumulate(multipliers * family[order]))
    flat = adjusted.ravel()
    flat[finite[order]] = stepped
    return flat.reshape(values.shape)
