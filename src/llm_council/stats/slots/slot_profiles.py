"""Per-reviewer display-slot effects within answers (answer fixed effects, clustered errors).

    score[s, r, m] = alpha[s, m] + b[r, slot_r(s, m)] + self[r] * is_self + error

``alpha`` is one fixed effect per answer (absorbed by demeaning within the answer), so
answer quality is removed exactly; ``b[r, k]`` is reviewer ``r``'s level at slot ``k``
(its leniency is their mean). A scope's slot effect at ``k`` is the mean, over the scope's
reviewers, of ``b[r, k] - mean_j b[r, j]``: points relative to the reviewer's own average
slot. This is identified only when reviewers of the same answer saw it at different slots
(each reviewer its own shuffle). With one shared order per session the common part of the
slot effects is absorbed by ``alpha`` and the contrasts are not estimable: the caller then
needs an across-session estimator (see ``bias_audit/report/analyses/position.py``). The check is
the null space of the demeaned Gram matrix (:mod:`llm_council.stats.design.identifiability`).
Covariance: CR1 with sessions as clusters; Wald tests with the Hotelling-type F of
:func:`llm_council.stats.design.joint_model.wald_test`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from llm_council.stats.design.joint_model import (
    ClusteredOlsFit,
    ols_absorbed_cluster_robust,
    wald_test,
)
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf


@dataclass(frozen=True)
class SlotEffects:
    """A scope's centred slot effects with intervals, the all-equal test and the trend."""

    estimates: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_values: np.ndarray
    wald_f: float
    wald_df: tuple[int, int]
    wald_p: float
    trend: float  # least-squares slope of the effects on the slot index, points per slot
    trend_ci: tuple[float, float]
    trend_p: float
    n_clusters: int
    #: the Wald covariance is singular: ``wald_p`` cannot see a deterministic effect
    #: (see :attr:`llm_council.stats.design.joint_model.WaldResult.singular`)
    wald_singular: bool = False


def fit_reviewer_slots(
    answer_index: ArrayLike,
    session_index: ArrayLike,
    reviewer_index: ArrayLike,
    slot: ArrayLike,
    is_self: ArrayLike,
    score: ArrayLike,
    n_reviewers: int,
    n_slots: int,
) -> ClusteredOlsFit:
    """Fit the model above; columns ``r * n_slots + k`` then one self term per reviewer.

    Parameters
    ----------
    answer_index, session_index, reviewer_index : array_like of int, shape (n,)
        Each score's answer (the absorbed effect), session (the cluster) and reviewer.
    slot : array_like of int, shape (n,)
        Each score's display slot, 0..K-1.
    is_self : array_like of bool, shape (n,)
        True for a reviewer's score of its own answer.
    score : array_like, shape (n,)
        The scores.
    n_reviewers, n_slots : int
        R and K.

    Returns
    -------
    ClusteredOlsFit
        Coefficients (R * K + R,) with their CR1 covariance.
    """
    design = _slot_design(reviewer_index, slot, is_self, n_reviewers, n_slots)
    return ols_absorbed_cluster_robust(design, score, answer_index, session_index)


def _slot_design(
    reviewer_index: ArrayLike,
    slot: ArrayLike,
    is_self: ArrayLike,
    n_reviewers: int,
    n_slots: int,
) -> sparse.csr_matrix:
    """The CSR design of :func:`fit_reviewer_slots`: two stored entries a row, built as CSR
    arrays directly (no COO sort): the slot dummy, and the reviewer's self term, an explicit
    0 on a record that is not a self-review. Index arrays are int32 (scipy keeps them
    without a copy), and the per-record inputs are not held through the fit."""
    reviewer = np.asarray(reviewer_index)
    n = reviewer.size
    columns = np.empty((n, 2), dtype=np.int32)
    np.multiply(reviewer, n_slots, out=columns[:, 0], casting="unsafe")
    columns[:, 0] += np.asarray(slot).astype(np.int32, copy=False)
    columns[:, 1] = reviewer
    columns[:, 1] += n_reviewers * n_slots
    values = np.empty((n, 2))
    values[:, 0] = 1.0
    values[:, 1] = np.asarray(is_self, dtype=bool)
    index_type = np.int32 if 2 * n < np.iinfo(np.int32).max else np.int64
    return sparse.csr_matrix(
        (values.reshape(-1), columns.reshape(-1), np.arange(0, 2 * n + 1, 2, dtype=index_type)),
        shape=(n, n_reviewers * n_slots + n_reviewers),
    )


