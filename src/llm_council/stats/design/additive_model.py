"""Two-way additive model of a reviewer x candidate score table with missing cells.

Every per-session test of the bias audit compares a reviewer with the *others on the
same answers*. The additive model says that exactly: a score is a grand mean plus the
reviewer's leniency plus the candidate's quality plus noise,

.. math:: y_{rc} = \\mu + \\alpha_r + \\beta_c + \\varepsilon_{rc},
          \\quad \\varepsilon_{rc} \\sim N(0, \\sigma^2) \\text{ i.i.d.},

fitted by least squares over the observed cells only (self-reviews and missing scores
are NaN). Quality then cannot pass for leniency, and leniency cannot pass for position.
Reference: Scheffe, *The Analysis of Variance* (1959), ch. 4 (two-way layout); Searle,
*Linear Models for Unbalanced Data* (1987), ch. 5-6 (incomplete tables, estimable
contrasts and their variances).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class AdditiveFit:
    """A least-squares fit of the two-way additive model.

    ``design`` has one row per observed cell (columns: intercept, reviewers 1..R-1,
    candidates 1..C-1; treatment coding, so reviewer 0 and candidate 0 are the base),
    ``coefficients`` the estimates, ``covariance_unscaled`` is :math:`(X^T X)^{-1}`, and
    ``residual_variance`` is :math:`s^2 = RSS / (n - p)`.
    """

    n_reviewers: int
    n_candidates: int
    rows: NDArray[np.intp]
    columns: NDArray[np.intp]
    observed: FloatArray
    design: FloatArray
    coefficients: FloatArray
    covariance_unscaled: FloatArray
    residuals: FloatArray
    residual_df: int
    residual_variance: float

    def reviewer_column(self, reviewer_index: int) -> int | None:
        return None if reviewer_index == 0 else reviewer_index

    def candidate_column(self, candidate_index: int) -> int | None:
        return None if candidate_index == 0 else self.n_reviewers - 1 + candidate_index

    def cell_vector(self, reviewer_index: int, candidate_index: int) -> FloatArray:
        """The design row of cell (r, c), observed or not: its prediction is ``row @ b``."""
        row = np.zeros(self.design.shape[1])
        row[0] = 1.0
        reviewer_col = self.reviewer_column(reviewer_index)
        if reviewer_col is not None:
            row[reviewer_col] = 1.0
        candidate_col = self.candidate_column(candidate_index)
        if candidate_col is not None:
            row[candidate_col] = 1.0
        return row

    def reviewer_vs_others_contrast(self, reviewer_index: int) -> FloatArray:
        """Contrast vector of :math:`\\alpha_r - \\frac{1}{R-1}\\sum_{r' \\ne r} \\alpha_{r'}`."""
        contrast = np.zeros(self.design.shape[1])
        weight_others = -1.0 / (self.n_reviewers - 1)
        for other in range(self.n_reviewers):
            column = self.reviewer_column(other)
            if column is None:
                continue
            contrast[column] = 1.0 if other == reviewer_index else weight_others
        return contrast


def design_rank(design: ArrayLike, singular_values: ArrayLike | None = None) -> int:
    """Numerical rank of a design matrix: singular values above ``s_max * max(n, p) * eps``.

    The tolerance is :func:`numpy.linalg.matrix_rank`'s default (Press et al., *Numerical
    Recipes*, 3rd ed., sec. 2.6): a 0/1 design whose columns are confounded has a
    singular value at rounding level, far below it, while an identified one has its
    smallest singular value of order 1.
    """
    matrix = np.asarray(design, dtype=float)
    if matrix.size == 0:
        return 0
    values = (
        np.linalg.svd(matrix, compute_uv=False)
        if singular_values is None
        else np.asarray(singular_values, dtype=float)
    )
    tolerance = float(values.max()) * max(matrix.shape) * np.finfo(float).eps
    return int(np.count_nonzero(values > tolerance))


def fit_additive_two_way(scores: ArrayLike) -> AdditiveFit | None:
    """Fit :math:`y_{rc} = \\mu + \\alpha_r + \\beta_c + \\varepsilon` to the non-NaN cells.

    ``scores`` is an R x C array (rows reviewers, columns candidates) with NaN where no
    usable score exists. Returns ``None`` when the effects are not estimable (the
    observed cells do not connect all reviewers and candidates, so the design is rank
    deficient) or when no residual degrees of freedom are left.
    """
    table = np.asarray(scores, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"scores must be a 2-D reviewer x candidate table, got {table.shape}")
    n_reviewers, n_candidates = table.shape
    if n_reviewers < 2 or n_candidates < 2:
        return None
    rows, columns = np.nonzero(~np.isnan(table))
    observed = table[rows, columns]
    n_parameters = n_reviewers + n_candidates - 1
    design = np.zeros((observed.size, n_parameters))
    design[:, 0] = 1.0
    reviewer_rows = rows > 0
    design[np.flatnonzero(reviewer_rows), rows[reviewer_rows]] = 1.0
    candidate_rows = columns > 0
    design[np.flatnonzero(candidate_rows), n_reviewers - 1 + columns[candidate_rows]] = 1.0
    if observed.size <= n_parameters:
        return None
    # The SVD of X itself (not of X^T X, which squares the condition number) gives the
    # rank check and the solution; numpy.linalg.matrix_rank's tolerance.
    _, singular_values, right_vectors_t = np.linalg.svd(design, full_matrices=False)
    if design_rank(design, singular_values) < n_parameters:
        return None  # rank deficient: the observed cells do not connect everything
    right_vectors = right_vectors_t.T
    covariance_unscaled = (right_vectors / singular_values**2) @ right_vectors.T
    coefficients = covariance_unscaled @ (design.T @ observed)
    residuals = observed - design @ coefficients
    # Scores the model fits exactly (e.g. every reviewer gave the same scores) leave
    # residuals at rounding level; a variance from them would make any t statistic
    # astronomically large. Below 1e-9 of the scores' magnitude they are zero.
    rounding_level = 1e-9 * max(1.0, float(np.abs(observed).max()))
    if float(np.abs(residuals).max()) <= rounding_level:
        residuals = np.zeros_like(residuals)
    residual_df = int(observed.size - n_parameters)
    residual_variance = float(residuals @ residuals) / residual_df
    return AdditiveFit(
        n_reviewers=n_reviewers,
        n_candidates=n_candidates,
        rows=rows,
        columns=columns,
        observed=observed,
        design=design,
        coefficients=coefficients,
        covariance_unscaled=covariance_unscaled,
        residuals=residuals,
        residual_df=residual_df,
        residual_variance=residual_variance,
    )
