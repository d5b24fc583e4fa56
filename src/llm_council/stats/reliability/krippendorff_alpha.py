r"""Krippendorff's alpha: agreement among any number of raters, with missing ratings.

A reliability matrix has one row per rater and one column per unit (an answer, a pair);
``nan`` marks a rating that was not given (a council member does not review its own
answer). Units rated fewer than twice carry no pairable value and are left out.

With :math:`n_{uc}` the number of ratings of value :math:`c` in unit :math:`u` and
:math:`m_u` the ratings in the unit, the coincidence matrix and its margins are

.. math::

    o_{ck} = \sum_u \frac{n_{uc}\,(n_{uk} - [c = k])}{m_u - 1},\qquad
    n_c = \sum_k o_{ck},\qquad n = \sum_c n_c,

and alpha compares the observed with the expected disagreement:

.. math::

    \alpha = 1 - (n - 1)\,
    \frac{\sum_{c,k} o_{ck}\,\delta^2_{ck}}{\sum_{c,k} n_c\, n_k\, \delta^2_{ck}}.

Metrics: nominal :math:`\delta^2 = [c \ne k]`; interval :math:`(c - k)^2`; ratio
:math:`((c-k)/(c+k))^2`; ordinal
:math:`\delta^2_{ck} = (\sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2` over the ranks of the
values actually used.

References
----------
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School
for Communication, University of Pennsylvania (the worked example with missing data,
pp. 3-8: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797). Hayes, A. F. &
Krippendorff, K. (2007). Answering the call for a standard reliability measure for coding
data. Communication Methods and Measures 1, 77-89 (bootstrapping units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Metric = Literal["nominal", "ordinal", "interval", "ratio"]
METRICS: tuple[Metric, ...] = ("nominal", "ordinal", "interval", "ratio")


def _value_counts(ratings: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The sorted distinct values and ``counts[u, c]``: ratings of value c in unit u,
    over the units rated at least twice."""
    rated = ~np.isnan(ratings)
    pairable = rated.sum(axis=0) >= 2
    kept = ratings[:, pairable]
    values = np.unique(kept[~np.isnan(kept)])
    counts = np.zeros((kept.shape[1], values.size))
    raters, units = np.nonzero(~np.isnan(kept))
    np.add.at(counts, (units, np.searchsorted(values, kept[raters, units])), 1.0)
    return values, counts


