r"""Length-controlled favouritism from each session's two-way residuals, in one projection.

:func:`~llm_council.stats.bias_effects.favouritism.length_controlled_cell_effects` projects
the scores with the covariates, then each covariate again, then the adjusted scores. The
two-way projection is linear, so one projection is enough: with
:math:`u_s = M_{O_s} [y_s, X^{(1)}_s, \dots, X^{(R)}_s]` (the score and each reviewer's
ln(words) covariate), the adjusted residual for *any* slope is
:math:`u_s (1, -\beta)^\top`, the covariates' residuals are the columns of :math:`u_s`,
and the three-way fit needs only :math:`\sum_s M_{O_s}`, :math:`\sum_s u_s` and each
session's :math:`Z_s^\top Z_s` with :math:`Z_s = u_s - M_{O_s} \hat g`
(Frisch-Waugh-Lovell; Lovell 1963, JASA 58: 993-1010). :func:`two_way_residuals` computes
:math:`u_s`; :func:`effects_from_residuals` finishes the slopes, the cell effects and their
linearisation; :func:`matrix_from_session_effects` the intervals, Holm and spill-over. The
report's incremental section (ADR 0078) keeps each session's table and finishes with these.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.bias_effects.favouritism import (
    FavouritismMatrix,
    explain_spillover,
    spillover_weights,
)
from llm_council.stats.design.row_patterns import row_patterns
from llm_council.stats.design.session_tables import SessionTables
from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import cluster_mean_interval

#: a cell whose leverage complement is below this is not identified (as in .favouritism)
_LEVERAGE_FLOOR = 1e-9
#: doubles of three-way residuals held at once (small blocks are reused, not page-faulted)
_CHUNK_DOUBLES = 250_000


def two_way_residuals(scores: ArrayLike, log_words: ArrayLike | None = None) -> np.ndarray:
    r"""Each session's two-way residuals of the score and of each reviewer's length covariate.

    ``scores`` is (sessions, reviewers, models) with NaN for unobserved cells; ``log_words``
    (same shape, finite where a score is observed) gives the covariates
    :math:`X^{(j)}_{srm} = [r = j] \ln w_{srm}`. Returns (sessions, reviewers, models, k):
    :math:`M_{O_s}` applied to the score (``[..., 0]``) and, with ``log_words``, to each
    :math:`X^{(j)}` (``[..., 1 + j]``, k = 1 + reviewers); 0 on unobserved cells.
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 3:
        raise ValueError(
            f"scores must have shape (sessions, reviewers, models), got {values.shape}"
        )
    n_sessions, n_reviewers, n_models = values.shape
    observed = np.isfinite(values)
    n_columns = 1 if log_words is None else 1 + n_reviewers
    design = np.zeros((n_sessions, n_reviewers, n_models, n_columns))
    np.copyto(design[..., 0], values, where=observed)
    if log_words is not None:
        lengths = np.asarray(log_words, dtype=float)
        if lengths.shape != values.shape:
            raise ValueError(f"log_words shape {lengths.shape} differs from scores {values.shape}")
        if not np.isfinite(lengths[observed]).all():
            raise ValueError("log_words must be finite wherever a score is observed")
        for reviewer in range(n_reviewers):
            np.copyto(
                design[:, reviewer, :, 1 + reviewer],
                lengths[:, reviewer],
                where=observed[:, reviewer],
            )
    return SessionTables(observed).project(design)


