r"""Krippendorff's alpha from weighted per-group sums of integer pair counts.

Alpha's coincidence matrix is a sum over units (:mod:`.krippendorff_alpha`):

.. math::

    o_{ck} = \sum_u \frac{n_{uc}\,(n_{uk} - [c = k])}{m_u - 1}.

Grouping the units by :math:`d = m_u - 1` gives :math:`o_{ck} = \sum_d P_{d,ck} / d` with
:math:`P_{d,ck} = \sum_{u: m_u - 1 = d} n_{uc}(n_{uk} - [c = k])` a count of ordered pairs
of ratings: an integer. A bootstrap replicate that weights group (session) :math:`g` by an
integer :math:`w_g` (a multinomial count, or the Poisson(1) count of
:mod:`~llm_council.stats.inference.poisson_weights`) has the coincidences of the weighted
sums :math:`\sum_g w_g P_{g,d,ck}`: integers again, so sums over disjoint sets of groups
add up **exactly** (in float64 while below :math:`2^{53}`), in any order. Since
:math:`o` is symmetric only its upper triangle :math:`c \le k` is kept (T = V(V + 1) / 2
cells on a grid of V values).

"Alpha without rater r" is the alpha of the pair counts with r's ratings removed from
every unit (a unit can move to a smaller :math:`d` or drop out); it is kept as the
difference ``removed[r]`` = (the whole table's counts) - (the counts without r), which is
zero in every group r did not rate.

References
----------
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
Communication, University of Pennsylvania (the coincidence matrix, pp. 3-8). Hayes, A. F.
& Krippendorff, K. (2007). Answering the call for a standard reliability measure for
coding data. Communication Methods and Measures 1, 77-89 (bootstrapping alpha). Field,
C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69, 369-390.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from llm_council.stats.reliability.clustered_alpha import (
    AlphaWithInterval,
    ClusteredAlpha,
    percentile_interval,
)
from llm_council.stats.reliability.krippendorff_alpha import Metric, squared_distances

__all__ = [
    "GroupPairCounts",
    "alpha_from_pair_sums",
    "alphas_from_coincidences",
    "coincidences_from_pair_sums",
    "group_pair_counts",
    "triangle_cells",
    "weighted_pair_sums",
]

#: replicates weighted at a time (memory: this times the groups, as floats)
_BATCH = 50


def triangle_cells(n_values: int) -> NDArray[np.int64]:
    """``cells[c, k]``: the index of (min(c, k), max(c, k)) in the row-major upper triangle
    of a V x V matrix (``numpy.triu_indices`` order)."""
    rows, columns = np.triu_indices(n_values)
    cells = np.zeros((n_values, n_values), dtype=np.int64)
    cells[rows, columns] = np.arange(rows.size)
    cells[columns, rows] = np.arange(rows.size)
    return cells


@dataclass(frozen=True)
class GroupPairCounts:
    """The nonzero pair counts :math:`P_{g,d,ck}` (module docstring), one entry per
    (group, d, triangle cell): ``count`` ordered pairs, an integer (held as a float)."""

    group: NDArray[np.int64]
    divisor: NDArray[np.int64]  # d = m_u - 1 >= 1
    cell: NDArray[np.int64]  # upper-triangle cell (:func:`triangle_cells`)
    count: NDArray[np.float64]


def group_pair_counts(
    unit: NDArray[np.int64],
    value_index: NDArray[np.int64],
    group_of_unit: NDArray[np.int64],
    n_values: int,
) -> GroupPairCounts:
    """The pair counts of long-format ratings, per group and :math:`d = m_u - 1`.

    ``unit``, ``value_index``: one entry per rating (dense unit codes; value codes in
    0..V-1); ``group_of_unit[u]``: unit u's group. Each unordered pair of two ratings of a
    unit adds 1 to the cell of its two values (both ordered pairs (c, k) and (k, c) when
    c != k), 2 when both are the same value (the two ordered pairs of (c, c)).
    """
    units = np.asarray(unit, dtype=np.int64)
    values = np.asarray(value_index, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    if units.size < 2:
        return GroupPairCounts(empty, empty, empty, np.zeros(0))
    order = np.argsort(units, kind="stable")
    units, values = units[order], values[order]
    per_unit = np.bincount(units)
    cells = triangle_cells(n_values)
    keys, weights = [], []
    for offset in range(1, int(per_unit.max())):
        same = units[offset:] == units[:-offset]  # ratings offset apart in one unit
        first, second = values[:-offset][same], values[offset:][same]
        paired = units[offset:][same]
        divisor = per_unit[paired] - 1
        keys.append(
            (group_of_unit[paired] * (int(per_unit.max()) + 1) + divisor) * cells.size
            + cells[first, second]
        )
        weights.append(np.where(first == second, 2.0, 1.0))
    if not keys:
        return GroupPairCounts(empty, empty, empty, np.zeros(0))
    distinct, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=np.concatenate(weights)).astype(float)
    cell = distinct % cells.size
    group, divisor = np.divmod(distinct // cells.size, int(per_unit.max()) + 1)
    return GroupPairCounts(group, divisor, cell, counts)


def weighted_pair_sums(
    stacks: list[GroupPairCounts],
    weights: NDArray[np.integer],
    divisors: NDArray[np.int64],
    n_cells: int,
) -> NDArray[np.float64]:
    """:math:`\\sum_g w_{b,g} P_{g,d,ck}` for each stack of pair counts and each row b of
    ``weights`` (B, G), with the unweighted sums (every weight 1) as row 0: shape
    (stacks, B + 1, D, n_cells) on the divisor grid ``divisors`` (which must hold every
    divisor of the stacks). Integer-valued, so exact in any summation order below 2^53."""
    from scipy import sparse  # the report's only sparse product; loaded when summarizing

    n_groups = int(weights.shape[1])
    n_divisors = int(divisors.size)
    width = n_divisors * n_cells
    rows, columns, counts = [], [], []
    for index, stack in enumerate(stacks):
        at = np.searchsorted(divisors, stack.divisor)
        if stack.divisor.size and (
            np.any(at >= n_divisors)
            or np.any(divisors[np.minimum(at, n_divisors - 1)] != stack.divisor)
        ):
            raise ValueError("a stack's divisor is not on the divisor grid")
        rows.append(stack.group)
        columns.append(index * width + at * n_cells + stack.cell)
        counts.append(stack.count)
    per_group = sparse.csr_matrix(
        (np.concatenate(counts), (np.concatenate(rows), np.concatenate(columns))),
        shape=(n_groups, len(stacks) * width),
    )
    out = np.empty((len(stacks) * width, int(weights.shape[0]) + 1))
    out[:, 0] = np.asarray(per_group.sum(axis=0)).reshape(-1)
    transposed = per_group.T.tocsr()
    for start in range(0, int(weights.shape[0]), _BATCH):
        stop = min(start + _BATCH, int(weights.shape[0]))
        out[:, 1 + start : 1 + stop] = transposed @ weights[start:stop].T.astype(float)
    shape = (int(weights.shape[0]) + 1, len(stacks), n_divisors, n_cells)
    return out.T.reshape(shape).transpose(1, 0, 2, 3).copy()


def coincidences_from_pair_sums(
    divisors: NDArray[np.int64], sums: NDArray[np.float64], n_values: int
) -> NDArray[np.float64]:
    """The coincidence matrices :math:`o = \\sum_d P_d / d` of pair-count sums of shape
    (..., D, T) on the divisors ``divisors`` (D,), as (..., V, V); divisors are added in
    the order given."""
    sums = np.asarray(sums, dtype=float)
    triangle = np.zeros(sums.shape[:-2] + (sums.shape[-1],))
    for index, divisor in enumerate(np.asarray(divisors).tolist()):
        triangle += sums[..., index, :] / float(divisor)
    return triangle[..., triangle_cells(n_values)]


def alphas_from_coincidences(
    values: NDArray[np.float64], matrices: NDArray[np.float64], metric: Metric
) -> NDArray[np.float64]:
    """Alpha of each V x V coincidence matrix of ``matrices`` (..., V, V), vectorised
    :func:`~.krippendorff_alpha.alpha_from_coincidences`:
    :math:`1 - (n - 1) \\sum o_{ck}\\delta^2_{ck} / \\sum n_c n_k \\delta^2_{ck}`, ``nan``
    with fewer than two values, :math:`n \\le 1`, or no expected disagreement."""
    values = np.asarray(values, dtype=float)
    margins = matrices.sum(axis=-1)
    total = margins.sum(axis=-1)
    if metric == "ordinal":
        cumulative = np.cumsum(margins, axis=-1)
        index = np.arange(values.size)
        low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
        before = np.where(low > 0, cumulative[..., np.maximum(low - 1, 0)], 0.0)
        between = cumulative[..., high] - before
        distances = (between - (margins[..., :, None] + margins[..., None, :]) / 2.0) ** 2
    else:
        distances = np.broadcast_to(
            squared_distances(metric, values, np.zeros(values.size)), matrices.shape
        )
    observed = np.sum(matrices * distances, axis=(-2, -1))
    expected = np.einsum("...c,...ck,...k->...", margins, distances, margins)
    defined = (values.size >= 2) & (total > 1.0) & (expected > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (total - 1.0) * observed / expected
    return np.where(defined, alpha, math.nan)


def alpha_from_pair_sums(
    values: NDArray[np.float64],
    divisors: NDArray[np.int64],
    whole: NDArray[np.float64],
    removed: NDArray[np.float64],
    metric: Metric,
    *,
    n_units: int,
    n_groups: int,
    n_ratings: int,
    confidence: float = 0.95,
) -> ClusteredAlpha:
    """Alpha, alpha without each rater and its paired change, with percentile intervals,
    from weighted pair-count sums (module docstring).

    Parameters
    ----------
    values : ndarray, shape (V,)
        The value grid, sorted.
    divisors : ndarray of int, shape (D,)
        The :math:`d = m_u - 1` of the sums' second-to-last axis.
    whole : ndarray, shape (B + 1, D, T)
        Row 0: the unweighted sums (every group once: the estimate); row b: replicate b's
        weighted sums :math:`\\sum_g w_{g,b} P_g`.
    removed : ndarray, shape (R, B + 1, D, T)
        Per rater, ``whole`` minus the same sums without that rater's ratings.
    metric : {"nominal", "ordinal", "interval", "ratio"}
        Krippendorff's difference function.
    n_units, n_groups, n_ratings : int
        Units rated twice or more, groups and ratings (reported; no interval with fewer
        than two groups).
    confidence : float
        Interval level.

    Returns
    -------
    ClusteredAlpha
        As :func:`~.clustered_alpha.clustered_alpha` returns, the draws being the rows
        1..B (``nan`` draws dropped; no interval when over half are undefined).
    """
    stacks = np.concatenate([whole[None], whole[None] - removed])
    matrices = coincidences_from_pair_sums(divisors, stacks, values.size)
    alphas = alphas_from_coincidences(values, matrices, metric)  # (1 + R, B + 1)
    estimates, draws = alphas[:, 0], alphas[:, 1:]
    if n_groups < 2 or math.isnan(estimates[0]):
        draws = np.full((alphas.shape[0], 0), math.nan)

    def interval(estimate: float, row: NDArray[np.float64]) -> AlphaWithInterval:
        low, high = percentile_interval(row, confidence)
        return AlphaWithInterval(float(estimate), low, high)

    return ClusteredAlpha(
        metric=metric,
        alpha=interval(estimates[0], draws[0]),
        without_rater=[interval(estimates[r], draws[r]) for r in range(1, alphas.shape[0])],
        change_without_rater=[
            interval(estimates[r] - estimates[0], draws[r] - draws[0])
            for r in range(1, alphas.shape[0])
        ],
        n_units=n_units,
        n_groups=n_groups,
        n_ratings=n_ratings,
        resamples=int(draws.shape[1]),
    )
