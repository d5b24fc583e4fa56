r"""Favouritism from per-session two-way residuals: a summary that merges exactly.

:func:`~llm_council.stats.bias_effects.favouritism.length_controlled_cell_effects` fits
each reviewer's ln(words) slope over every session, so a session's length-adjusted
residual changes whenever a session is added. But the two-way projection is linear: with
:math:`u_s = M_{O_s} [y_s, X^{(1)}_s, \dots, X^{(R)}_s]` (the score and each reviewer's
ln(words) covariate, projected once per session), the adjusted residual for *any* slope is
:math:`u_s (1, -\beta)^\top`, and the three-way fit needs only
:math:`\sum_s M_{O_s}`, :math:`\sum_s u_s` and each session's
:math:`Z_s^\top Z_s` with :math:`Z_s = u_s - M_{O_s} \hat g` (Frisch-Waugh-Lovell; Lovell
1963, JASA 58: 993-1010). :func:`two_way_residuals` computes :math:`u_s` for a set of
sessions (the summary of those sessions: concatenating two sets' rows is the summary of
their union); :func:`effects_from_residuals` finishes the slopes, the cell effects and
their linearisation from the rows of every session.

Each session's projection depends on its own pattern of observed cells only (its residual
maker is built on every cell of the table, one product per session), so a session's row is
the same bits whichever sessions it was summarized with.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.bias_effects.favouritism import (
    FavouritismMatrix,
    explain_spillover,
    spillover_weights,
)
from llm_council.stats.design.nested_two_way import residual_makers
from llm_council.stats.design.row_patterns import row_patterns
from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import cluster_mean_interval

#: a cell whose leverage complement is below this is not identified (as in .favouritism)
_LEVERAGE_FLOOR = 1e-9
#: doubles of the per-session residual makers materialized at once
_CHUNK_DOUBLES = 2_000_000


def _session_makers(
    observed: np.ndarray, n_rows: int, n_columns: int
) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]:
    """Per chunk of sessions: ``(sessions, makers, maker of each session, count per maker)``.

    ``observed`` is (sessions, n_rows * n_columns) bool. Each maker is built on every cell
    of the table (:func:`~llm_council.stats.design.nested_two_way.residual_makers`), so a
    pattern's maker is the same bits in any chunk and any set of sessions.
    """
    n_sessions, n_cells = observed.shape
    cells = np.arange(n_cells)
    per_chunk = max(1, _CHUNK_DOUBLES // max(1, n_cells * n_cells))
    for first in range(0, n_sessions, per_chunk):
        sessions = slice(first, min(first + per_chunk, n_sessions))
        grouped = row_patterns(observed[sessions])
        makers = residual_makers(grouped.patterns, cells // n_columns, cells % n_columns)
        yield sessions, makers, grouped.index, grouped.counts


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
    n_cells = n_reviewers * n_models
    flat = design.reshape(n_sessions, n_cells, n_columns)
    for sessions, makers, index, _ in _session_makers(
        observed.reshape(n_sessions, n_cells), n_reviewers, n_models
    ):
        # one product per session (a stack of matrix products): no session's bits depend
        # on which others share its chunk
        flat[sessions] = np.matmul(makers[index], flat[sessions])
    return design


def effects_from_residuals(
    residuals: ArrayLike, observed: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    r"""Per-session cell effects, their linearisation and the slopes from the residuals.

    ``residuals`` is (sessions, reviewers, models, k) and ``observed`` the (sessions,
    reviewers, models) bool pattern they were computed on. With k = 1 (no length
    covariates): ``(effects, effects, None)`` with ``effects`` the residual over its
    leverage complement :math:`M_{cc}` (NaN where unobserved or not identified). With
    k = 1 + reviewers, :math:`\hat g = (\sum_s M_{O_s})^{+} \sum_s u_s`,
    :math:`Z_s = u_s - M_{O_s}\hat g`, :math:`A = \sum_s Z_s^\top Z_s` and
    :math:`\hat\beta = A_{XX}^{+} A_{Xy}`; effects of the adjusted scores
    :math:`u_s (1, -\hat\beta)^\top / M_{cc}`, and the linearisation subtracts each
    session's share of the slopes' error through
    :math:`\mathrm{IF}_s = S\,A_{XX}^{+} [Z_s^\top Z_s (1, -\hat\beta)^\top]_X` (Stefanski &
    Boos 2002), exactly as
    :func:`~llm_council.stats.bias_effects.favouritism.length_controlled_cell_effects`.
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
    flat_observed = pattern.reshape(n_sessions, n_cells)
    leverage = np.zeros((n_sessions, n_cells))
    maker_sum = np.zeros((n_cells, n_cells))
    chunks = list(_session_makers(flat_observed, n_reviewers, n_models))
    diagonal = np.arange(n_cells)
    for sessions, makers, index, counts in chunks:
        leverage[sessions] = makers[:, diagonal, diagonal][index]
        maker_sum += np.einsum("p,pij->ij", counts.astype(float), makers)
    valid = flat_observed & (leverage > _LEVERAGE_FLOOR)
    with np.errstate(invalid="ignore", divide="ignore"):
        inverse_leverage = np.where(valid, 1.0 / np.where(valid, leverage, 1.0), np.nan)
    if n_columns == 1:
        effects = flat[..., 0] * inverse_leverage
        shape = (n_sessions, n_reviewers, n_models)
        return effects.reshape(shape), effects.reshape(shape), None
    shared = np.linalg.pinv(maker_sum, rcond=1e-10, hermitian=True) @ flat.sum(axis=0)
    cross = np.empty((n_sessions, n_columns, n_columns))
    for sessions, makers, index, _ in chunks:
        seen = makers @ shared  # (makers, cells, k): each pattern's view of the cell effects
        z = flat[sessions] - seen[index]
        cross[sessions] = np.matmul(z.transpose(0, 2, 1), z)
    products = cross.sum(axis=0)
    inverse = np.linalg.pinv(products[1:, 1:], rcond=1e-10)
    slopes = inverse @ products[1:, 0]
    direction = np.concatenate([[1.0], -slopes])
    influence = n_sessions * (cross[:, 1:, :] @ direction) @ inverse.T  # (sessions, R)
    effects = (flat @ direction) * inverse_leverage
    scaled = flat[..., 1:] * inverse_leverage[..., None]  # (sessions, cells, R)
    finite = np.isfinite(scaled)
    sensitivity = np.where(finite, scaled, 0.0).sum(axis=0) / np.maximum(finite.sum(axis=0), 1)
    slope_error = influence @ sensitivity.T  # (sessions, cells)
    slope_error = np.where(np.isfinite(effects), slope_error, np.nan)
    cell_finite = np.isfinite(slope_error)
    cell_mean = np.where(cell_finite, slope_error, 0.0).sum(axis=0) / np.maximum(
        cell_finite.sum(axis=0), 1
    )
    slope_error -= cell_mean[None]
    shape = (n_sessions, n_reviewers, n_models)
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
