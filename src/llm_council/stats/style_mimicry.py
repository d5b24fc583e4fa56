r"""Style mimicry: per reviewer, the score slope on similarity to its own answer, quality held fixed.

One observation per (reviewer ``r``, answer ``a`` = session x candidate) that the reviewer
scored, with ``x`` the similarity of the answer to ``r``'s own answer in that session:

.. math::

    y_{ra} = \alpha_a + \lambda_r + \nu_r \ln w_a + \beta_r x_{ra} + \varepsilon_{ra}

``alpha_a`` (answer fixed effects) holds the answer's quality fixed: the slope is
identified only by *different reviewers of the same answer* whose own answers are more
or less like it. That is what keeps "good answers resemble good answers" (style
correlated with quality) from reading as mimicry, and why a symmetric similarity is no
obstacle: ``x_{ra}`` varies across the reviewers of one answer because their own answers
differ. ``lambda_r`` is the reviewer's leniency, ``nu_r`` its preference for length
(``w_a`` the answer's words; one reviewer's ``lambda`` and ``nu`` are the reference, the
rest are relative, which answer effects make identified anyway).

Estimation: the answer effects are absorbed by demeaning every column within answer
(Frisch-Waugh-Lovell), then ordinary least squares. Intervals and tests use the
cluster-robust (CR1) sandwich with sessions as clusters,

.. math::

    \hat V = \frac{C}{C-1}\,\frac{N-1}{N-K}\; A^{-1}\Bigl(\sum_c g_c g_c^\top\Bigr) A^{-1},
    \qquad A = \tilde Z^\top \tilde Z,\quad g_c = \sum_{i \in c} \tilde z_i \hat u_i,

on ``C - 1`` degrees of freedom (Cameron & Miller 2015, "A practitioner's guide to
cluster-robust inference", *J. Human Resources* 50(2): 317-372, sections II.C and VI.A;
the absorbed answer effects are nested in the session clusters and are not counted in
``K``, as in Correia's ``reghdfe``). One session's scores share its answers and the
reviewers' moods, hence sessions, not records, as the unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

from llm_council.stats.pooling import IntervalEstimate

#: a regressor whose within-answer sum of squares is below this (relative) is dropped
_DEGENERATE = 1e-10


@dataclass(frozen=True)
class MimicrySlopes:
    """One slope per reviewer index (NaN estimate where not identified)."""

    slopes: list[IntervalEstimate]  # points per unit of similarity, by reviewer index
    within_answer_sd: np.ndarray  # sd of the similarity demeaned within answer, per reviewer
    n_observations: int
    n_clusters: int


def _demean_within(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Each column minus its mean within ``group`` (rows = observations)."""
    counts = np.bincount(group, minlength=n_groups).astype(float)
    means = np.empty((n_groups, values.shape[1]))
    for column in range(values.shape[1]):
        sums = np.bincount(group, weights=values[:, column], minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[:, column] = sums / counts
    return values - means[group]


def _design(
    similarity: np.ndarray, log_words: np.ndarray, reviewer: np.ndarray, n_reviewers: int
) -> tuple[np.ndarray, int]:
    """Columns: slope per reviewer, then leniency and length of reviewers 1.. (0 = reference)."""
    indicator = np.zeros((reviewer.size, n_reviewers))
    indicator[np.arange(reviewer.size), reviewer] = 1.0
    slopes = indicator * similarity[:, None]
    leniency = indicator[:, 1:]
    length = indicator[:, 1:] * log_words[:, None]
    return np.hstack([slopes, leniency, length]), n_reviewers


def mimicry_slopes(
    score: ArrayLike,
    similarity: ArrayLike,
    log_words: ArrayLike,
    reviewer: ArrayLike,
    answer: ArrayLike,
    session: ArrayLike,
    n_reviewers: int,
    confidence: float = 0.95,
) -> MimicrySlopes:
    """The per-reviewer slopes ``beta_r`` of the module's model, CR1 by session.

    ``reviewer`` holds indices ``0 .. n_reviewers - 1``; ``answer`` and ``session`` any
    integer ids (an answer lies in one session). Rows with a non-finite score or
    similarity are left out; leave self-reviews out before calling.
    """
    y = np.asarray(score, dtype=float)
    x = np.asarray(similarity, dtype=float)
    w = np.asarray(log_words, dtype=float)
    r = np.asarray(reviewer, dtype=np.int64)
    a = np.asarray(answer, dtype=np.int64)
    c = np.asarray(session, dtype=np.int64)
    keep = np.isfinite(y) & np.isfinite(x) & np.isfinite(w)
    y, x, w, r, a, c = y[keep], x[keep], w[keep], r[keep], a[keep], c[keep]
    nan = float("nan")
    empty = MimicrySlopes(
        [IntervalEstimate(nan, nan, nan, nan, nan, 0) for _ in range(n_reviewers)],
        np.full(n_reviewers, nan),
        int(y.size),
        0,
    )
    if y.size == 0:
        return empty
    _, answer_index = np.unique(a, return_inverse=True)
    _, cluster_index = np.unique(c, return_inverse=True)
    n_answers = int(answer_index.max()) + 1
    n_clusters = int(cluster_index.max()) + 1
    design, n_slopes = _design(x, w, r, n_reviewers)
    stacked = _demean_within(np.column_stack([y, design]), answer_index, n_answers)
    y_tilde, z_tilde = stacked[:, 0], stacked[:, 1:]
    scale = np.maximum(np.abs(design).sum(axis=0), 1.0)
    usable = (z_tilde**2).sum(axis=0) > _DEGENERATE * scale
    columns = np.flatnonzero(usable)
    within_sd = np.full(n_reviewers, nan)
    for index in range(n_reviewers):
        mine = r == index
        if mine.sum() >= 2:
            within_sd[index] = float(np.std(z_tilde[mine, index], ddof=1))
    if columns.size == 0 or n_clusters < 2:
        return MimicrySlopes(empty.slopes, within_sd, int(y.size), n_clusters)
    z = z_tilde[:, columns]
    gram = z.T @ z
    gram_inverse = np.linalg.pinv(gram)
    coefficients = gram_inverse @ (z.T @ y_tilde)
    residuals = y_tilde - z @ coefficients
    # a coefficient is identified when its unit vector lies in the row space of the design
    # (e.g. a reviewer whose similarity never varies apart from its leniency column is not)
    projector = gram_inverse @ gram
    identified = np.all(
        np.abs(projector - np.eye(columns.size)) < 1e-8 * max(1.0, float(np.abs(gram).max())),
        axis=0,
    )
    scores = np.zeros((n_clusters, columns.size))
    np.add.at(scores, cluster_index, z * residuals[:, None])
    meat = scores.T @ scores
    n_obs, n_params = int(y.size), int(np.linalg.matrix_rank(gram))
    correction = (n_clusters / (n_clusters - 1)) * ((n_obs - 1) / max(n_obs - n_params, 1))
    covariance = correction * gram_inverse @ meat @ gram_inverse
    critical = float(scipy_stats.t.ppf(0.5 + confidence / 2, n_clusters - 1))
    slopes: list[IntervalEstimate] = []
    position = {int(column): k for k, column in enumerate(columns)}
    for index in range(n_slopes):
        clusters_here = int(np.unique(cluster_index[r == index]).size)
        k = position.get(index)
        if k is None or clusters_here < 2 or not identified[k]:
            slopes.append(IntervalEstimate(nan, nan, nan, nan, nan, clusters_here))
            continue
        estimate = float(coefficients[k])
        standard_error = float(np.sqrt(max(covariance[k, k], 0.0)))
        if standard_error > 0:
            t_value = estimate / standard_error
            p_value = float(2 * scipy_stats.t.sf(abs(t_value), n_clusters - 1))
        else:
            p_value = nan
        slopes.append(
            IntervalEstimate(
                estimate,
                estimate - critical * standard_error,
                estimate + critical * standard_error,
                standard_error,
                p_value,
                clusters_here,
            )
        )
    return MimicrySlopes(slopes, within_sd, n_obs, n_clusters)
