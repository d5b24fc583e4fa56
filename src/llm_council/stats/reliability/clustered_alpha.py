r"""Krippendorff's alpha of ratings grouped in clusters, with a cluster bootstrap.

A council's reviews are long-format ratings: (unit, rater, value), each unit belonging to
one group (the session it was rated in). Alpha's coincidence matrix is a sum over units
(:mod:`llm_council.stats.reliability.krippendorff_alpha`), so one matrix per group is enough: the
alpha of the whole table is that of their sum, and a bootstrap resample of groups is a
weighted sum with the number of times each group was drawn as its weight, with no
reliability matrix rebuilt per draw. The draws are those of
:func:`~llm_council.stats.reliability.krippendorff_alpha.krippendorff_alpha_interval` with
``unit_groups`` (the same seed gives the same groups), so both give the same interval.

"Alpha without rater r" leaves r's ratings out of every unit (a unit left with fewer than
two ratings drops out) and is computed on the same draws, so its interval and that of
its difference from alpha are paired.

References
----------
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Hayes, A. F. &
Krippendorff, K. (2007). Answering the call for a standard reliability measure for coding
data. Communication Methods and Measures 1, 77-89 (bootstrapping alpha). Field, C. A. &
Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69, 369-390 (resampling whole
clusters).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.reliability.krippendorff_alpha import (
    Metric,
    alpha_from_coincidences,
    squared_distances,
)

#: resamples per matrix product (bounds the resamples x groups weight array)
_DRAW_CELLS = 8_000_000


def group_coincidences(
    unit: NDArray[np.int64],
    value_index: NDArray[np.int64],
    group_of_unit: NDArray[np.int64],
    n_groups: int,
    n_values: int,
) -> NDArray[np.float64]:
    r"""One coincidence matrix per group, shape (groups, V, V).

    ``unit`` and ``value_index`` are one entry per rating (dense unit codes, value codes in
    0..V-1); ``group_of_unit[u]`` is unit u's group. Every ordered pair of two different
    ratings (i, j) of a unit with :math:`m_u` ratings adds :math:`1 / (m_u - 1)` at
    :math:`(v_i, v_j)`: summed, :math:`n_{uc}(n_{uk} - [c = k]) / (m_u - 1)`. The pairs are
    enumerated, not the V x V products of every unit: a council's answer has a few ratings.
    """
    cells = n_values * n_values
    if unit.size == 0:
        return np.zeros((n_groups, n_values, n_values))
    order = np.argsort(unit, kind="stable")
    units, values = unit[order], value_index[order]
    per_unit = np.bincount(units, minlength=group_of_unit.size)
    weight_of_unit = np.divide(
        1.0, per_unit - 1.0, out=np.zeros(per_unit.size), where=per_unit >= 2
    )
    indices, weights = [], []
    for offset in range(1, int(per_unit.max())):
        same = units[offset:] == units[:-offset]  # ratings offset apart in one unit
        first, second = values[:-offset][same], values[offset:][same]
        paired = units[offset:][same]
        base = group_of_unit[paired] * cells
        indices += [base + first * n_values + second, base + second * n_values + first]
        weights += [weight_of_unit[paired]] * 2
    flat = np.bincount(
        np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64),
        weights=np.concatenate(weights) if weights else np.zeros(0),
        minlength=n_groups * cells,
    ).astype(float)
    return flat.reshape(n_groups, n_values, n_values)


@dataclass(frozen=True)
class AlphaWithInterval:
    """An alpha (``nan`` when undefined) and its percentile interval over group resamples."""

    estimate: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class ClusteredAlpha:
    """Alpha of the whole table, and with each rater left out, on the same group draws."""

    metric: Metric
    alpha: AlphaWithInterval
    without_rater: list[AlphaWithInterval]  # in rater code order
    change_without_rater: list[AlphaWithInterval]  # alpha without r minus alpha, paired
    n_units: int  # units rated at least twice
    n_groups: int
    n_ratings: int
    resamples: int


def percentile_interval(draws: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    """Percentile interval of the finite draws; ``nan`` when over half are undefined."""
    finite = draws[np.isfinite(draws)]
    if draws.size == 0 or finite.size < draws.size / 2:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def resample_counts(n_groups: int, resamples: int, seed: int) -> NDArray[np.uint16]:
    """How many times each group is drawn, one row per resample: draw r takes as many groups
    as there are, with replacement, from ``default_rng(seed)`` (the draws of
    ``krippendorff_alpha_interval``). Drawn once, shared by every stack (2 bytes a cell)."""
    rng = np.random.default_rng(seed)
    counts = np.empty((resamples, n_groups), dtype=np.uint16)
    for row in range(resamples):
        counts[row] = np.bincount(rng.integers(0, n_groups, size=n_groups), minlength=n_groups)
    return counts


def _weight_batches(counts: NDArray[np.uint16]) -> Iterator[NDArray[np.float64]]:
    batch = max(1, _DRAW_CELLS // max(1, counts.shape[1]))
    for start in range(0, counts.shape[0], batch):
        yield counts[start : start + batch].astype(float)


def _resampled_alphas(
    stack: NDArray[np.float64],
    values: NDArray[np.float64],
    metric: Metric,
    counts: NDArray[np.uint16],
) -> NDArray[np.float64]:
    """Alpha of each group resample (a row of ``counts``) of ``stack`` (groups x V x V).

    Except for the ordinal metric, :math:`\\delta^2` does not depend on the margins, so a
    group is summarised by its observed disagreement :math:`\\sum o_{ck}\\delta^2_{ck}` and
    its margins (V + 1 numbers instead of V x V): alpha is then
    :math:`1 - (n - 1) D_o / (m^\\top \\delta^2 m)` of the weighted sums.
    """
    n_groups = stack.shape[0]
    alphas: list[float] = []
    if counts.shape[1] != n_groups:
        raise ValueError("one draw count per group is needed")
    if metric == "ordinal":
        flat = stack.reshape(n_groups, -1)
        for weights in _weight_batches(counts):
            summed = (weights @ flat).reshape(-1, values.size, values.size)
            alphas += [alpha_from_coincidences(values, matrix, metric) for matrix in summed]
        return np.asarray(alphas)
    distances = squared_distances(metric, values, np.zeros(values.size))
    summary = np.column_stack(
        [np.einsum("gck,ck->g", stack, distances), stack.sum(axis=2)]
    )  # per group: observed disagreement, then the margins n_c
    for weights in _weight_batches(counts):
        summed = weights @ summary
        observed, margins = summed[:, 0], summed[:, 1:]
        total = margins.sum(axis=1)
        expected = np.einsum("rc,ck,rk->r", margins, distances, margins)
        with np.errstate(divide="ignore", invalid="ignore"):
            draw = 1.0 - (total - 1.0) * observed / expected
        alphas += np.where((expected > 0.0) & (total > 1.0), draw, math.nan).tolist()
    return np.asarray(alphas)


def clustered_alpha(
    unit: ArrayLike,
    rater: ArrayLike,
    value: ArrayLike,
    group_of_unit: ArrayLike,
    metric: Metric,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ClusteredAlpha:
    """Alpha of long-format ratings with intervals from resampling whole groups.

    ``unit``, ``rater``, ``value``: one entry per rating (dense codes for unit and rater,
    a finite value); ``group_of_unit[u]``: dense group code of unit u. Same draws as
    :func:`~llm_council.stats.reliability.krippendorff_alpha.krippendorff_alpha_interval` with
    ``unit_groups``: ``resamples`` times, as many groups drawn with replacement as there
    are, from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    unit, rater : array_like of int, shape (n,)
        Dense codes of each rating's unit and rater.
    value : array_like, shape (n,)
        The ratings, finite.
    group_of_unit : array_like of int, shape (U,)
        Dense group (cluster) code of each unit.
    metric : {"nominal", "ordinal", "interval", "ratio"}
        Krippendorff's difference function.
    resamples : int
        Cluster-bootstrap replicates.
    seed : int
        Seed of ``numpy.random.default_rng``.
    confidence : float
        Interval level.

    Returns
    -------
    ClusteredAlpha
        ``alpha`` with its interval, alpha without each rater and its paired change (lists in
        rater code order), and the counts of units, groups and ratings.
    """
    units = np.asarray(unit, dtype=np.int64)
    raters = np.asarray(rater, dtype=np.int64)
    scores = np.asarray(value, dtype=float)
    groups = np.asarray(group_of_unit, dtype=np.int64)
    if not units.shape == raters.shape == scores.shape or units.ndim != 1:
        raise ValueError("unit, rater and value need one entry per rating")
    if not np.isfinite(scores).all():
        raise ValueError("a rating is not a finite number")
    if units.size and (units.min() < 0 or units.max() >= groups.size):
        raise ValueError("a unit code has no group")
    n_groups = int(groups.max()) + 1 if groups.size else 0
    n_raters = int(raters.max()) + 1 if raters.size else 0
    values, value_index = np.unique(scores, return_inverse=True)
    per_unit = np.bincount(units, minlength=groups.size)
    n_units = int(np.count_nonzero(per_unit >= 2))
    # one stack at a time (the whole table, then each rater left out), each resampled with
    # the same draws: memory for one stack and the draw counts, not 1 + raters stacks
    estimates: list[float] = []
    draw_rows: list[NDArray[np.float64]] = []
    bootstrap = n_groups >= 2 and resamples > 0
    counts = np.zeros((0, n_groups), dtype=np.uint16)
    for left_out in range(-1, n_raters):
        kept = raters != left_out
        stack = group_coincidences(units[kept], value_index[kept], groups, n_groups, values.size)
        estimates.append(alpha_from_coincidences(values, stack.sum(axis=0), metric))
        if left_out == -1 and math.isnan(estimates[0]):
            bootstrap = False
        if bootstrap:
            if not counts.size:
                counts = resample_counts(n_groups, resamples, seed)
            draw_rows.append(_resampled_alphas(stack, values, metric, counts))
    draws = np.asarray(draw_rows) if bootstrap else np.full((len(estimates), 0), math.nan)

    def interval(index: int) -> AlphaWithInterval:
        low, high = percentile_interval(draws[index], confidence)
        return AlphaWithInterval(estimates[index], low, high)

    changes = []
    for index in range(1, len(estimates)):
        low, high = percentile_interval(draws[index] - draws[0], confidence)
        changes.append(AlphaWithInterval(estimates[index] - estimates[0], low, high))
    return ClusteredAlpha(
        metric=metric,
        alpha=interval(0),
        without_rater=[interval(index) for index in range(1, len(estimates))],
        change_without_rater=changes,
        n_units=n_units,
        n_groups=n_groups,
        n_ratings=int(units.size),
        resamples=int(draws.shape[1]),
    )
