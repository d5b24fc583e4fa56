"""A one-session slot test against each reviewer's known noise (its history), weighted.

The per-session position test re-draws display orders (a randomization test) because one
session says almost nothing about its reviewers' noise. When every reviewer has a noise
variance from its past sessions, the slot effects of this session can be tested against
that noise directly: weighted least squares of score = mean + reviewer + answer + slot,
weights :math:`1/\\sigma_r^2`, and a Wald test of the slot effects. Only this session's
scores enter the estimate; the history supplies only the variances.

With :math:`\\tilde X = W^{1/2} X` (the additive model), :math:`\\tilde Z = W^{1/2} Z` (slot
indicators, first slot as base), :math:`\\tilde y = W^{1/2} y` and :math:`\\tilde M = I -
\\tilde X \\tilde X^+`, Frisch-Waugh-Lovell gives

.. math::

    \\hat\\gamma = G^{-1} \\tilde Z^T \\tilde M \\tilde y, \\quad
    G = \\tilde Z^T \\tilde M \\tilde Z, \\quad
    \\operatorname{Var}\\hat\\gamma = G^{-1}, \\quad
    W_{stat} = \\hat\\gamma^T G \\hat\\gamma

(Lovell 1963, JASA 58:993-1010; Searle 1987, *Linear Models for Unbalanced Data*, sec. 6).
With known variances :math:`W_{stat} \\sim \\chi^2_k` under no slot effect; with variances
estimated on :math:`\\nu` degrees of freedom, :math:`W_{stat}/k` is referred to
:math:`F(k, \\nu)`, taking the smallest of the reviewers' :math:`\\nu` (conservative: a
larger denominator df only lowers the critical value). Pure function: arrays in, a frozen
dataclass out; ``None`` when the design does not identify the slot effects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.distribution_functions import chi2_sf, f_sf

#: the smallest eigenvalue of G, relative to the largest slot count, below which the slot
#: effects count as not identified (as position_tests' rank check)
_GRAM_RANK_TOLERANCE = 1e-8


@dataclass(frozen=True)
class SlotWaldTest:
    """Slot effects (centred, count-weighted mean 0), their Wald test and its reference."""

    effects: dict[int, float]
    counts: dict[int, int]
    weighted_variance: float
    statistic: float  # W / k
    numerator_df: int
    denominator_df: float
    p_value: float


def slot_wald_test(
    design: ArrayLike,
    observed: ArrayLike,
    display_indexes: ArrayLike,
    noise_variances: ArrayLike,
    denominator_df: float,
) -> SlotWaldTest | None:
    """Wald test of the slot effects given each cell's noise variance (see the module).

    ``design``: the additive model's X, one row per cell; ``observed``: the scores;
    ``display_indexes``: each cell's slot; ``noise_variances``: each cell's reviewer's
    variance (positive, finite); ``denominator_df``: the variances' degrees of freedom
    (``math.inf`` for known variances). ``None`` when fewer than two slots are present,
    a variance is not positive and finite, or the slots are confounded with the answers
    and reviewers (one shared order, too few reviewers).
    """
    x = np.asarray(design, dtype=float)
    y = np.asarray(observed, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    variances = np.asarray(noise_variances, dtype=float)
    if y.size < 2 or x.shape[0] != y.size or slots.shape != y.shape or variances.shape != y.shape:
        return None
    if not (np.all(np.isfinite(variances)) and np.all(variances > 0.0)):
        return None
    if not denominator_df > 0.0:
        return None
    slot_values, slot_codes, slot_counts = np.unique(slots, return_inverse=True, return_counts=True)
    n_slots = slot_values.size
    if n_slots < 2:
        return None
    root_weights = 1.0 / np.sqrt(variances)
    x_weighted = x * root_weights[:, None]
    indicators = (slot_codes[:, None] == np.arange(1, n_slots)[None, :]).astype(float)
    z_weighted = indicators * root_weights[:, None]
    y_weighted = y * root_weights
    projector = x_weighted @ np.linalg.pinv(x_weighted)
    z_residual = z_weighted - projector @ z_weighted
    y_residual = y_weighted - projector @ y_weighted
    gram = z_residual.T @ z_residual
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    if not eigenvalues[0] > _GRAM_RANK_TOLERANCE * float(slot_counts[1:].max()):
        return None
    score_vector = z_residual.T @ y_residual
    gamma = eigenvectors @ ((eigenvectors.T @ score_vector) / eigenvalues)
    wald = float(gamma @ gram @ gamma)
    k = n_slots - 1
    if math.isinf(denominator_df):
        p_value = float(chi2_sf(wald, k))
    else:
        p_value = float(f_sf(wald / k, k, denominator_df))
    counts = slot_counts.astype(float)
    effects = np.concatenate([[0.0], gamma])
    effects -= (counts @ effects) / y.size
    slot_list = slot_values.tolist()
    return SlotWaldTest(
        effects=dict(zip(slot_list, effects.tolist(), strict=True)),
        counts=dict(zip(slot_list, slot_counts.tolist(), strict=True)),
        weighted_variance=float(counts @ effects**2) / y.size,
        statistic=wald / k,
        numerator_df=k,
        denominator_df=float(denominator_df),
        p_value=p_value,
    )
