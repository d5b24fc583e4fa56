"""Style mimicry (:mod:`.style_mimicry`) from per-session products that merge exactly.

The model, projection and CV3 jackknife are :mod:`.style_mimicry`'s. The two-way
projection (answer and reviewer x session effects) lies within each session, so every
session's projected columns ``[y~, Z~]`` are known from that session alone. A session
keeps the upper triangle of ``[y~, Z~]'[y~, Z~]`` (``Z~``: a slope column and a length
column per reviewer, all reviewers). The fit needs ``A = sum A_c`` and ``b = sum b_c``,
and the jackknife needs each ``(A_c, b_c)``:
:math:`\\hat\\beta_{(-c)} = (A - A_c)^{+}(b - b_c)` is not linear in the sums. So the
per-session rows are kept, ``(2R + 1)(2R + 2) / 2`` doubles a session. Also kept, as
sums: each column's absolute sum (the degenerate-column scale) and the sessions each
reviewer appears in. Per reviewer, the count, mean and M2 of its own projected
similarity (merged by :func:`llm_council.stats.numerics.moments.merged_moments`).
A merged summary gives :func:`.style_mimicry.mimicry_slopes`' result up to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.bias_effects.style_mimicry import (
    _DEGENERATE,
    MimicrySlopes,
    _demean_two_way,
    _finite_columns_by_session,
    _slope_intervals,
)
from llm_council.stats.design.dense_ids import dense_codes
from llm_council.stats.design.left_out_solve import left_out_solutions
from llm_council.stats.design.nested_two_way import nested_two_way_residuals
from llm_council.stats.inference.pooling import IntervalEstimate

#: doubles of per-session blocks held at once by the jackknife
_BLOCK_DOUBLES = 2_000_000


@dataclass(frozen=True)
class MimicrySessionProducts:
    """The mergeable reduction of the mimicry fit (module doc); sessions in code order."""

    session: np.ndarray  # (S,) the session codes given, sorted
    products: np.ndarray  # (S, u): upper triangle of each session's [y~, Z~]'[y~, Z~]
    abs_sums: np.ndarray  # (2R,): per reviewer sum |similarity|, then sum |ln words|
    reviewer_sessions: np.ndarray  # (R,): sessions with a row of the reviewer
    own_moments: np.ndarray  # (R, 3): n, mean, M2 of its own projected similarity
    n_rows: int  # rows with a finite score, similarity and length


def n_product_columns(n_reviewers: int) -> int:
    """Columns of ``[y~, Z~]``: the score, R slopes, R lengths."""
    return 2 * n_reviewers + 1


def _design(y: np.ndarray, x: np.ndarray, w: np.ndarray, r: np.ndarray, n: int) -> np.ndarray:
    """Column 0 the score, then each reviewer's similarity, then each reviewer's ln words."""
    rows = np.arange(r.size)
    matrix = np.zeros((r.size, n_product_columns(n)))
    matrix[:, 0] = y
    matrix[rows, 1 + r] = x
    matrix[rows, 1 + n + r] = w
    return matrix


def _own_moments(z_tilde: np.ndarray, r: np.ndarray, n_reviewers: int) -> np.ndarray:
    """Per reviewer: count, mean and M2 of its own slope column over its rows."""
    own = z_tilde[np.arange(r.size), r]
    counts = np.bincount(r, minlength=n_reviewers).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.bincount(r, weights=own, minlength=n_reviewers) / counts
    centred = own - np.nan_to_num(means)[r]
    m2 = np.bincount(r, weights=centred * centred, minlength=n_reviewers)
    return np.column_stack([counts, means, m2])


def mimicry_session_products(
    inputs: dict[str, ArrayLike], n_reviewers: int
) -> MimicrySessionProducts:
    """The per-session reduction of :func:`.style_mimicry.mimicry_slopes_of_columns`'
    ``inputs`` (the same six columns, emptied)."""
    y, x, w, r, a, c = _finite_columns_by_session(inputs, n_reviewers)
    width = n_product_columns(n_reviewers)
    upper = np.triu_indices(width)
    abs_sums = np.concatenate(
        [
            np.bincount(r, weights=np.abs(x), minlength=n_reviewers),
            np.bincount(r, weights=np.abs(w), minlength=n_reviewers),
        ]
    )
    if y.size == 0:
        return MimicrySessionProducts(
            np.zeros(0, dtype=np.int64), np.zeros((0, upper[0].size)), abs_sums,
            np.zeros(n_reviewers), np.tile([0.0, np.nan, 0.0], (n_reviewers, 1)), 0,
        )  # fmt: skip
    sessions, cluster = dense_codes(c)
    _, answer = dense_codes(a)
    n_clusters = int(cluster.max()) + 1
    stacked = nested_two_way_residuals(_design(y, x, w, r, n_reviewers), cluster, r, answer)
    if stacked is None:
        _, review = dense_codes(r * n_clusters + cluster)
        stacked = _demean_two_way(
            _design(y, x, w, r, n_reviewers),
            answer,
            int(answer.max()) + 1,
            review,
            int(review.max()) + 1,
        )
    starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]])
    bounds = np.r_[starts, cluster.size]
    sizes = np.diff(bounds)
    products = np.empty((n_clusters, upper[0].size))
    for size in np.unique(sizes):
        of_size = np.flatnonzero(sizes == size)
        block = stacked[bounds[of_size][:, None] + np.arange(size)]
        products[of_size] = np.matmul(block.transpose(0, 2, 1), block)[:, upper[0], upper[1]]
    seen = np.zeros((n_reviewers, n_clusters), dtype=bool)
    seen[r, cluster] = True
    return MimicrySessionProducts(
        np.asarray(sessions, dtype=np.int64),
        products,
        abs_sums,
        seen.sum(axis=1).astype(float),
        _own_moments(stacked[:, 1 : 1 + n_reviewers], r, n_reviewers),
        int(y.size),
    )


def _symmetric(upper_rows: np.ndarray, width: int) -> np.ndarray:
    """``(..., width, width)`` symmetric matrices from their upper-triangle rows."""
    rows, columns = np.triu_indices(width)
    full = np.zeros((*upper_rows.shape[:-1], width, width))
    full[..., rows, columns] = upper_rows
    full[..., columns, rows] = upper_rows
    return full


def mimicry_slopes_from_products(
    products: np.ndarray,
    abs_sums: np.ndarray,
    reviewer_sessions: np.ndarray,
    own_moments: np.ndarray,
    n_rows: int,
    confidence: float = 0.95,
) -> MimicrySlopes:
    """:func:`.style_mimicry.mimicry_slopes` from merged :class:`MimicrySessionProducts`
    fields (``products`` of every session, any order): the same slopes, CV3 covariance and
    within-answer sds, up to rounding."""
    n_reviewers = reviewer_sessions.size
    width = n_product_columns(n_reviewers)
    n_clusters = products.shape[0]
    nan = float("nan")
    counts, m2 = own_moments[:, 0], own_moments[:, 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        within_sd = np.where(counts >= 2, np.sqrt(m2 / (counts - 1)), nan)
    # mimicry_slopes' layout: the score, the slopes, the lengths of reviewers 1.. (0 the
    # reference, absorbed with the answer effects otherwise)
    kept = np.r_[0, 1 : 1 + n_reviewers, 2 + n_reviewers : width]
    total = _symmetric(products.sum(axis=0), width)[np.ix_(kept, kept)]
    scale = np.maximum(np.r_[abs_sums[:n_reviewers], abs_sums[n_reviewers + 1 :]], 1.0)
    empty = [IntervalEstimate(nan, nan, nan, nan, nan, 0) for _ in range(n_reviewers)]
    usable = np.diag(total)[1:] > _DEGENERATE * scale
    columns = np.flatnonzero(usable)
    if columns.size == 0 or n_clusters < 2:
        return MimicrySlopes(empty, within_sd, n_rows, n_clusters)
    gram = total[1:, 1:][np.ix_(columns, columns)]
    moment = total[1:, 0][columns]
    gram_inverse = np.linalg.pinv(gram)
    coefficients = gram_inverse @ moment
    projector = gram_inverse @ gram
    identified = np.all(
        np.abs(projector - np.eye(columns.size)) < 1e-8 * max(1.0, float(np.abs(gram).max())),
        axis=0,
    )
    chosen = kept[1 + columns]  # the columns of the per-session products
    outer = np.zeros((columns.size, columns.size))
    step = max(1, _BLOCK_DOUBLES // (width * width))
    for first in range(0, n_clusters, step):
        blocks = _symmetric(products[first : first + step], width)
        cross = blocks[:, chosen][:, :, chosen]
        deleted = left_out_solutions(gram, cross, moment[None] - blocks[:, chosen, 0])
        deviation = deleted - coefficients[None, :]
        outer += deviation.T @ deviation
    covariance = (n_clusters - 1) / n_clusters * outer
    slopes = _slope_intervals(
        coefficients,
        covariance,
        identified,
        columns,
        reviewer_sessions.astype(np.int64),
        n_clusters,
        confidence,
    )
    return MimicrySlopes(slopes, within_sd, n_rows, n_clusters)
