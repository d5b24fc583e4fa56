"""Moderated variances and moderated t tests of a few entries, in Python floats.

A session audit moderates a handful of reviewer variances about nine times and runs
about four batches of moderated t tests (ADR 0075); on arrays of 3-9 entries numpy's
per-operation overhead (``np.where``, broadcasting, ``errstate``) was most of their cost.
These functions run the numpy versions' steps in :mod:`~llm_council.stats.reviewers.
moderated_variance` entry by entry, with the same IEEE operations in the same order
(``x * x`` for numpy's square, sums over reviewers in row order as numpy's reduction over
the first axis, numpy's division by zero: +-inf, or NaN for 0 / 0), so their results
are the numpy versions' (tested bit for bit, edges included, in
``tests/stats/reviewers/test_moderated_float_path.py``).
Inputs outside their reach (not one-dimensional, more than :data:`FLOAT_PATH_AT_MOST`
entries) return None, and the callers take the numpy path.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from llm_council.stats.numerics.special_functions import stdtr, stdtr_floats

#: the most entries (reviewers, or reviewers x tests) the float path takes
FLOAT_PATH_AT_MOST = 400
_LARGEST = sys.float_info.max


def _divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as numpy divides (inf, -inf or NaN when dividing by 0)."""
    if denominator != 0.0:
        return numerator / denominator
    if numerator != numerator or numerator == 0.0:
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def _nan_to_num(value: float) -> float:
    """``numpy.nan_to_num`` of one float: NaN 0, +-inf the largest finite float."""
    if value != value:
        return 0.0
    if value == math.inf:
        return _LARGEST
    if value == -math.inf:
        return -_LARGEST
    return value


def _entries(values: object, size: int | None) -> list[float] | None:
    """``values`` as ``size`` floats (a scalar repeated), or None outside the float path."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "fiu":
            return None
        if values.ndim == 0:
            return None if size is None else [float(values)] * size
        if values.ndim != 1 or values.size > FLOAT_PATH_AT_MOST:
            return None
        if size is not None and values.size != size:
            return None
        if values.dtype == np.float64:
            return values.tolist()  # Python floats already
        return [float(value) for value in values.tolist()]
    if isinstance(values, float | int) and not isinstance(values, bool) and size is not None:
        return [float(values)] * size
    return None


def moderated_variances_floats(
    variances: object, dfs: object, prior_variances: object, prior_dfs: object
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`~llm_council.stats.reviewers.moderated_variance.moderated_variances` on the
    float path, or None when the inputs are outside it."""
    variance = _entries(variances, None)
    if variance is None:
        return None
    size = len(variance)
    df = _entries(dfs, size)
    prior_variance = _entries(prior_variances, size)
    prior_df = _entries(prior_dfs, size)
    if df is None or prior_variance is None or prior_df is None:
        return None
    moderated, total_df = [], []
    for value, own_df, prior_value, prior_value_df in zip(
        variance, df, prior_variance, prior_df, strict=True
    ):
        own = _nan_to_num(value) * own_df if own_df > 0.0 else 0.0
        if prior_value_df in (math.inf, -math.inf):
            moderated.append(prior_value)
        else:
            moderated.append(_divide(prior_value_df * prior_value + own, prior_value_df + own_df))
        total_df.append(prior_value_df + own_df)
    return np.array(moderated, dtype=float), np.array(total_df, dtype=float)


def moderated_t_tests_floats(
    estimates: np.ndarray,
    weights: np.ndarray,
    variances: np.ndarray,
    dfs: np.ndarray,
    *,
    one_sided: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(standard errors, df, p-values)`` of
    :func:`~llm_council.stats.reviewers.moderated_variance.moderated_t_tests` on the float
    path (float64 arrays: ``estimates`` (k,), ``weights`` (R, k), ``variances`` and ``dfs``
    (R,)), or None when the inputs are outside it."""
    if (
        weights.ndim != 2
        or weights.size > FLOAT_PATH_AT_MOST
        or estimates.shape != (weights.shape[1],)
        or variances.shape != (weights.shape[0],)
        or dfs.shape != variances.shape
    ):
        return None
    variance, df = variances.tolist(), dfs.tolist()
    n_tests = weights.shape[1]
    totals = [0.0] * n_tests
    spreads = [0.0] * n_tests
    for row, (reviewer_variance, reviewer_df) in enumerate(zip(variance, df, strict=True)):
        for test, weight in enumerate(weights[row].tolist()):
            part = weight * reviewer_variance
            # numpy's reduction over the first axis: the first row starts each sum
            totals[test] = part if row == 0 else totals[test] + part
            square = _divide(part * part, reviewer_df) if part > 0.0 else 0.0
            spreads[test] = square if row == 0 else spreads[test] + square
    errors, test_dfs, t_values = [], [], []
    for estimate, total, spread in zip(estimates.tolist(), totals, spreads, strict=True):
        test_dfs.append(_divide(total * total, spread) if spread > 0.0 else math.inf)
        error = math.sqrt(total) if total > 0.0 else math.nan
        errors.append(error)
        t_value = _divide(estimate, error)
        t_values.append(-t_value if one_sided else -abs(t_value))
    tails = stdtr_floats(test_dfs, t_values)
    if tails is None:
        tails = np.asarray(stdtr(np.array(test_dfs), np.array(t_values)), dtype=float).tolist()
    # numpy.minimum(1, 2 * tail) keeps a NaN, where Python's min would not
    p_values = [
        (tail if one_sided else (1.0 if 2.0 * tail > 1.0 else 2.0 * tail))
        if total > 0.0
        else math.nan
        for tail, total in zip(tails, totals, strict=True)
    ]
    return np.array(errors), np.array(test_dfs), np.array(p_values)
