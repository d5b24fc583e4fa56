"""The additive model's design-only algebra, computed once per pattern of observed cells.

A council of fixed size with every score present has the same reviewer x candidate
pattern of observed cells in every session, so the design matrix X, its SVD, rank check
and :math:`(X^TX)^{-1}` are the same each time; only the scores change. Computing them
per session was most of the audit's cost on 5 x 5 tables (numpy's per-call overhead,
issue 12 section 5). :func:`fit_additive_two_way_cached` fits exactly what
:func:`~llm_council.stats.design.additive_model.fit_additive_two_way` fits, with the same
operations in the same order on the same arrays (so bit for bit the same numbers), but
takes the design-only part from a bounded cache keyed by the pattern. Cached arrays are
read-only, so no caller can corrupt another session's fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.design.additive_model import AdditiveFit, design_rank

FloatArray = NDArray[np.float64]

#: distinct patterns kept (a council size, with or without missing cells, is one or a few)
PATTERN_CACHE_SIZE = 256


@dataclass(frozen=True)
class AdditiveDesign:
    """Everything of the additive model that depends on which cells are observed only."""

    n_reviewers: int
    n_candidates: int
    rows: NDArray[np.intp]
    columns: NDArray[np.intp]
    design: FloatArray
    covariance_unscaled: FloatArray
    residual_df: int


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@lru_cache(maxsize=PATTERN_CACHE_SIZE)
def _design_for_pattern(
    n_reviewers: int, n_candidates: int, observed_pattern: bytes
) -> AdditiveDesign | None:
    """The design of one pattern (``observed_pattern``: the R x C boolean mask's bytes),
    or ``None`` when the effects are not estimable or no residual df are left."""
    mask = np.frombuffer(observed_pattern, dtype=bool).reshape(n_reviewers, n_candidates)
    rows, columns = np.nonzero(mask)
    n_observed = rows.size
    n_parameters = n_reviewers + n_candidates - 1
    design = np.zeros((n_observed, n_parameters))
    design[:, 0] = 1.0
    reviewer_rows = rows > 0
    design[np.flatnonzero(reviewer_rows), rows[reviewer_rows]] = 1.0
    candidate_rows = columns > 0
    design[np.flatnonzero(candidate_rows), n_reviewers - 1 + columns[candidate_rows]] = 1.0
    if n_observed <= n_parameters:
        return None
    # the SVD of X itself, as fit_additive_two_way does (rank check and solution)
    _, singular_values, right_vectors_t = np.linalg.svd(design, full_matrices=False)
    if design_rank(design, singular_values) < n_parameters:
        return None
    right_vectors = right_vectors_t.T
    covariance_unscaled = (right_vectors / singular_values**2) @ right_vectors.T
    return AdditiveDesign(
        n_reviewers=n_reviewers,
        n_candidates=n_candidates,
        rows=_read_only(rows),
        columns=_read_only(columns),
        design=_read_only(design),
        covariance_unscaled=_read_only(covariance_unscaled),
        residual_df=int(n_observed - n_parameters),
    )


def fit_additive_two_way_cached(scores: ArrayLike) -> AdditiveFit | None:
    """:func:`~llm_council.stats.design.additive_model.fit_additive_two_way`, with the design-only
    algebra reused across sessions that observed the same cells (same result, same bits).

    Parameters
    ----------
    scores : array_like, shape (R, C)
        Reviewers x candidates, NaN where no usable score exists.

    Returns
    -------
    AdditiveFit or None
        The fit (design, coefficients, residuals, residual df and variance); None when the
        effects are not estimable or no residual degrees of freedom are left.
    """
    table = np.asarray(scores, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"scores must be a 2-D reviewer x candidate table, got {table.shape}")
    n_reviewers, n_candidates = table.shape
    if n_reviewers < 2 or n_candidates < 2:
        return None
    observed_mask = ~np.isnan(table)
    shape = _design_for_pattern(n_reviewers, n_candidates, observed_mask.tobytes())
    if shape is None:
        return None
    observed = table[shape.rows, shape.columns]
    design = shape.design
    coefficients = shape.covariance_unscaled @ (design.T @ observed)
    residuals = observed - design @ coefficients
    rounding_level = 1e-9 * max(1.0, float(np.abs(observed).max()))
    if float(np.abs(residuals).max()) <= rounding_level:
        residuals = np.zeros_like(residuals)
    residual_variance = float(residuals @ residuals) / shape.residual_df
    return AdditiveFit(
        n_reviewers=n_reviewers,
        n_candidates=n_candidates,
        rows=shape.rows,
        columns=shape.columns,
        observed=observed,
        design=design,
        coefficients=coefficients,
        covariance_unscaled=shape.covariance_unscaled,
        residuals=residuals,
        residual_df=shape.residual_df,
        residual_variance=residual_variance,
    )
