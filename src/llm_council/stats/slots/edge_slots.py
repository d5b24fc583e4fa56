"""The position test of the report: do the first or the last display slot differ from the rest?

The documented position biases of LLM judges are primacy and recency: a judge favours the
answer it reads first (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and
Chatbot Arena", NeurIPS, sec. 3.3; Wang et al. 2024, "Large Language Models are not Fair
Evaluators", ACL) or the one it reads last, and long contexts are used in a U shape (Liu et
al. 2024, "Lost in the Middle", TACL 12). The omnibus test that every slot is equal spends
K - 1 degrees of freedom on every pattern a slot effect could take; this test spends two,
on the two edges, so a primacy or recency effect is found with fewer sessions (ADR 0072).
It still sees a linear trend (the edges carry most of it), and a bias of a middle slot only
through the edges it pushes down. For K = 3 slots the two edge contrasts span every slot
contrast, so the test *is* the omnibus test; it is defined for K >= 3.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.joint_model import WaldResult, ols_cluster_robust, wald_test


def edge_slot_contrasts(n_slots: int) -> np.ndarray:
    """``(2, K)``: the first slot minus the mean of the others, the last minus the same.

    Each row sums to zero, so it gives the same value on raw and on centred slot effects.
    """
    if n_slots < 3:
        raise ValueError(f"the edge test needs at least 3 slots, got {n_slots}")
    rows = np.full((2, n_slots), -1.0 / (n_slots - 1))
    rows[0, 0] = 1.0
    rows[1, -1] = 1.0
    return rows


def edge_slot_wald(
    slot_effects: ArrayLike, slot_covariance: ArrayLike, n_clusters: int
) -> WaldResult:
    r"""Cluster-robust Wald test that the first and the last slot each equal the others' mean.

    With :math:`E` = :func:`edge_slot_contrasts`, :math:`\hat b` the K slot effects (raw or
    centred) and :math:`\widehat V` their cluster-robust covariance,

    .. math::

        W = (E\hat b)^\top (E \widehat V E^\top)^{-1} (E\hat b),\qquad
        F = \frac{C - 2}{2\,(C - 1)}\, W \sim F_{2,\,C-2}

    the Hotelling-type small-sample reference of
    :func:`~llm_council.stats.design.joint_model.wald_test` (Pustejovsky & Tipton 2018,
    J. Business & Economic Statistics 36(4)), with C clusters (sessions).

    Parameters
    ----------
    slot_effects : array_like, shape (K,)
        The slot effects, K >= 3.
    slot_covariance : array_like, shape (K, K)
        Their cluster-robust covariance.
    n_clusters : int
        C, the clusters behind the covariance.

    Returns
    -------
    WaldResult
        F, its df (2, C - 2), the p-value, and whether the 2 x 2 covariance was singular;
        F and p NaN (untested) when an effect or a covariance entry is not finite.
    """
    effects = np.asarray(slot_effects, dtype=float).ravel()
    covariance = np.asarray(slot_covariance, dtype=float)
    if covariance.shape != (effects.size, effects.size):
        raise ValueError(
            f"slot covariance has shape {covariance.shape}, expected {(effects.size,) * 2}"
        )
    edges = edge_slot_contrasts(effects.size)
    if not (np.isfinite(effects).all() and np.isfinite(covariance).all()):
        # untested (NaN p), not an error: the SVD behind the rank check cannot take NaN
        nan = float("nan")
        return WaldResult(nan, 2, max(n_clusters - 2, 0), nan, False)
    return wald_test(edges @ effects, edges @ covariance @ edges.T, n_clusters)


def centred_slot_means(
    cluster_index: ArrayLike, slot: ArrayLike, centred: ArrayLike, n_slots: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Slot means of centred scores with their CR1 covariance (sessions as clusters).

    The regression of the centred scores on the K slot dummies, as
    :func:`~llm_council.stats.slots.slot_across_sessions.fit_centred_slots` fits it, returned
    as ``(means, covariance, n_clusters)`` for :func:`edge_slot_wald`.
    """
    slots = np.asarray(slot, dtype=np.intp)
    dummies = np.zeros((slots.size, n_slots))
    dummies[np.arange(slots.size), slots] = 1.0
    fit = ols_cluster_robust(dummies, np.asarray(centred, dtype=float), cluster_index)
    return fit.coefficients, fit.covariance, fit.n_clusters
