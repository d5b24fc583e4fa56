r"""The effective number of independent judges, from the correlation of their errors.

Input: an ``(items, judges)`` matrix of each judge's *error* on each item against a
reference (1/0 for a wrong/right verdict, or a signed score error), complete: every judge
judged every item. Without a reference the errors are unknown and this is not identified
(ADR 0025: an error shared by all judges looks exactly like answer quality).

With :math:`R` the ``k x k`` Pearson correlation matrix of the error columns and
:math:`\bar\rho` its mean off-diagonal entry, the **Kish design effect** of the judges'
mean error gives

.. math::

    n_\text{eff} = \frac{k}{1 + (k - 1)\,\bar\rho} = \frac{k^2}{\mathbf 1^\top R\,\mathbf 1}

(Kish, *Survey Sampling*, 1965, section 8.2: the variance of a mean of ``k`` equally
variable units with mean pairwise correlation :math:`\bar\rho` is the variance of a mean of
:math:`n_\text{eff}` independent ones). For error indicators this is the variance of the
share of judges that are wrong on an item, which decides when a majority vote fails
(the correlated Condorcet jury theorem, Ladha, *Am. J. Pol. Sci.* 36, 1992); the error
correlation itself is the ensemble-diversity measure of Kuncheva & Whitaker, *Machine
Learning* 51, 2003. Independent judges give :math:`n_\text{eff} \approx k`, identical
judges 1, anti-correlated errors more than ``k``. Because ``R`` of complete data is
positive semi-definite, :math:`1 \le n_\text{eff}` and :math:`\bar\rho \ge -1/(k-1)`.

Why not the eigenvalue M_eff of Nyholt (2004) or Li & Ji (2005): those count how many
independent *tests* a set of correlated tests is worth (a multiple-testing correction),
not how much averaging the judges reduces error; with 3-7 judges the eigenvalues of a
small noisy correlation matrix are unstable, and Li & Ji's floor function makes the
statistic jump, which a bootstrap interval handles badly. Kish has a closed form a test
can derive by hand. It standardises each judge's errors, so it weighs judges equally
whatever their error rate.

Interval: percentile bootstrap over items (Efron & Tibshirani 1993, ch. 13) of
:math:`\bar\rho`, mapped through the decreasing function above (so the ``n_eff`` bounds
are the mapped ``rho`` bounds, swapped). Resamples where a judge's errors are constant
(correlation undefined) are dropped and counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: bootstrap resamples computed at once (bounds the memory of one batch)
_BATCH = 64


@dataclass(frozen=True)
class EffectiveJudges:
    """``n_eff`` of ``judges`` judges on ``items`` shared items, with its bootstrap interval.

    ``ci_high`` is ``inf`` when a resample's errors cancel exactly (``rho`` at its floor
    ``-1/(k-1)``); all interval fields are NaN when no interval was computed.
    """

    judges: int
    items: int
    mean_error_correlation: float
    effective_judges: float
    pair_correlations: NDArray[np.float64]
    rho_ci_low: float
    rho_ci_high: float
    ci_low: float
    ci_high: float
    resamples: int
    undefined_resamples: int


def kish_effective_number(mean_correlation: float, judges: int) -> float:
    """``k / (1 + (k - 1) rho)``; ``inf`` at the floor ``rho = -1/(k-1)``, NaN below it."""
    denominator = 1.0 + (judges - 1) * mean_correlation
    if math.isnan(denominator) or denominator < -1e-12:
        return math.nan
    return math.inf if denominator <= 1e-12 else judges / denominator


def _correlations_from_moments(
    mean: NDArray[np.float64], second_moment: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Pearson correlation matrices from ``E[x]`` (batch, k) and ``E[x x']`` (batch, k, k)."""
    covariance = second_moment - mean[:, :, None] * mean[:, None, :]
    variance = np.einsum("bjj->bj", covariance)
    scale = np.sqrt(np.clip(variance, 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = covariance / (scale[:, :, None] * scale[:, None, :])
    # a judge whose errors do not vary has no correlation with anyone (relative to the
    # errors' own scale, so score errors in any unit are judged alike)
    constant = variance <= 1e-12 * np.einsum("bjj->bj", second_moment)
    correlation[constant[:, :, None] | constant[:, None, :]] = np.nan
    return np.asarray(correlation)


def _weighted_correlations(
    centred: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Correlation matrices of the rows of ``centred`` under each row of ``weights``.

    A bootstrap resample is a vector of counts over items (multinomial), so its moments
    are weighted sums: no resampled copy of the data is built.
    """
    items, judges = centred.shape
    total = weights.sum(axis=1, keepdims=True)
    products = (centred[:, :, None] * centred[:, None, :]).reshape(items, judges * judges)
    mean = weights @ centred / total
    second = (weights @ products / total).reshape(-1, judges, judges)
    return _correlations_from_moments(mean, second)


def _mean_off_diagonal(correlation: NDArray[np.float64]) -> NDArray[np.float64]:
    k = correlation.shape[-1]
    off = ~np.eye(k, dtype=bool)
    return np.asarray(correlation[:, off].mean(axis=-1))


def error_correlation(errors: ArrayLike) -> NDArray[np.float64]:
    """The ``k x k`` Pearson correlation of the error columns (NaN rows for constant ones)."""
    matrix = _as_errors(errors)
    centred = matrix - matrix.mean(axis=0)
    return _weighted_correlations(centred, np.ones((1, matrix.shape[0])))[0]


def mean_error_correlation(errors: ArrayLike) -> float:
    """Mean off-diagonal error correlation; NaN if a judge's errors are constant."""
    return float(_mean_off_diagonal(error_correlation(errors)[None])[0])


def _as_errors(errors: ArrayLike) -> NDArray[np.float64]:
    matrix = np.asarray(errors, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] < 2:
        raise ValueError(f"errors must be (items, judges) with 2+ judges, got {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("errors must be complete and finite (keep only items every judge judged)")
    return matrix


def effective_judges(
    errors: ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    interval: bool = True,
) -> EffectiveJudges:
    """Kish ``n_eff`` of the judges whose errors are the columns of ``errors`` (see module).

    ``interval=False`` skips the bootstrap (the caller's too-few rule); the interval is
    also NaN when more than half the resamples are undefined.

    Parameters
    ----------
    errors : array_like, shape (items, judges)
        Each judge's error on each item (complete: every judge judged every item).
    confidence : float
        Interval level.
    resamples : int
        Bootstrap replicates over items.
    seed : int
        Seed of ``numpy.random.default_rng``.
    interval : bool
        False skips the bootstrap (NaN bounds).

    Returns
    -------
    EffectiveJudges
        ``effective_judges`` with its interval, the mean error correlation ``rho`` with its
        interval, ``pair_correlations`` (the error correlation matrix, shape (judges, judges)),
        and the counts.
    """
    matrix = _as_errors(errors)
    items, judges = matrix.shape
    correlation = error_correlation(matrix)
    rho = float(_mean_off_diagonal(correlation[None])[0])
    estimate = kish_effective_number(rho, judges)
    rho_low = rho_high = low = high = math.nan
    undefined = 0
    drawn_total = 0
    if interval and items >= 2 and not math.isnan(rho):
        rng = np.random.default_rng(seed)
        # centring once keeps the weighted second moments free of cancellation
        centred = matrix - matrix.mean(axis=0)
        rhos: list[NDArray[np.float64]] = []
        while drawn_total < resamples:
            batch = min(_BATCH, resamples - drawn_total)
            drawn = rng.integers(0, items, size=(batch, items)) + items * np.arange(batch)[:, None]
            counts = np.bincount(drawn.ravel(), minlength=batch * items).reshape(batch, items)
            rhos.append(_mean_off_diagonal(_weighted_correlations(centred, counts.astype(float))))
            drawn_total += batch
        values = np.concatenate(rhos)
        finite = values[np.isfinite(values)]
        undefined = int(values.size - finite.size)
        if finite.size >= resamples / 2:
            alpha = 1.0 - confidence
            rho_low, rho_high = (float(v) for v in np.quantile(finite, [alpha / 2, 1 - alpha / 2]))
            # n_eff decreases in rho: its lower bound comes from rho's upper bound
            low = kish_effective_number(rho_high, judges)
            high = kish_effective_number(max(rho_low, -1.0 / (judges - 1)), judges)
    return EffectiveJudges(
        judges=judges,
        items=items,
        mean_error_correlation=rho,
        effective_judges=estimate,
        pair_correlations=correlation,
        rho_ci_low=rho_low,
        rho_ci_high=rho_high,
        ci_low=low,
        ci_high=high,
        resamples=drawn_total,
        undefined_resamples=undefined,
    )
