r"""Krippendorff's alpha of ratings grouped in clusters, with a cluster bootstrap.

A council's reviews are long-format ratings: (unit, rater, value), each unit belonging to
one group (the session it was rated in). Alpha's coincidence matrix is a sum over units
(:mod:`llm_council.stats.krippendorff_alpha`), so one matrix per group is enough: the
alpha of the whole table is that of their sum, and a bootstrap resample of groups is a
weighted sum with the number of times each group was drawn as its weight, with no
reliability matrix rebuilt per draw. The draws are those of
:func:`~llm_council.stats.krippendorff_alpha.krippendorff_alpha_interval` with
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
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.krippendorff_alpha import Metric, alpha_from_coincidences

#: units per chunk when building the per-group matrices (bounds the units x V x V array)
_CHUNK_CELLS = 4_000_000
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
    0..V-1); ``group_of_unit[u]`` is unit u's group. A unit contributes
    :math:`n_{uc}(n_{uk} - [c = k]) / (m_u - 1)` when it holds two or more ratings.
    """
    stacks = np.zeros((n_groups, n_values, n_values))
    if unit.size == 0:
        return stacks
    n_units = int(group_of_unit.size)
    counts = np.zeros((n_units, n_values))
    np.add.at(counts, (unit, value_index), 1.0)
    per_unit = counts.sum(axis=1)
    pairable = np.flatnonzero(per_unit >= 2)
    step = max(1, _CHUNK_CELLS // max(1, n_values * n_values))
    diagonal = np.arange(n_values)
    for start in range(0, pairable.size, step):
        chosen = pairable[start : start + step]
        chunk = counts[chosen]
        products = chunk[:, :, None] * chunk[:, None, :]
        products[:, diagonal, diagonal] -= chunk
        products /= (per_unit[chosen] - 1.0)[:, None, None]
        np.add.at(stacks, group_of_unit[chosen], products)
    return stacks


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


def _percentile(draws: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    """Percentile interval of the finite draws; ``nan`` when over half are undefined."""
    finite = draws[np.isfinite(draws)]
    if draws.size == 0 or finite.size < draws.size / 2:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


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
    :func:`~llm_council.stats.krippendorff_alpha.krippendorff_alpha_interval` with
    ``unit_groups``: ``resamples`` times, as many groups drawn with replacement as there
    are, from ``numpy.random.default_rng(seed)``.
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
    stacks = [group_coincidences(units, value_index, groups, n_groups, values.size)]
    for left_out in range(n_raters):
        kept = raters != left_out
        stacks.append(
            group_coincidences(units[kept], value_index[kept], groups, n_groups, values.size)
        )
    estimates = [alpha_from_coincidences(values, stack.sum(axis=0), metric) for stack in stacks]
    per_unit = np.bincount(units, minlength=groups.size)
    n_units = int(np.count_nonzero(per_unit >= 2))

    draws = np.full((len(stacks), resamples if n_groups >= 2 else 0), math.nan)
    if n_groups >= 2 and not math.isnan(estimates[0]):
        rng = np.random.default_rng(seed)
        flat = [stack.reshape(n_groups, -1) for stack in stacks]
        batch = max(1, _DRAW_CELLS // n_groups)
        for start in range(0, resamples, batch):
            size = min(batch, resamples - start)
            weights = np.zeros((size, n_groups))
            for row in range(size):
                chosen = rng.integers(0, n_groups, size=n_groups)
                weights[row] = np.bincount(chosen, minlength=n_groups)
            for index, table in enumerate(flat):
                summed = (weights @ table).reshape(size, values.size, values.size)
                draws[index, start : start + size] = [
                    alpha_from_coincidences(values, matrix, metric) for matrix in summed
                ]
    else:
        draws = draws[:, :0]

    def interval(index: int) -> AlphaWithInterval:
        low, high = _percentile(draws[index], confidence)
        return AlphaWithInterval(estimates[index], low, high)

    changes = []
    for index in range(1, len(stacks)):
        low, high = _percentile(draws[index] - draws[0], confidence)
        changes.append(AlphaWithInterval(estimates[index] - estimates[0], low, high))
    return ClusteredAlpha(
        metric=metric,
        alpha=interval(0),
        without_rater=[interval(index) for index in range(1, len(stacks))],
        change_without_rater=changes,
        n_units=n_units,
        n_groups=n_groups,
        n_ratings=int(units.size),
        resamples=int(draws.shape[1]),
    )
