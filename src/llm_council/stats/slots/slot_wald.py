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
:math:`F(k, \\nu)`. Given each cell's reviewer and each reviewer's df, :math:`\\nu` is the
statistic's own Satterthwaite df (:func:`wald_satterthwaite_df`, ADR 0059); given one
number, that number (the smallest of the reviewers' df is the conservative choice: a larger
denominator df only lowers the critical value). Pure function: arrays in, a frozen
dataclass out; ``None`` when the design does not identify the slot effects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.distribution_functions import chi2_sf, f_sf

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


def wald_satterthwaite_df(
    residualized_indicators: ArrayLike,
    gram: ArrayLike,
    noise_groups: ArrayLike,
    group_dfs: ArrayLike,
) -> float:
    r"""Satterthwaite df of a weighted Wald statistic whose weights come from estimated
    variances, one per group of cells (a reviewer).

    With :math:`\tilde z_i` the i-th row of :math:`\tilde M \tilde Z` and :math:`G =
    \sum_i \tilde z_i \tilde z_i^T`, cell i's share of the test's information is
    :math:`w_i = \tilde z_i^T G^{-1} \tilde z_i / k` (the shares sum to
    :math:`\operatorname{tr}(I_k)/k = 1`), and group r's is :math:`w_r = \sum_{i \in r}
    w_i`. Scaling group r's variance by :math:`c` scales its part of :math:`W` by
    :math:`1/c`, so with :math:`\hat\sigma_r^2 \sim \sigma_r^2 \chi^2_{f_r}/f_r`,
    :math:`W/k \approx (\chi^2_k/k) / D` with :math:`D = \sum_r w_r \chi^2_{f_r}/f_r`.
    Matching :math:`D` to :math:`\chi^2_\nu/\nu` by its variance, :math:`2\sum_r
    w_r^2/f_r = 2/\nu`, gives :math:`\nu = 1 / \sum_r w_r^2 / f_r` (Satterthwaite 1946,
    Biometrics Bull. 2:110-114; Welch 1947, Biometrika 34:28-35, for k = 1). Since
    :math:`\sum_r w_r = 1`, :math:`\min_r f_r \le \nu \le \sum_r f_r`: never below the
    smallest group's df, which is what a single bound would use. An infinite
    :math:`f_r` adds nothing to the sum (a known variance).
    """
    rows = np.asarray(residualized_indicators, dtype=float)
    matrix = np.asarray(gram, dtype=float)
    groups = np.asarray(noise_groups, dtype=np.intp)
    dfs = np.asarray(group_dfs, dtype=float)
    k = matrix.shape[0]
    cell_shares = np.einsum("ij,ij->i", rows @ np.linalg.inv(matrix), rows) / k
    shares = np.bincount(groups, weights=cell_shares, minlength=dfs.size)
    finite = np.isfinite(dfs)
    spread = float(np.sum(shares[finite] ** 2 / dfs[finite]))
    return math.inf if spread <= 0.0 else 1.0 / spread


