"""Least squares with absorbed fixed effects and session-clustered (CR1) standard errors.

The joint bias model regresses each score on reviewer, position, self-review and length
terms with one fixed effect per answer (session, model). The answer effects are absorbed
by demeaning every column within its answer (Frisch-Waugh-Lovell), so a million records
with 200,000 answers need no 200,000-column design. Answers are nested in sessions, and
the errors of one session are correlated, so the covariance is the cluster sandwich.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from llm_council.stats.design.design_products import (
    absorbed_cross_products,
    gram,
    grouped_cross_product,
)
from llm_council.stats.design.identifiability import RELATIVE_TOLERANCE, estimable, gram_null_space
from llm_council.stats.numerics.distribution_functions import f_sf, t_ppf


def demean_within_groups(values: ArrayLike, group_index: ArrayLike) -> np.ndarray:
    """Subtract each group's mean from its rows (the within transformation).

    .. math:: \\tilde x_{i} = x_i - \\frac{1}{n_g}\\sum_{j \\in g(i)} x_j

    Frisch & Waugh (1933), Econometrica 1(4); Lovell (1963), JASA 58. ``group_index`` holds
    integer ids ``0..G-1``; ``values`` is a vector or an ``(n, k)`` matrix.

    Parameters
    ----------
    values : array_like, shape (n,) or (n, k)
        Rows to demean.
    group_index : array_like of int, shape (n,)
        Each row's group, ``0..G-1``.

    Returns
    -------
    ndarray, same shape as ``values``
        The values minus their group means.
    """
    x = np.asarray(values, dtype=float)
    groups = np.asarray(group_index, dtype=np.int64)
    group_sums = group_sum_matrix(groups) @ x
    counts = np.bincount(groups, minlength=group_sums.shape[0]).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = group_sums / (counts if x.ndim == 1 else counts[:, None])
    return x - means[groups]


def group_sum_matrix(
    group_index: np.ndarray, weights: np.ndarray | None = None
) -> sparse.csr_matrix:
    """The sparse ``(G, n)`` matrix whose product with a column sums it within groups.

    One sparse pass over all columns at once, instead of one ``bincount`` per column. With
    ``weights`` each row is multiplied first (``D^T diag(w) X``) without forming ``w * X``:
    a fresh ``(n, k)`` temporary costs more than the product itself.
    """
    n = group_index.size
    n_groups = int(group_index.max()) + 1 if n else 0
    values = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    return sparse.csr_matrix((values, (group_index, np.arange(n))), shape=(n_groups, n))


@dataclass(frozen=True)
class ClusteredOlsFit:
    """Coefficients, CR1 covariance and the sizes the degrees of freedom came from."""

    coefficients: np.ndarray
    covariance: np.ndarray
    residuals: np.ndarray
    n_observations: int
    n_clusters: int
    #: orthonormal basis of the null space of the (demeaned) X'X; empty when full rank
    null_space: np.ndarray

    def estimable(self, contrasts: ArrayLike) -> np.ndarray:
        """Per row ``c`` of ``contrasts``: is ``c'beta`` identified by the design?"""
        return estimable(contrasts, self.null_space)

    @property
    def standard_errors(self) -> np.ndarray:
        # a rank-deficient design can leave tiny negative round-off on the diagonal
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    def confidence_intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Intervals from a t distribution on ``C - 1`` degrees of freedom (Cameron & Miller)."""
        t_crit = float(t_ppf(0.5 + confidence / 2, max(self.n_clusters - 1, 1)))
        half = t_crit * self.standard_errors
        return np.column_stack([self.coefficients - half, self.coefficients + half])


def ols_cluster_robust(
    design: ArrayLike, response: ArrayLike, cluster_index: ArrayLike
) -> ClusteredOlsFit:
    """OLS with the CR1 cluster-robust sandwich covariance.

    .. math::

        \\hat\\beta = (X^\\top X)^{-1} X^\\top y,\\qquad
        \\widehat V = \\frac{C}{C-1}\\frac{N-1}{N-K}(X^\\top X)^{-1}
        \\Big(\\sum_c X_c^\\top \\hat e_c \\hat e_c^\\top X_c\\Big)(X^\\top X)^{-1}

    Liang & Zeger (1986), Biometrika 73(1); small-sample factor CR1 as in Stata and Cameron &
    Miller (2015), J. Human Resources 50(2), eq. (12). When fixed effects were absorbed and
    they are nested within clusters, ``K`` counts only the columns of ``design`` (Cameron &
    Miller, section III.B), which is what is done here.
    """
    x = np.asarray(design, dtype=float)
    y = np.asarray(response, dtype=float)
    clusters = np.asarray(cluster_index, dtype=np.int64)
    n, k = x.shape
    # the same numerical rank as the identifiability check: round-off is not information
    xtx_inverse = np.linalg.pinv(x.T @ x, rcond=RELATIVE_TOLERANCE, hermitian=True)
    coefficients = xtx_inverse @ (x.T @ y)
    residuals = y - x @ coefficients
    n_clusters = int(clusters.max()) + 1 if clusters.size else 0
    scores = group_sum_matrix(clusters, residuals) @ x
    present = np.bincount(clusters, minlength=n_clusters) > 0
    c = int(present.sum())
    meat = scores.T @ scores
    factor = (c / max(c - 1, 1)) * ((n - 1) / max(n - k, 1))
    covariance = factor * xtx_inverse @ meat @ xtx_inverse
    return ClusteredOlsFit(coefficients, covariance, residuals, n, c, gram_null_space(x.T @ x))


#: rows updated at a time where a full-length temporary would be the peak
_ROWS_PER_STEP = 1 << 20


def ols_absorbed_cluster_robust(
    design: ArrayLike | sparse.spmatrix,
    response: ArrayLike,
    group_index: ArrayLike,
    cluster_index: ArrayLike,
) -> ClusteredOlsFit:
    r""":func:`ols_cluster_robust` on the within-group demeaned data, without forming it.

    With group sums :math:`S_X = D^\top X`, :math:`S_y = D^\top y` and sizes :math:`n_g`,

    .. math::

        \tilde X^\top \tilde X = X^\top X - S_X^\top \operatorname{diag}(1/n_g) S_X,\qquad
        \tilde X^\top \tilde y = X^\top y - S_X^\top \operatorname{diag}(1/n_g) S_y

    and, because the demeaned residuals sum to zero within each group and groups are nested
    in clusters, :math:`\sum_{i \in c} \tilde x_i \hat e_i = \sum_{i \in c} x_i \hat e_i`.
    So only ``(n, k)`` products of the raw design are needed (Frisch-Waugh-Lovell; the
    sandwich as in :func:`ols_cluster_robust`), taken by :mod:`.design_products`.
    ``group_index`` must be nested in ``cluster_index``; ids need not be dense. ``design``
    may be a scipy sparse matrix (a design of dummies and interactions has a few non-zeros
    per row), which avoids a dense ``(n, k)`` array altogether.

    Parameters
    ----------
    design : array_like or scipy sparse matrix, shape (n, k)
        The regressors X, before demeaning.
    response : array_like, shape (n,)
        The response y.
    group_index : array_like of int, shape (n,)
        The absorbed fixed effect of each row (nested in its cluster).
    cluster_index : array_like of int, shape (n,)
        Each row's cluster (a session).

    Returns
    -------
    ClusteredOlsFit
        ``coefficients`` (k,), CR1 ``covariance`` (k, k), ``residuals`` (n,),
        ``n_observations``, ``n_clusters`` and the ``null_space`` (k, d) of the demeaned X'X.
    """
    x: Any = design if sparse.issparse(design) else np.asarray(design, dtype=float)
    y = np.asarray(response, dtype=float)
    groups = np.asarray(group_index, dtype=np.int64)
    clusters = np.asarray(cluster_index, dtype=np.int64)
    n, k = x.shape
    n_groups = int(groups.max()) + 1 if n else 0
    counts = np.bincount(groups, minlength=n_groups).astype(float)
    inverse_counts = np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)
    sum_y = np.bincount(groups, weights=y, minlength=n_groups)
    # S_X is (groups, k) and mostly zeros: its products are taken a block of groups at a
    # time, and S_X b below as the group sums of X b
    between, between_y = absorbed_cross_products(x, groups, inverse_counts, sum_y * inverse_counts)
    xtx = gram(x) - between
    xty = np.asarray(x.T @ y).ravel() - between_y
    xtx_inverse = np.linalg.pinv(xtx, rcond=RELATIVE_TOLERANCE, hermitian=True)
    coefficients = xtx_inverse @ xty
    fitted = np.asarray(x @ coefficients, dtype=float).ravel()  # a fresh array
    sum_fitted = np.bincount(groups, weights=fitted, minlength=n_groups)
    residuals = np.subtract(y, fitted, out=fitted)
    shift = (sum_y - sum_fitted) * inverse_counts  # each group's mean residual
    for first in range(0, n, _ROWS_PER_STEP):  # no full-length temporary (ADR 0092)
        residuals[first : first + _ROWS_PER_STEP] -= shift[groups[first : first + _ROWS_PER_STEP]]
    n_clusters = int(clusters.max()) + 1 if n else 0
    score_cross = grouped_cross_product(x, clusters, n_clusters, residuals)
    c = int((np.bincount(clusters) > 0).sum())
    factor = (c / max(c - 1, 1)) * ((n - 1) / max(n - k, 1))
    covariance = factor * xtx_inverse @ score_cross @ xtx_inverse
    return ClusteredOlsFit(coefficients, covariance, residuals, n, c, gram_null_space(xtx))


@dataclass(frozen=True)
class WaldResult:
    """A joint test that a set of linear combinations of the coefficients is zero."""

    f_statistic: float
    df_numerator: int
    df_denominator: int
    p_value: float
    #: ``V`` has rank below ``q`` (numerical rank, :data:`RELATIVE_TOLERANCE`): some
    #: combination of the tested coefficients did not vary at all between clusters. The
    #: pseudo-inverse then drops exactly that direction, however far the estimate lies
    #: along it, so ``p_value`` says nothing about it: use an exact or randomization test
    #: (:mod:`llm_council.stats.slots.slot_randomization`)
    singular: bool = False


def covariance_rank(covariance: ArrayLike) -> int:
    """Numerical rank of a symmetric PSD matrix: eigenvalues above
    :data:`RELATIVE_TOLERANCE` times the largest (0 for the zero matrix)."""
    v = np.atleast_2d(np.asarray(covariance, dtype=float))
    if v.size == 0:
        return 0
    eigenvalues = np.linalg.eigvalsh((v + v.T) / 2)
    largest = float(np.max(np.abs(eigenvalues)))
    if not np.isfinite(largest) or largest == 0.0:
        return 0
    return int(np.count_nonzero(eigenvalues > RELATIVE_TOLERANCE * largest))


def wald_test(coefficients: ArrayLike, covariance: ArrayLike, n_clusters: int) -> WaldResult:
    r"""Cluster-robust Wald test of ``beta = 0`` with the Hotelling small-sample correction.

    .. math::

        W = \hat\beta^\top \widehat V^{-1} \hat\beta,\qquad
        F = \frac{C - q}{q\,(C - 1)}\, W \sim F_{q,\,C-q}

    A cluster-robust ``V`` is an average of ``C`` cluster score outer products, so ``W``
    behaves like Hotelling's :math:`T^2` on ``C`` vectors rather than a chi-square; the plain
    ``W / q ~ F(q, C - 1)`` rejects far too often with few clusters (15% at 5% with 10
    sessions and 4 slot contrasts in our null calibration). Pustejovsky & Tipton (2018),
    J. Business & Economic Statistics 36(4), section 3 (the "T^2 approximation"); Cameron &
    Miller (2015), section VI.B. For ``q = 1`` it is the squared t test on ``C - 1`` df.

    A singular ``V`` (rank below ``q``) is reported in ``singular``, not repaired: ``W``
    is then computed with the pseudo-inverse, which ignores the directions in which the
    estimate never varied, and those are where a deterministic effect (a judge that
    always ranks slot A first) lives.

    Parameters
    ----------
    coefficients : array_like, shape (q,)
        The tested estimates.
    covariance : array_like, shape (q, q)
        Their cluster-robust covariance.
    n_clusters : int
        C, the number of clusters behind the covariance.

    Returns
    -------
    WaldResult
        F, its df (q, C - q), the p-value, and whether ``covariance`` was singular.
    """
    beta = np.atleast_1d(np.asarray(coefficients, dtype=float))
    v = np.atleast_2d(np.asarray(covariance, dtype=float))
    q = beta.size
    singular = covariance_rank(v) < q
    if n_clusters <= q:
        return WaldResult(float("nan"), q, 0, float("nan"), singular)
    wald = float(beta @ np.linalg.pinv(v) @ beta)
    f_statistic = (n_clusters - q) / (q * (n_clusters - 1)) * wald
    df_den = n_clusters - q
    return WaldResult(f_statistic, q, df_den, float(f_sf(f_statistic, q, df_den)), singular)
