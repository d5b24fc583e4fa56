r"""One session's bias estimates per reviewer, for the anytime monitor.

The session's reviewer x candidate table is fitted with the two-way additive model of
:mod:`llm_council.stats.design.additive_model` over its scored cells, self-reviews left out:
:math:`y_{rc} = \mu + \alpha_r + \beta_c + \varepsilon_{rc}`. Every estimate below is a
linear function :math:`a^T y` of the scores, returned with its *design variance*
:math:`k = \sum a_i^2`, its variance per unit of score noise (equal noise assumed; the
monitor learns the noise's scale across sessions, :mod:`llm_council.stats.monitor.anytime_monitor`):

- **leniency** of reviewer r: :math:`\hat L_r = c_r^T\hat b` with
  :math:`c_r` the contrast :math:`\alpha_r - \frac1{R-1}\sum_{r' \ne r}\alpha_{r'}` (points
  above the others on the same answers); :math:`k = c_r^T (X^TX)^{-1} c_r`
  (Searle 1987, sec. 5.5);
- **slot preference** of reviewer r: its score of the answer it saw first minus that
  score's prediction from every *other* fitted cell, the leave-one-out residual
  :math:`e_i / M_{ii}` with :math:`M = I - X(X^TX)^{-1}X^T`; :math:`k = 1/M_{ii}` (since
  :math:`M` is idempotent, :math:`\sum_j M_{ji}^2 = M_{ii}`). None when the first answer
  was the reviewer's own or unscored, and none when the fit has fewer than
  :data:`MIN_SLOT_RESIDUAL_DF` residual df: with one (a complete 3-member council) every
  reviewer's slot estimate is the same residual up to sign and scale (:math:`k = 6`), so
  the session cannot tell the reviewers' slot preferences apart, and a test on it would
  spend a share of the monitor's level for about a seventh of a leniency test's
  information (ADR 0053, amendment). Reference: Cook & Weisberg (1982), *Residuals and
  Influence in Regression*, sec. 2.2 (deleted residuals);
- **self-preference** of reviewer r: its score of its own answer minus the fit's
  prediction :math:`x_0^T\hat b`; :math:`k = 1 + x_0^T(X^TX)^{-1}x_0` (Seber & Lee 2003,
  sec. 5.3).

Functions over arrays; a batch of sessions sharing one pattern of scored cells is one
matrix product (:func:`session_effects`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.design.additive_model import design_rank

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: the monitored biases, in the order of the estimates' last axis
BIASES = ("leniency", "slot_preference", "self_preference")
#: a leave-one-out residual with M_ii below this is not identified (the cell alone pins a
#: parameter)
_MIN_LEVERAGE_GAP = 1e-9
#: the residual df a session's fit needs before its slot estimates are monitored
MIN_SLOT_RESIDUAL_DF = 2


@dataclass(frozen=True)
class EffectDesign:
    """The weights of one pattern of scored cells: every estimate is ``weights @ y``.

    ``fit_rows``/``fit_cols``: the fitted cells (scored, not self-reviews), the order of
    ``y``; ``cell_index[r, c]``: a cell's place in that order (-1: not fitted);
    ``self_candidate[r]``: reviewer r's own answer's column (-1: none scored).
    """

    n_reviewers: int
    n_candidates: int
    fit_rows: IntArray
    fit_cols: IntArray
    cell_index: IntArray
    self_candidate: IntArray
    leniency_weights: FloatArray  # (R, n_fit)
    leniency_k: FloatArray  # (R,)
    loo_weights: FloatArray  # (n_fit, n_fit): row i, cell i's leave-one-out residual
    loo_k: FloatArray  # (n_fit,), NaN where not identified
    self_weights: FloatArray  # (R, n_fit): minus the prediction's weights
    self_k: FloatArray  # (R,), NaN where no self-review


def _design_matrix(
    rows: IntArray, cols: IntArray, n_reviewers: int, n_candidates: int
) -> FloatArray:
    """Intercept, reviewers 1..R-1, candidates 1..C-1 (treatment coding)."""
    design = np.zeros((rows.size, n_reviewers + n_candidates - 1))
    design[:, 0] = 1.0
    with_reviewer = np.flatnonzero(rows > 0)
    design[with_reviewer, rows[with_reviewer]] = 1.0
    with_candidate = np.flatnonzero(cols > 0)
    design[with_candidate, n_reviewers - 1 + cols[with_candidate]] = 1.0
    return design


def _cell_rows(
    reviewers: IntArray, candidates: IntArray, n_reviewers: int, n_parameters: int
) -> FloatArray:
    rows = np.zeros((reviewers.size, n_parameters))
    rows[:, 0] = 1.0
    rows[reviewers > 0, reviewers[reviewers > 0]] = 1.0
    rows[candidates > 0, n_reviewers - 1 + candidates[candidates > 0]] = 1.0
    return rows


def effect_design(fit_mask: ArrayLike, self_candidate: ArrayLike) -> EffectDesign | None:
    """The weights for a table whose fitted cells are ``fit_mask`` (R x C, bool) and whose
    reviewers' own answers sit in columns ``self_candidate`` (-1: none); ``None`` when the
    additive model is not identified (fewer than 2 reviewers or candidates, cells that do
    not connect everyone, no cell beyond the parameters).

    Parameters
    ----------
    fit_mask : array_like of bool, shape (R, C)
        The fitted cells.
    self_candidate : array_like of int, shape (R,)
        Each reviewer's own answer column, -1 for none.

    Returns
    -------
    EffectDesign or None
        The weights of the leniency, slot-preference and self-preference estimates.
    """
    mask = np.asarray(fit_mask, dtype=bool)
    own = np.asarray(self_candidate, dtype=np.intp)
    return _effect_design_cached(mask.shape, mask.tobytes(), tuple(own.tolist()))


@lru_cache(maxsize=256)
def _effect_design_cached(
    shape: tuple[int, int], mask_bytes: bytes, own: tuple[int, ...]
) -> EffectDesign | None:
    n_reviewers, n_candidates = shape
    if n_reviewers < 2 or n_candidates < 2:
        return None
    mask = np.frombuffer(mask_bytes, dtype=bool).reshape(shape)
    rows, cols = np.nonzero(mask)
    n_parameters = n_reviewers + n_candidates - 1
    if rows.size <= n_parameters:
        return None
    design = _design_matrix(rows, cols, n_reviewers, n_candidates)
    _, singular_values, right_t = np.linalg.svd(design, full_matrices=False)
    if design_rank(design, singular_values) < n_parameters:
        return None
    inverse = (right_t.T / singular_values**2) @ right_t  # (X'X)^-1
    solve = inverse @ design.T  # b = solve @ y
    contrasts = np.zeros((n_reviewers, n_parameters))
    contrasts[:, 1:n_reviewers] = -1.0 / (n_reviewers - 1)
    contrasts[np.arange(1, n_reviewers), np.arange(1, n_reviewers)] = 1.0
    residual_maker = np.eye(rows.size) - design @ solve
    gap = np.diag(residual_maker).copy()
    identified = (gap > _MIN_LEVERAGE_GAP) & (rows.size - n_parameters >= MIN_SLOT_RESIDUAL_DF)
    safe_gap = np.where(identified, gap, 1.0)
    own_array = np.asarray(own, dtype=np.intp)
    has_self = own_array >= 0
    self_rows = _cell_rows(
        np.arange(n_reviewers), np.where(has_self, own_array, 0), n_reviewers, n_parameters
    )
    cell_index = np.full(shape, -1, dtype=np.intp)
    cell_index[rows, cols] = np.arange(rows.size)
    freeze = [
        contrasts @ solve,
        np.einsum("ij,jk,ik->i", contrasts, inverse, contrasts),
        (residual_maker / safe_gap[None, :]).T,
        np.where(identified, 1.0 / safe_gap, np.nan),
        -(self_rows @ solve),
        np.where(has_self, 1.0 + np.einsum("ij,jk,ik->i", self_rows, inverse, self_rows), np.nan),
    ]
    for array in (*freeze, rows, cols, cell_index, own_array):
        array.flags.writeable = False
    return EffectDesign(
        n_reviewers=n_reviewers,
        n_candidates=n_candidates,
        fit_rows=rows,
        fit_cols=cols,
        cell_index=cell_index,
        self_candidate=own_array,
        leniency_weights=freeze[0],
        leniency_k=freeze[1],
        loo_weights=freeze[2],
        loo_k=freeze[3],
        self_weights=freeze[4],
        self_k=freeze[5],
    )


def session_effects(
    design: EffectDesign, scores: ArrayLike, first_candidate: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Estimates and design variances, shape ``(..., R, len(BIASES))``, for tables
    ``scores`` (``(..., R, C)``, all with ``design``'s pattern of fitted cells) whose
    reviewers saw column ``first_candidate[..., r]`` first (-1: unknown). NaN marks an
    estimate the session does not give.

    Parameters
    ----------
    design : EffectDesign
        From :func:`effect_design`.
    scores : array_like, shape (..., R, C)
        Score tables with the design's fitted cells.
    first_candidate : array_like of int, shape (..., R)
        The column each reviewer saw first, -1 for unknown.

    Returns
    -------
    estimates : ndarray, shape (..., R, len(BIASES))
        The session's estimates, NaN where not given.
    variances : ndarray, shape (..., R, len(BIASES))
        Their design variances (per unit noise variance).
    """
    table = np.asarray(scores, dtype=float)
    first = np.asarray(first_candidate, dtype=np.intp)
    y = table[..., design.fit_rows, design.fit_cols]  # (..., n_fit)
    n_reviewers = design.n_reviewers
    estimates = np.full((*table.shape[:-2], n_reviewers, len(BIASES)), np.nan)
    variances = np.full_like(estimates, np.nan)
    estimates[..., 0] = y @ design.leniency_weights.T
    variances[..., 0] = design.leniency_k
    # slot: the leave-one-out residual of the cell each reviewer saw first
    reviewer_axis = np.arange(n_reviewers)
    # np.maximum(.., 0), not np.clip (the same integers, a fifth of the cost)
    first_cell = np.where(first >= 0, design.cell_index[reviewer_axis, np.maximum(first, 0)], -1)
    loo = y @ design.loo_weights.T  # (..., n_fit)
    first_fitted = np.maximum(first_cell, 0)
    picked = np.take_along_axis(loo, first_fitted, axis=-1)
    picked_k = design.loo_k[first_fitted]
    slot_given = (first_cell >= 0) & np.isfinite(picked_k)
    estimates[..., 1] = np.where(slot_given, picked, np.nan)
    variances[..., 1] = np.where(slot_given, picked_k, np.nan)
    # self: own score minus its prediction
    has_self = design.self_candidate >= 0
    own_scores = table[..., reviewer_axis, np.where(has_self, design.self_candidate, 0)]
    self_estimate = own_scores + y @ design.self_weights.T
    estimates[..., 2] = np.where(has_self, self_estimate, np.nan)
    variances[..., 2] = design.self_k
    return estimates, variances
