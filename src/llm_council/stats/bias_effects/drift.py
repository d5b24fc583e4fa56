"""Drift of a per-session quantity over weekly windows, and a CUSUM test for a mean shift.

The input is one value per session (e.g. a reviewer's mean paired deviation that session:
its leniency) and the week the session falls in. Weekly means are compared with the
overall mean by a cumulative sum; a change of level at any week makes the cumulative
sum wander far from zero before coming back (it ends at zero by construction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class WeeklySeries:
    """Weekly means of per-session values, their standard errors and session counts."""

    weeks: np.ndarray  # week indices that have at least one session, ascending
    means: np.ndarray
    standard_errors: np.ndarray  # pooled within-week sd / sqrt(sessions that week)
    n_sessions: np.ndarray


def weekly_series(session_values: ArrayLike, session_weeks: ArrayLike) -> WeeklySeries | None:
    r"""Per-week means with standard errors from the pooled within-week sd.

    :math:`\hat\sigma^2 = \sum_w \sum_{s \in w} (v_s - \bar v_w)^2 / (N - W)`, and
    :math:`se_w = \hat\sigma / \sqrt{n_w}` (one-way ANOVA error mean square), so a week
    with one session still has a standard error. None when fewer than 3 weeks or no
    within-week spread remain. NaN values are dropped.

    Parameters
    ----------
    session_values : array_like, shape (N,)
        One value per session.
    session_weeks : array_like of int, shape (N,)
        Each session's week index.

    Returns
    -------
    WeeklySeries or None
        ``weeks``, ``means``, ``standard_errors`` and ``n_sessions``, each shape (W,).
    """
    values = np.asarray(session_values, dtype=float)
    weeks = np.asarray(session_weeks, dtype=np.int64)
    keep = np.isfinite(values)
    values, weeks = values[keep], weeks[keep]
    unique_weeks, index = np.unique(weeks, return_inverse=True)
    if unique_weeks.size < 3:
        return None
    counts = np.bincount(index)
    means = np.bincount(index, weights=values) / counts
    within_df = values.size - unique_weeks.size
    if within_df < 1:
        return None
    pooled_sd = float(np.sqrt(np.sum((values - means[index]) ** 2) / within_df))
    if pooled_sd == 0.0:
        return None
    return WeeklySeries(unique_weeks, means, pooled_sd / np.sqrt(counts), counts)


def cusum_statistic(means: ArrayLike, standard_errors: ArrayLike) -> tuple[float, int]:
    r"""Standardised retrospective CUSUM and the week after which the level most likely changed.

    With inverse-variance weights :math:`w_i = 1/se_i^2`, the weighted overall mean
    :math:`\hat\mu` and :math:`S_k = \sum_{i \le k} w_i (x_i - \hat\mu) / \sqrt{\sum_i w_i}`,

    .. math:: C = \max_{1 \le k < W} |S_k|.

    With equal weights this is the CUSUM-of-residuals statistic of Page (1954) in its
    retrospective form; as :math:`W \to \infty` under no change it tends to
    :math:`\sup_t |B(t)|` of a Brownian bridge (Kolmogorov's distribution; Csörgő &
    Horváth, *Limit Theorems in Change-Point Analysis*, 1997, sec. 1.1). Returns
    ``(C, k)`` with ``k`` the 0-based index of the last week before the change.
    """
    x = np.asarray(means, dtype=float)
    weights = 1.0 / np.asarray(standard_errors, dtype=float) ** 2
    centre = float(np.sum(weights * x) / np.sum(weights))
    partial = np.cumsum(weights * (x - centre))[:-1] / np.sqrt(np.sum(weights))
    where = int(np.argmax(np.abs(partial)))
    return float(np.abs(partial[where])), where


def cusum_null_statistics(
    standard_errors: ArrayLike, n_simulations: int, rng: np.random.Generator
) -> np.ndarray:
    """:func:`cusum_statistic` of ``n_simulations`` series with no change (normal weekly means).

    Parameters
    ----------
    standard_errors : array_like, shape (W,)
        The weekly standard errors.
    n_simulations : int
        Series to simulate.
    rng : numpy.random.Generator
        Source of the normal draws.

    Returns
    -------
    ndarray, shape (n_simulations,)
        The statistics.
    """
    se = np.asarray(standard_errors, dtype=float)
    weights = 1.0 / se**2
    draws = rng.standard_normal((n_simulations, se.size)) * se
    centre = (draws @ weights) / weights.sum()
    partial = np.cumsum(weights * (draws - centre[:, None]), axis=1)[:, :-1]
    return np.asarray(np.abs(partial).max(axis=1) / np.sqrt(weights.sum()))


@dataclass(frozen=True)
class CusumTest:
    """The CUSUM statistic, its Monte Carlo p-value and where the change most likely was."""

    statistic: float
    p_value: float
    change_after_index: int  # index into the weekly series
    n_weeks: int
    n_simulations: int


def cusum_change_test(series: WeeklySeries, n_simulations: int = 4000, seed: int = 0) -> CusumTest:
    """Test "no change in level over the weeks" with :func:`cusum_statistic`.

    The p-value is the Monte Carlo tail probability (with the +1 correction of Davison &
    Hinkley 1997, eq. 4.11) under independent normal weekly means with the series' own
    standard errors and a common level, so it is calibrated at any number of weeks and any
    uneven traffic, not only asymptotically. Rejecting at ``p < alpha`` raises a false alarm
    in a fraction ``alpha`` of driftless reviewers over the analysed window.

    Parameters
    ----------
    series : WeeklySeries
        Weekly means and standard errors, W weeks.
    n_simulations : int
        Monte Carlo series under no change.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    CusumTest
        The CUSUM ``statistic``, its ``p_value``, the week after which the change is placed,
        W and the simulations.
    """
    statistic, where = cusum_statistic(series.means, series.standard_errors)
    null = cusum_null_statistics(series.standard_errors, n_simulations, np.random.default_rng(seed))
    p_value = (1 + int(np.sum(null >= statistic))) / (n_simulations + 1)
    return CusumTest(statistic, p_value, where, int(series.means.size), n_simulations)
