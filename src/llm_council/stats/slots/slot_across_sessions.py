"""Display-slot effects across sessions, from reviewer-centred scores (clustered errors).

    centred[s, r, m] = b[slot_r(s, m)] + error,    centred = score - mean_m score[s, r, m]

The estimator the report falls back to when the within-answer fit
(:mod:`llm_council.stats.slots.slot_profiles`) cannot identify the slots: every reviewer of a
session saw one shared order, so answer quality and the common slot effect are confounded
within a session, but not across sessions when the order is drawn at random per session.
The centred score removes each reviewer's leniency and the session's level; its slot
means are the slot effects (they sum to zero over complete slot sets). Identification:
the slot contrasts must lie outside the null space of the within-group Gram matrix of
[model dummies, slot dummies] (:func:`slots_identified`; a fixed order, one model always
at slot A, cannot tell slot from model).

Covariance: CR1 with sessions as clusters
(:func:`~llm_council.stats.design.joint_model.ols_cluster_robust`); the all-slots-equal test is the
Hotelling-type F of :func:`~llm_council.stats.design.joint_model.wald_test` (Cameron & Miller
2015, "A Practitioner's Guide to Cluster-Robust Inference", J. Human Resources 50(2),
sec. VI); the trend is the within-group OLS slope of the centred score on the slot index,
with the same clusters.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from llm_council.stats.design.identifiability import estimable, gram_null_space
from llm_council.stats.design.joint_model import (
    demean_within_groups,
    group_sum_matrix,
    ols_cluster_robust,
    wald_test,
)
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf
from llm_council.stats.slots.slot_profiles import SlotEffects

__all__ = ["fit_centred_slots", "slots_identified"]


def _check_slots(slots: np.ndarray, n_slots: int, *others: np.ndarray) -> None:
    """One clear error for codes a caller should never pass (no silent wrong design)."""
    if any(other.shape != slots.shape for other in others):
        shapes = ", ".join(str(array.shape) for array in (slots, *others))
        raise ValueError(f"slot inputs must have one shape, got {shapes}")
    if slots.size and (int(slots.min()) < 0 or int(slots.max()) >= n_slots):
        raise ValueError(
            f"slot codes must lie in 0..{n_slots - 1}, got {int(slots.min())}..{int(slots.max())}"
        )


def slots_identified(
    group_index: ArrayLike, model_index: ArrayLike, slot: ArrayLike, n_slots: int
) -> bool:
    """Are all slot contrasts estimable in ``score ~ group FE + model + slot``?

    The within-``group`` Gram of [model dummies, slot dummies] is formed sparsely; slot
    contrasts (each slot vs the last) must be orthogonal to its null space (Searle 1987,
    *Linear Models for Unbalanced Data*, sec. 5.4). ``group_index`` need not be dense: an
    unused id adds an empty group, which changes nothing.

    Parameters
    ----------
    group_index : array_like of int, shape (n,)
        Each score's fixed-effect group (reviewer-session).
    model_index : array_like of int, shape (n,)
        Each score's candidate model.
    slot : array_like of int, shape (n,)
        Each score's display slot, 0..K-1.
    n_slots : int
        K.

    Returns
    -------
    bool
        True when every slot contrast is estimable.
    """
    group = np.asarray(group_index)
    model = np.asarray(model_index)
    slots = np.asarray(slot)
    if group.size == 0 or n_slots < 2:
        return False
    _check_slots(slots, n_slots, group, model)
    n_models = int(model.max()) + 1
    rows = np.arange(group.size)
    design = sparse.csr_matrix(
        (
            np.ones(2 * group.size),
            (np.concatenate([rows, rows]), np.concatenate([model, n_models + slots])),
        ),
        shape=(group.size, n_models + n_slots),
    )
    sums = group_sum_matrix(group) @ design
    counts = np.bincount(group).astype(float)
    inverse = np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)
    sums_dense = np.asarray(sums.toarray())
    gram = np.asarray((design.T @ design).toarray()) - sums_dense.T @ (
        sums_dense * inverse[:, None]
    )
    contrasts = np.zeros((n_slots - 1, n_models + n_slots))
    for k in range(n_slots - 1):
        contrasts[k, n_models + k] = 1.0
        contrasts[k, n_models + n_slots - 1] = -1.0
    return bool(estimable(contrasts, gram_null_space(gram)).all())


def _interval(estimate: float, se: float, t_crit: float, df: int) -> tuple[float, float, float]:
    """(low, high, two-sided p) of a t interval; p is NaN when ``se`` is 0."""
    p = float(2 * t_sf(abs(estimate / se), df)) if se > 0 else float("nan")
    return estimate - t_crit * se, estimate + t_crit * se, p


def fit_centred_slots(
    cluster_index: ArrayLike,
    group_index: ArrayLike,
    slot: ArrayLike,
    centred: ArrayLike,
    n_slots: int,
) -> SlotEffects:
    r"""Slot effects of ``centred`` scores with t intervals, the Wald test and the trend.

    ``cluster_index`` (sessions) must be dense codes 0..G-1; ``group_index`` is the
    reviewer-session each score was centred in. With D the slot dummies, the effects are
    :math:`\hat b = (D'D)^{-1} D'y` (the slot means), intervals
    :math:`\hat b_k \pm t_{0.975, G-1}\,\mathrm{se}_k` with CR1 standard errors, and the
    test of :math:`b_0 = \dots = b_{K-1}` uses the K-1 differences to the last slot.
    The caller checks :func:`slots_identified` first.

    Parameters
    ----------
    cluster_index : array_like of int, shape (n,)
        Each score's session, dense 0..G-1.
    group_index : array_like of int, shape (n,)
        The reviewer-session each score was centred in.
    slot : array_like of int, shape (n,)
        Each score's display slot, 0..K-1.
    centred : array_like, shape (n,)
        The scores, centred within their group.
    n_slots : int
        K.

    Returns
    -------
    SlotEffects
        Per-slot ``estimates``, ``ci_low``, ``ci_high``, ``p_values`` (each (K,)), the Wald
        F with its df and p (``wald_singular`` when its covariance is singular), the
        linear ``trend`` with its interval and p, and ``n_clusters``.
    """
    cluster = np.asarray(cluster_index)
    slots = np.asarray(slot)
    response = np.asarray(centred, dtype=float)
    _check_slots(slots, n_slots, cluster, response)
    if not np.isfinite(response).all():
        raise ValueError("centred scores must be finite")
    dummies = np.zeros((slots.size, n_slots))
    dummies[np.arange(slots.size), slots] = 1.0
    fit = ols_cluster_robust(dummies, response, cluster)
    df = fit.n_clusters - 1
    t_crit = float(t_ppf(0.975, max(df, 1)))
    bounds = [
        _interval(float(b), float(se), t_crit, df)
        for b, se in zip(fit.coefficients, fit.standard_errors, strict=True)
    ]
    contrast = np.hstack([np.eye(n_slots - 1), -np.ones((n_slots - 1, 1))])
    test = wald_test(
        contrast @ fit.coefficients, contrast @ fit.covariance @ contrast.T, fit.n_clusters
    )
    # slope of the centred score on the slot, within each reviewer's session
    slot_within = demean_within_groups(slots.astype(float), np.asarray(group_index))
    slope_fit = ols_cluster_robust(slot_within[:, None], response, cluster)
    slope, slope_se = float(slope_fit.coefficients[0]), float(slope_fit.standard_errors[0])
    trend_low, trend_high, trend_p = _interval(slope, slope_se, t_crit, df)
    return SlotEffects(
        estimates=np.asarray(fit.coefficients, dtype=float),
        ci_low=np.array([low for low, _, _ in bounds]),
        ci_high=np.array([high for _, high, _ in bounds]),
        p_values=np.array([p for _, _, p in bounds]),
        wald_f=test.f_statistic,
        wald_df=(test.df_numerator, test.df_denominator),
        wald_p=test.p_value,
        trend=slope,
        trend_ci=(trend_low, trend_high),
        trend_p=trend_p,
        n_clusters=fit.n_clusters,
        wald_singular=test.singular,
    )