def effects_from_residuals(
    residuals: ArrayLike, observed: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    r"""Per-session cell effects, their linearisation and the slopes from the residuals.

    ``residuals`` is (sessions, reviewers, models, k) from :func:`two_way_residuals` and
    ``observed`` the (sessions, reviewers, models) bool pattern they were computed on. With
    k = 1 (no length covariates): ``(effects, effects, None)`` with ``effects`` the residual
    over its leverage complement :math:`M_{cc}` (NaN where unobserved or not identified).
    With k = 1 + reviewers, :math:`\hat g = (\sum_s M_{O_s})^{+} \sum_s u_s`,
    :math:`Z_s = u_s - M_{O_s}\hat g`, :math:`A = \sum_s Z_s^\top Z_s` and
    :math:`\hat\beta = A_{XX}^{+} A_{Xy}`; effects of the adjusted scores
    :math:`u_s (1, -\hat\beta)^\top / M_{cc}`, and the linearisation subtracts each
    session's share of the slopes' error through
    :math:`\mathrm{IF}_s = S\,A_{XX}^{+} [Z_s^\top Z_s (1, -\hat\beta)^\top]_X` (Stefanski &
    Boos 2002), as
    :func:`~llm_council.stats.bias_effects.favouritism.length_controlled_cell_effects`
    does, without projecting each covariate again.
    """
    stacked = np.asarray(residuals, dtype=float)
    pattern = np.asarray(observed, dtype=bool)
    n_sessions, n_reviewers, n_models, n_columns = stacked.shape
    if pattern.shape != stacked.shape[:3]:
        raise ValueError(f"observed shape {pattern.shape} differs from {stacked.shape[:3]}")
    if n_columns not in (1, 1 + n_reviewers):
        raise ValueError(f"residuals hold {n_columns} columns: expected 1 or {1 + n_reviewers}")
    n_cells = n_reviewers * n_models
    flat = stacked.reshape(n_sessions, n_cells, n_columns)
    tables = SessionTables(pattern)
    leverage = tables.leverage().reshape(n_sessions, n_cells)
    valid = pattern.reshape(n_sessions, n_cells) & (leverage > _LEVERAGE_FLOOR)
    inverse_leverage = np.full(leverage.shape, np.nan)
    np.divide(1.0, leverage, out=inverse_leverage, where=valid)
    shape = (n_sessions, n_reviewers, n_models)
    if n_columns == 1:
        effects = (flat[..., 0] * inverse_leverage).reshape(shape)
        return effects, effects, None
    shared = np.linalg.pinv(tables.maker_sum(), rcond=1e-10, hermitian=True) @ flat.sum(axis=0)
    cross = np.empty((n_sessions, n_columns, n_columns))  # each session's Z_s' Z_s
    per_chunk = max(1, _CHUNK_DOUBLES // (n_cells * n_columns))
    for first in range(0, n_sessions, per_chunk):
        chunk = slice(first, min(first + per_chunk, n_sessions))
        z = np.array(stacked[chunk])  # the three-way residuals u_s - M_s g, a chunk at a time
        SessionTables(pattern[chunk]).subtract_projected(z, shared)
        z_flat = z.reshape(-1, n_cells, n_columns)
        np.matmul(z_flat.transpose(0, 2, 1), z_flat, out=cross[chunk])
    products = cross.sum(axis=0)
    inverse = np.linalg.pinv(products[1:, 1:], rcond=1e-10)
    slopes = inverse @ products[1:, 0]
    direction = np.concatenate([[1.0], -slopes])
    per_session = cross[:, 1:, :] @ direction  # [Z_s' Z_s (1, -beta)]_X, (sessions, R)
    influence = n_sessions * per_session @ inverse.T  # (sessions, R)
    effects = (flat @ direction) * inverse_leverage
    # each covariate's mean effect on each cell, over the sessions where the cell is
    # identified (the delta method's derivative of the cell means in the slopes)
    weights = np.where(valid, inverse_leverage, 0.0)
    sensitivity = np.matmul(flat[..., 1:].transpose(1, 2, 0), weights.T[..., None])[..., 0]
    sensitivity /= np.maximum(valid.sum(axis=0), 1)[:, None]
    slope_error = influence @ sensitivity.T  # (sessions, cells)
    slope_error[~np.isfinite(effects)] = np.nan
    cell_finite = np.isfinite(slope_error)
    cell_mean = np.where(cell_finite, slope_error, 0.0).sum(axis=0) / np.maximum(
        cell_finite.sum(axis=0), 1
    )
    slope_error -= cell_mean[None]
    return effects.reshape(shape), (effects - slope_error).reshape(shape), slopes


def matrix_from_session_effects(
    per_session: ArrayLike,
    observed: ArrayLike,
    significance_level: float = 0.05,
    *,
    length_controlled: bool = False,
) -> FavouritismMatrix:
    """:func:`~llm_council.stats.bias_effects.favouritism.favouritism_matrix` from per-session
    cell effects (or their linearisation): t intervals over sessions, Holm, spill-over on the
    most common pattern of ``observed`` (the same steps, on effects computed elsewhere)."""
    effects_table = np.asarray(per_session, dtype=float)
    _, n_reviewers, n_models = effects_table.shape
    effects = [
        [cluster_mean_interval(effects_table[:, r, m]) for m in range(n_models)]
        for r in range(n_reviewers)
    ]
    raw_p = np.array([[cell.p_value for cell in row] for row in effects], dtype=float)
    holm_p = holm_adjusted(raw_p)
    flagged = np.where(np.isfinite(holm_p), holm_p < significance_level, False).astype(bool)
    pattern = np.asarray(observed, dtype=bool)
    grouped = row_patterns(pattern.reshape(pattern.shape[0], -1))
    modal = grouped.patterns[int(np.argmax(grouped.counts))].reshape(n_reviewers, n_models)

    def grid(name: str) -> np.ndarray:
        return np.array([[getattr(cell, name) for cell in row] for row in effects], dtype=float)

    spillover = explain_spillover(
        grid("estimate"), grid("ci_low"), grid("ci_high"), flagged, spillover_weights(modal)
    )
    return FavouritismMatrix(
        effects, holm_p, flagged, significance_level, spillover, length_controlled
    )
