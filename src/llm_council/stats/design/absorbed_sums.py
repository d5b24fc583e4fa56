"""Absorbed least squares with a CR1 covariance from per-cluster sums that merge exactly.

:func:`~llm_council.stats.design.joint_model.ols_absorbed_cluster_robust` needs every row
at once. Here the rows are reduced, one cluster (session) at a time, to sums that add
over clusters, so a fit over sessions read at different times is the sum of their sums.
With the within-group (answer) demeaned rows :math:`\\tilde X_g, \\tilde y_g` of cluster
``g``, :math:`B_g = \\tilde X_g^\\top \\tilde X_g` and :math:`a_g = \\tilde X_g^\\top \\tilde y_g`:

.. math::

    \\hat\\beta = \\Big(\\sum_g B_g\\Big)^{+} \\sum_g a_g,\\qquad
    M = \\sum_g (a_g - B_g\\hat\\beta)(a_g - B_g\\hat\\beta)^\\top
      = \\sum_g a_g a_g^\\top - P^\\top U - U^\\top P + P^\\top Q P

with :math:`U = \\sum_g \\operatorname{vech}(B_g)\\, a_g^\\top`,
:math:`Q = \\sum_g \\operatorname{vech}(B_g) \\operatorname{vech}(B_g)^\\top` and ``P`` the
``(u, k)`` matrix with :math:`P^\\top \\operatorname{vech}(B) = B\\hat\\beta` (``vech``:
the ``u = k(k+1)/2`` entries on and above the diagonal). The cluster scores
:math:`\\tilde X_g^\\top \\hat e_g = a_g - B_g\\hat\\beta` hold because demeaned residuals
sum to zero within each group and groups are nested in clusters (Cameron & Miller 2015,
J. Human Resources 50(2), section III.B; Liang & Zeger 1986). The residual sum of squares
is :math:`\\sum \\tilde y^2 - 2\\hat\\beta^\\top a + \\hat\\beta^\\top B \\hat\\beta`.
The sums are exact up to rounding and their size does not grow with the number of
clusters: ``O(k^4 / 4)`` numbers (``Q``), about 3.5 MB for ``k = 36``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from scipy.linalg import blas

from llm_council.stats.design.identifiability import RELATIVE_TOLERANCE, gram_null_space
from llm_council.stats.design.joint_model import ClusteredOlsFit, group_sum_matrix

#: rows densified at a time (a chunk always holds whole clusters)
_ROWS_PER_CHUNK = 1 << 15


@dataclass(frozen=True)
class AbsorbedClusterSums:
    """The additive sums of an absorbed, cluster-robust least-squares fit (module doc).

    ``vech`` order is ``numpy.triu_indices(k)``. Two sums over disjoint clusters add
    field by field (:func:`add_absorbed_sums`).
    """

    n_observations: int
    n_groups: int
    n_clusters: int
    gram: np.ndarray  # (k, k): sum of B_g
    cross: np.ndarray  # (k,): sum of a_g
    response_squares: float  # sum of the demeaned response squared
    score_outer: np.ndarray  # (k, k): sum of a_g a_g'
    gram_score: np.ndarray  # (u, k): U
    gram_outer: np.ndarray  # (u, u): Q

    @property
    def n_columns(self) -> int:
        return int(self.gram.shape[0])


def empty_absorbed_sums(n_columns: int) -> AbsorbedClusterSums:
    """The sums of no rows over ``n_columns`` regressors."""
    k = n_columns
    u = k * (k + 1) // 2
    return AbsorbedClusterSums(
        0, 0, 0, np.zeros((k, k)), np.zeros(k), 0.0, np.zeros((k, k)), np.zeros((u, k)),
        np.zeros((u, u)),
    )  # fmt: skip


def add_absorbed_sums(
    first: AbsorbedClusterSums, second: AbsorbedClusterSums
) -> AbsorbedClusterSums:
    """The sums of the union of two disjoint sets of clusters (same columns)."""
    if first.n_columns != second.n_columns:
        raise ValueError(f"sums over {first.n_columns} and {second.n_columns} columns")
    values: dict[str, Any] = {
        field.name: getattr(first, field.name) + getattr(second, field.name)
        for field in fields(AbsorbedClusterSums)
    }
    return AbsorbedClusterSums(**values)


def _pair_index(n_columns: int) -> np.ndarray:
    """``(k, k)``: the vech position of entry (i, j) (symmetric)."""
    rows, columns = np.triu_indices(n_columns)
    index = np.zeros((n_columns, n_columns), dtype=np.int64)
    index[rows, columns] = np.arange(rows.size)
    index[columns, rows] = np.arange(rows.size)
    return index


def embed_absorbed_sums(
    sums: AbsorbedClusterSums, column_of: ArrayLike, n_columns: int
) -> AbsorbedClusterSums:
    """The same sums over a wider design: old column ``j`` becomes ``column_of[j]`` (strictly
    increasing), the new columns are zero in every row (exact: entries are only moved)."""
    to = np.asarray(column_of, dtype=np.int64)
    k = sums.n_columns
    if to.shape != (k,) or (k and (np.any(np.diff(to) <= 0) or to[-1] >= n_columns)):
        raise ValueError(f"column map {to.tolist()} does not embed {k} columns in {n_columns}")
    wide = empty_absorbed_sums(n_columns)
    old_rows, old_columns = np.triu_indices(k)
    pairs = _pair_index(n_columns)[to[old_rows], to[old_columns]]
    gram, score_outer = wide.gram.copy(), wide.score_outer.copy()
    gram[np.ix_(to, to)] = sums.gram
    score_outer[np.ix_(to, to)] = sums.score_outer
    cross = wide.cross.copy()
    cross[to] = sums.cross
    gram_score, gram_outer = wide.gram_score.copy(), wide.gram_outer.copy()
    gram_score[np.ix_(pairs, to)] = sums.gram_score
    gram_outer[np.ix_(pairs, pairs)] = sums.gram_outer
    return replace(
        sums, gram=gram, cross=cross, score_outer=score_outer, gram_score=gram_score,
        gram_outer=gram_outer,
    )  # fmt: skip


def transform_absorbed_sums(sums: AbsorbedClusterSums, transform: ArrayLike) -> AbsorbedClusterSums:
    """The sums of the design ``X T`` from those of ``X`` (``T``: ``(k, k')``).

    :math:`B' = T^\\top B T` is linear in ``vech(B)``: ``vech(B') = L vech(B)`` with
    :math:`L_{(i,j),(a,b)} = T_{ai}T_{bj} + [a \\ne b]\\, T_{bi}T_{aj}`; so
    :math:`U' = L U T`, :math:`Q' = L Q L^\\top` (exact up to rounding).
    """
    t = np.asarray(transform, dtype=float)
    k, k_new = t.shape
    if k != sums.n_columns:
        raise ValueError(f"a transform of {k} rows for sums over {sums.n_columns} columns")
    rows, columns = np.triu_indices(k)
    new_rows, new_columns = np.triu_indices(k_new)
    off_diagonal = (rows != columns).astype(float)
    lift = t[rows][:, new_rows].T * t[columns][:, new_columns].T
    lift += off_diagonal * (t[columns][:, new_rows].T * t[rows][:, new_columns].T)
    return replace(
        sums,
        gram=t.T @ sums.gram @ t,
        cross=t.T @ sums.cross,
        score_outer=t.T @ sums.score_outer @ t,
        gram_score=lift @ sums.gram_score @ t,
        gram_outer=lift @ sums.gram_outer @ lift.T,
    )


def _chunks(cluster_starts: np.ndarray, n_rows: int) -> list[tuple[int, int]]:
    """Cluster index ranges ``[first, last)`` whose rows are about :data:`_ROWS_PER_CHUNK`."""
    bounds = np.r_[cluster_starts, n_rows]
    chunks, first = [], 0
    while first < cluster_starts.size:
        last = int(np.searchsorted(bounds, bounds[first] + _ROWS_PER_CHUNK, side="right")) - 1
        last = max(last, first + 1)
        chunks.append((first, min(last, cluster_starts.size)))
        first = chunks[-1][1]
    return chunks


def _cluster_products(
    x_demeaned: np.ndarray, y_demeaned: np.ndarray, bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's ``B_g`` and ``a_g`` (rows ``bounds[g]:bounds[g + 1]``), one batched
    product per cluster size (a council's sessions are mostly of a few sizes)."""
    sizes = np.diff(bounds)
    n_clusters, k = sizes.size, x_demeaned.shape[1]
    grams, scores = np.empty((n_clusters, k, k)), np.empty((n_clusters, k))
    for size in np.unique(sizes):
        of_size = np.flatnonzero(sizes == size)
        rows = bounds[of_size][:, None] + np.arange(size)
        block = x_demeaned[rows]  # (clusters, size, k)
        grams[of_size] = np.matmul(block.transpose(0, 2, 1), block)
        scores[of_size] = np.matmul(block.transpose(0, 2, 1), y_demeaned[rows][:, :, None])[:, :, 0]
    return grams, scores


def absorbed_cluster_sums(
    design: ArrayLike | sparse.spmatrix,
    response: ArrayLike,
    group_index: ArrayLike,
    cluster_index: ArrayLike,
) -> AbsorbedClusterSums:
    """The additive sums (module doc) of rows sorted by cluster, groups nested in clusters.

    Parameters
    ----------
    design : array_like or scipy sparse matrix, shape (n, k)
        The regressors X, before demeaning.
    response : array_like, shape (n,)
        The response y.
    group_index : array_like of int, shape (n,)
        The absorbed fixed effect of each row (nested in its cluster).
    cluster_index : array_like of int, shape (n,)
        Each row's cluster, non-decreasing.

    Returns
    -------
    AbsorbedClusterSums
    """
    x: Any = sparse.csr_matrix(design) if sparse.issparse(design) else np.asarray(design, float)
    y = np.asarray(response, dtype=float)
    groups = np.asarray(group_index, dtype=np.int64)
    clusters = np.asarray(cluster_index, dtype=np.int64)
    n, k = x.shape
    if np.any(np.diff(clusters) < 0):
        raise ValueError("absorbed_cluster_sums: rows must be sorted by cluster")
    sums = empty_absorbed_sums(k)
    if n == 0:
        return sums
    starts = np.flatnonzero(np.r_[True, clusters[1:] != clusters[:-1]])
    rows, columns = np.triu_indices(k)
    total = {f.name: getattr(sums, f.name) for f in fields(AbsorbedClusterSums)}
    n_groups = 0
    for first, last in _chunks(starts, n):
        row_start = int(starts[first])
        row_stop = int(starts[last]) if last < starts.size else n
        chunk = x[row_start:row_stop]
        chunk = chunk.toarray() if sparse.issparse(chunk) else chunk
        _, local = np.unique(groups[row_start:row_stop], return_inverse=True)
        local = local.ravel()
        in_cluster = clusters[row_start:row_stop]
        cluster_of_group = np.empty(int(local.max()) + 1, dtype=np.int64)
        cluster_of_group[local] = in_cluster
        if np.any(cluster_of_group[local] != in_cluster):
            raise ValueError("absorbed_cluster_sums: a group spans two clusters")
        n_groups += int(local.max()) + 1
        counts = np.bincount(local).astype(float)
        grouping = group_sum_matrix(local)
        x_demeaned = chunk - (np.asarray(grouping @ chunk) / counts[:, None])[local]
        y_chunk = y[row_start:row_stop]
        y_demeaned = y_chunk - (np.bincount(local, weights=y_chunk) / counts)[local]
        total["response_squares"] += float(y_demeaned @ y_demeaned)
        bounds = np.r_[starts[first:last], row_stop] - row_start
        grams, scores = _cluster_products(x_demeaned, y_demeaned, bounds)
        halves = grams[:, rows, columns]
        total["gram"] += grams.sum(axis=0)
        total["cross"] += scores.sum(axis=0)
        total["score_outer"] += scores.T @ scores
        total["gram_score"] += halves.T @ scores
        # Q is symmetric: its upper triangle only (BLAS syrk, half the work of a product)
        total["gram_outer"] += blas.dsyrk(1.0, halves, trans=1, lower=0)
    upper = np.triu(total["gram_outer"])
    total["gram_outer"] = upper + np.triu(upper, 1).T
    total.update(n_observations=n, n_groups=n_groups, n_clusters=int(starts.size))
    return AbsorbedClusterSums(**total)


@dataclass(frozen=True)
class SummedFit:
    """The fit from sums: ``fit.residuals`` is empty (no rows are kept); the residual sum
    of squares is ``residual_squares``."""

    fit: ClusteredOlsFit
    residual_squares: float


def ols_absorbed_cluster_robust_from_sums(sums: AbsorbedClusterSums) -> SummedFit:
    """:func:`~llm_council.stats.design.joint_model.ols_absorbed_cluster_robust` from
    :class:`AbsorbedClusterSums` (module doc): the same coefficients, CR1 covariance
    (factor :math:`\\frac{C}{C-1}\\frac{N-1}{N-K}`) and null space, up to rounding."""
    k, n, c = sums.n_columns, sums.n_observations, sums.n_clusters
    xtx_inverse = np.linalg.pinv(sums.gram, rcond=RELATIVE_TOLERANCE, hermitian=True)
    beta = xtx_inverse @ sums.cross
    rows, columns = np.triu_indices(k)
    # P' vech(B) = B beta: the entry (i, j) of vech adds beta_j to row i and, off the
    # diagonal, beta_i to row j
    lift = np.zeros((rows.size, k))
    lift[np.arange(rows.size), rows] += beta[columns]
    off = rows != columns
    lift[np.flatnonzero(off), columns[off]] += beta[rows[off]]
    cross_term = lift.T @ sums.gram_score
    meat = sums.score_outer - cross_term - cross_term.T + lift.T @ sums.gram_outer @ lift
    meat = (meat + meat.T) / 2
    factor = (c / max(c - 1, 1)) * ((n - 1) / max(n - k, 1))
    covariance = factor * xtx_inverse @ meat @ xtx_inverse
    residual_squares = float(
        sums.response_squares - 2 * beta @ sums.cross + beta @ sums.gram @ beta
    )
    fit = ClusteredOlsFit(beta, covariance, np.empty(0), n, c, gram_null_space(sums.gram))
    return SummedFit(fit, max(residual_squares, 0.0))