def slot_wald_test(
    design: ArrayLike,
    observed: ArrayLike,
    display_indexes: ArrayLike,
    noise_variances: ArrayLike,
    denominator_df: float | ArrayLike,
    *,
    noise_groups: ArrayLike | None = None,
    session_scale_floor: bool = False,
) -> SlotWaldTest | None:
    r"""Wald test of the slot effects given each cell's noise variance (see the module).

    ``design``: the additive model's X, one row per cell; ``observed``: the scores;
    ``display_indexes``: each cell's slot; ``noise_variances``: each cell's reviewer's
    variance (positive, finite); ``denominator_df``: the variances' degrees of freedom
    (``math.inf`` for known variances), or with ``noise_groups`` (each cell's reviewer,
    0..R-1) one df per reviewer, combined by :func:`wald_satterthwaite_df`. ``None`` when
    fewer than two slots are present, a variance is not positive and finite, a df is not
    positive, or the slots are confounded with the answers and reviewers (one shared
    order, too few reviewers).

    ``session_scale_floor``: divide the statistic by :math:`\max(1, \hat s^2)`, where
    :math:`\hat s^2 = \mathrm{RSS}_w / d_e` is the weighted residual mean square of the
    model with slots (:math:`\mathrm{RSS}_w = \lVert \tilde M \tilde y \rVert^2 -
    W_{stat}`, :math:`d_e = n - \operatorname{rank} \tilde X - k`): the session's own
    check that the given variances are not too small (ADR 0059, amendment). Under the
    null with the variances right, :math:`\hat s^2 \sim \chi^2_{d_e}/d_e`, independent of
    :math:`W_{stat}` (orthogonal projections of a Gaussian vector; Searle 1987, sec. 6),
    and dividing by a number at least 1 only lowers the statistic, so the same
    :math:`F(k, \nu)` reference stays valid (conservative); when every variance is
    too small by a common factor c, :math:`\hat s^2` estimates c and takes most of it
    back.

    Parameters
    ----------
    design : array_like, shape (n, p)
        The additive model's X.
    observed : array_like, shape (n,)
        The scores.
    display_indexes : array_like of int, shape (n,)
        Each cell's slot.
    noise_variances : array_like, shape (n,)
        Each cell's reviewer's noise variance.
    denominator_df : float or array_like, shape (R,)
        The variances' df (``math.inf`` for known ones), or one per reviewer with
        ``noise_groups``.
    noise_groups : array_like of int, shape (n,), optional
        Each cell's reviewer, 0..R-1.
    session_scale_floor : bool
        Divide the statistic by max(1, s^2).

    Returns
    -------
    SlotWaldTest or None
        Centred ``effects`` and ``counts`` by slot, the weighted variance, the statistic
        W / k with its df (k, nu) and ``p_value``.
    """
    inputs = _wald_inputs(
        design, observed, display_indexes, noise_variances, denominator_df, noise_groups
    )
    if inputs is None:
        return None
    x, y, slots, variances, group_dfs, groups = inputs
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
    if session_scale_floor:
        residual_df = y.size - int(round(float(np.trace(projector)))) - k
        if residual_df > 0:
            residual_square = max(0.0, float(y_residual @ y_residual) - wald) / residual_df
            wald /= max(1.0, residual_square)
    reference_df = (
        float(group_dfs[0])
        if groups is None
        else wald_satterthwaite_df(z_residual, gram, groups, group_dfs)
    )
    return _wald_result(slot_values, slot_counts, gamma, wald, reference_df)


def _wald_result(
    slot_values: np.ndarray,
    slot_counts: np.ndarray,
    gamma: np.ndarray,
    wald: float,
    reference_df: float,
) -> SlotWaldTest:
    """Package :func:`slot_wald_test`'s fit: centred effects, W / k and its p-value.

    The p-value is :math:`P(\\chi^2_k > W)` for known variances (``reference_df`` infinite),
    else :math:`P(F_{k,\\nu} > W / k)`; the effects are centred on the cells' mean slot.
    """
    k = slot_values.size - 1
    if math.isinf(reference_df):
        p_value = float(chi2_sf(wald, k))
    else:
        p_value = float(f_sf(wald / k, k, reference_df))
    counts = slot_counts.astype(float)
    n_cells = float(counts.sum())
    effects = np.concatenate([[0.0], gamma])
    effects -= (counts @ effects) / n_cells
    slot_list = slot_values.tolist()
    return SlotWaldTest(
        effects=dict(zip(slot_list, effects.tolist(), strict=True)),
        counts=dict(zip(slot_list, slot_counts.tolist(), strict=True)),
        weighted_variance=float(counts @ effects**2) / n_cells,
        statistic=wald / k,
        numerator_df=k,
        denominator_df=reference_df,
        p_value=p_value,
    )


def _wald_inputs(
    design: ArrayLike,
    observed: ArrayLike,
    display_indexes: ArrayLike,
    noise_variances: ArrayLike,
    denominator_df: float | ArrayLike,
    noise_groups: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """:func:`slot_wald_test`'s inputs as arrays, or None when they cannot be tested.

    None: fewer than two cells, mismatched shapes, a variance not positive and finite, a
    df not positive (NaN included), groups out of range, or several dfs without groups.
    """
    x = np.asarray(design, dtype=float)
    y = np.asarray(observed, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    variances = np.asarray(noise_variances, dtype=float)
    if y.size < 2 or x.shape[0] != y.size or slots.shape != y.shape or variances.shape != y.shape:
        return None
    if not (np.all(np.isfinite(variances)) and np.all(variances > 0.0)):
        return None
    group_dfs = np.atleast_1d(np.asarray(denominator_df, dtype=float))
    if group_dfs.size == 0 or not bool(np.all(group_dfs > 0.0)):  # NaN compares False
        return None
    groups = None
    if noise_groups is not None:
        groups = np.asarray(noise_groups, dtype=np.intp)
        if groups.shape != y.shape or groups.min() < 0 or groups.max() >= group_dfs.size:
            return None
    elif group_dfs.size != 1:
        return None
    return x, y, slots, variances, group_dfs, groups