def coincidence_matrix(ratings: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The distinct values and the coincidence matrix :math:`o_{ck}` (module docstring)."""
    matrix = np.asarray(ratings, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"a reliability matrix is raters x units, got shape {matrix.shape}")
    if np.isinf(matrix).any():
        raise ValueError("a rating is infinite")
    values, counts = _value_counts(matrix)
    per_unit = counts.sum(axis=1)
    weights = 1.0 / (per_unit - 1.0)
    products = counts[:, :, None] * counts[:, None, :]
    diagonal = np.arange(values.size)
    products[:, diagonal, diagonal] -= counts
    return values, np.einsum("u,uck->ck", weights, products)


def _squared_distances(
    metric: Metric, values: NDArray[np.float64], margins: NDArray[np.float64]
) -> NDArray[np.float64]:
    if metric == "nominal":
        return 1.0 - np.eye(values.size)
    if metric == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if metric == "ratio":
        sums = values[:, None] + values[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            distance = ((values[:, None] - values[None, :]) / sums) ** 2
        return np.where(sums == 0.0, 0.0, distance)
    if metric == "ordinal":
        cumulative = np.cumsum(margins)
        low = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        high = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        # sum of n_g for g from low to high inclusive
        between = cumulative[high] - np.where(low > 0, cumulative[np.maximum(low - 1, 0)], 0.0)
        return (between - (margins[:, None] + margins[None, :]) / 2.0) ** 2
    raise ValueError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}")


def squared_distances(
    metric: Metric, values: NDArray[np.float64], margins: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The metric's :math:`\\delta^2_{ck}` over ``values``; only the ordinal one depends on
    the ``margins`` :math:`n_c`."""
    return _squared_distances(metric, values, margins)


def krippendorff_alpha(ratings: ArrayLike, metric: Metric = "nominal") -> float:
    """Krippendorff's alpha of a raters x units matrix (``nan`` = not rated).

    ``nan`` when undefined: fewer than two pairable values, or a single value throughout
    (no expected disagreement).
    """
    values, coincidences = coincidence_matrix(ratings)
    return alpha_from_coincidences(values, coincidences, metric)


def alpha_from_coincidences(
    values: NDArray[np.float64], coincidences: NDArray[np.float64], metric: Metric = "nominal"
) -> float:
    """Alpha from the distinct values and their coincidence matrix (module docstring).

    Coincidence matrices add over units, so a caller that keeps one per group of units
    (a council session) gets the alpha of any resample of groups from their weighted sum.
    ``nan`` when undefined, as :func:`krippendorff_alpha`.
    """
    margins = coincidences.sum(axis=1)
    total = float(margins.sum())
    if values.size < 2 or total <= 1.0:
        return math.nan
    distances = _squared_distances(metric, values, margins)
    observed = float(np.sum(coincidences * distances))
    expected = float(margins @ distances @ margins)
    if expected <= 0.0:
        return math.nan
    return 1.0 - (total - 1.0) * observed / expected


@dataclass(frozen=True)
class AlphaEstimate:
    """Alpha with a percentile bootstrap interval over units (Hayes & Krippendorff 2007)."""

    alpha: float
    ci_low: float
    ci_high: float
    units: int
    resamples: int


def krippendorff_alpha_interval(
    ratings: ArrayLike,
    metric: Metric = "nominal",
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    unit_groups: Sequence[int] | None = None,
) -> AlphaEstimate:
    """Alpha and a percentile interval from resampling units with replacement.

    ``unit_groups`` (one id per unit) resamples whole groups instead (the sessions of a
    council, whose answers share reviewers), keeping the dependence inside a group.
    Resamples where alpha is undefined are dropped; the interval is ``nan`` when more than
    half are.

    Parameters
    ----------
    ratings : array_like, shape (raters, units)
        NaN where a rater did not rate a unit.
    metric : {"nominal", "ordinal", "interval", "ratio"}
        Krippendorff's difference function.
    confidence : float
        Interval level.
    resamples : int
        Bootstrap replicates.
    seed : int
        Seed of ``numpy.random.default_rng``.
    unit_groups : sequence of int, length units, optional
        Group of each unit; whole groups are resampled when given.

    Returns
    -------
    AlphaEstimate
        ``alpha``, ``ci_low``, ``ci_high``, the units and the resamples used.
    """
    matrix = np.asarray(ratings, dtype=float)
    estimate = krippendorff_alpha(matrix, metric)
    groups = np.arange(matrix.shape[1]) if unit_groups is None else np.asarray(unit_groups)
    if groups.shape != (matrix.shape[1],):
        raise ValueError("unit_groups needs one group id per unit")
    distinct = np.unique(groups)
    if distinct.size < 2 or math.isnan(estimate):
        return AlphaEstimate(estimate, math.nan, math.nan, matrix.shape[1], 0)
    members = [np.flatnonzero(groups == group) for group in distinct]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        chosen = rng.integers(0, distinct.size, size=distinct.size)
        columns = np.concatenate([members[index] for index in chosen])
        draws.append(krippendorff_alpha(matrix[:, columns], metric))
    finite = np.asarray([value for value in draws if not math.isnan(value)])
    if finite.size < resamples / 2:
        return AlphaEstimate(estimate, math.nan, math.nan, matrix.shape[1], resamples)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return AlphaEstimate(estimate, float(low), float(high), matrix.shape[1], resamples)


def alpha_without_each_rater(ratings: ArrayLike, metric: Metric = "nominal") -> list[float]:
    """Alpha recomputed with each rater's row left out, in row order: a rater whose
    removal raises alpha disagrees with the others more than they do among themselves."""
    matrix = np.asarray(ratings, dtype=float)
    return [
        krippendorff_alpha(np.delete(matrix, row, axis=0), metric) for row in range(matrix.shape[0])
    ]