def scope_contrasts(reviewers: ArrayLike, n_reviewers: int, n_slots: int) -> np.ndarray:
    """``(n_slots, n_columns)``: row k = mean over ``reviewers`` of b[r, k] - mean_j b[r, j].

    Parameters
    ----------
    reviewers : array_like of int
        The reviewers in the scope.
    n_reviewers, n_slots : int
        R and K.

    Returns
    -------
    ndarray, shape (K, R * K + R)
        The contrast rows.
    """
    members = np.asarray(reviewers, dtype=np.int64)
    contrasts = np.zeros((n_slots, n_reviewers * n_slots + n_reviewers))
    centring = np.eye(n_slots) - 1.0 / n_slots
    for r in members:
        contrasts[:, r * n_slots : (r + 1) * n_slots] += centring / members.size
    return contrasts


def slot_effects(fit: ClusteredOlsFit, contrasts: np.ndarray) -> SlotEffects | None:
    """Estimates and tests for one scope; None when the design does not identify them.

    Parameters
    ----------
    fit : ClusteredOlsFit
        From :func:`fit_reviewer_slots`.
    contrasts : ndarray, shape (K, n_columns)
        From :func:`scope_contrasts`.

    Returns
    -------
    SlotEffects or None
        Per-slot ``estimates``, ``ci_low``, ``ci_high``, ``p_values`` (each (K,)), the Wald
        F with its df and p (``wald_singular`` when its covariance is singular), the
        linear ``trend`` with its interval and p, and ``n_clusters``.
    """
    if fit.n_clusters < 2 or not fit.estimable(contrasts).all():
        return None
    n_slots = contrasts.shape[0]
    estimates = contrasts @ fit.coefficients
    covariance = contrasts @ fit.covariance @ contrasts.T
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    df = max(fit.n_clusters - 1, 1)
    t_crit = float(t_ppf(0.975, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_values = np.where(se > 0, 2 * t_sf(np.abs(estimates / se), df), np.nan)
    # all slots equal: each of the first K-1 effects minus the last (the centred effects
    # sum to zero, so K-1 contrasts carry all the information)
    differences = np.hstack([np.eye(n_slots - 1), -np.ones((n_slots - 1, 1))]) @ contrasts
    test = wald_test(
        differences @ fit.coefficients, differences @ fit.covariance @ differences.T, fit.n_clusters
    )
    positions = np.arange(n_slots) - (n_slots - 1) / 2
    trend_weights = positions / float(positions @ positions)
    trend = float(trend_weights @ estimates)
    trend_se = float(np.sqrt(max(trend_weights @ covariance @ trend_weights, 0.0)))
    trend_p = float(2 * t_sf(abs(trend / trend_se), df)) if trend_se > 0 else np.nan
    return SlotEffects(
        estimates=estimates,
        ci_low=estimates - t_crit * se,
        ci_high=estimates + t_crit * se,
        p_values=np.asarray(p_values, dtype=float),
        wald_f=test.f_statistic,
        wald_df=(test.df_numerator, test.df_denominator),
        wald_p=test.p_value,
        trend=trend,
        trend_ci=(trend - t_crit * trend_se, trend + t_crit * trend_se),
        trend_p=trend_p,
        n_clusters=fit.n_clusters,
        wald_singular=test.singular,
    )
