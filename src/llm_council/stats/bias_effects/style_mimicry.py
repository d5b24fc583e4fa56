r"""Style mimicry: per reviewer, the slope of score on similarity to its own answer.

One observation per (reviewer ``r``, answer ``a`` = session x candidate) that the reviewer
scored, with ``x`` the similarity of the answer to ``r``'s own answer in that session:

.. math::

    y_{ra} = \alpha_a + \lambda_{r s(a)} + \nu_r \ln w_a + \beta_r x_{ra} + \varepsilon_{ra}

``alpha_a`` (answer fixed effects) holds the answer's quality fixed: the slope is
identified only by *different reviewers of the same answer* whose own answers are more
or less like it. That is what keeps "good answers resemble good answers" (style
correlated with quality) from reading as mimicry, and why a symmetric similarity is no
obstacle: ``x_{ra}`` varies across the reviewers of one answer because their own answers
differ. ``lambda_{rs}`` is the reviewer's leniency *in that session* (a reviewer x session
effect), so the slope is identified only within one review: a reviewer whose leniency
drifts over time, or whose mood in a session goes with how typical its own answer was, does
not read as mimicry (with one leniency per reviewer, a drifting judge was flagged at
p < 1e-4 on a store whose similarity level changed over the same weeks). ``nu_r`` is its
preference for length (``w_a`` the answer's words; one reviewer's ``nu`` is the reference,
the rest are relative, which answer effects make identified anyway).

Estimation: both sets of fixed effects are projected out of every column, then ordinary
least squares (Frisch-Waugh-Lovell). Answers and reviews both lie in one session, so the
projection is exact and per session: each session's reviewer x answer table is multiplied
by the residual maker of its pattern of observed cells
(:mod:`llm_council.stats.design.nested_two_way`). That is the limit of the alternating projections
(demeaning within answer and within review until the columns stop changing; Gaure 2013, "OLS
with multiple high dimensional category variables", *Comput. Stat. Data Anal.* 66: 8-18),
which remain the method only when the rows are not one table per session (a reviewer scoring
one answer twice); any number of missing cells or patterns is projected exactly. With 3
members a symmetric similarity lies wholly in the span of the two sets of effects (the one
residual direction of a 3 x 3 grid without its diagonal is a cycle on which a symmetric
x sums to zero), so nothing is identified there. Intervals and tests use the
delete-one-session jackknife (CV3) with sessions as clusters,

.. math::

    \hat V = \frac{C-1}{C} \sum_c \bigl(\hat\beta_{(-c)} - \hat\beta\bigr)
    \bigl(\hat\beta_{(-c)} - \hat\beta\bigr)^\top,
    \qquad \hat\beta_{(-c)} = (A - A_c)^{+} (b - b_c),

with :math:`A = \tilde Z^\top \tilde Z`, :math:`b = \tilde Z^\top \tilde y` and
:math:`A_c, b_c` their session-``c`` parts, on ``C - 1`` degrees of freedom (MacKinnon,
Nielsen & Webb 2023, "Cluster-robust inference: a guide to empirical practice",
*J. Econometrics* 232(2): 272-299, section 3.3). The answer effects are nested in sessions,
so deleting a session deletes its answers' effects with it and the jackknife is exact for
the full model. CV3 rather than the textbook CV1 sandwich because it is the better
small-sample choice when clusters are few or unbalanced (MacKinnon et al., section 4);
on 2,000 null councils of 150 sessions and five reviewers the Holm flag fired in 5.2%.
One session's scores share its answers and the reviewers' moods, hence sessions, not
records, as the unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.dense_ids import dense_codes
from llm_council.stats.design.left_out_solve import left_out_solutions
from llm_council.stats.design.nested_two_way import nested_two_way_residuals
from llm_council.stats.inference.pooling import IntervalEstimate
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf

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


def _response_and_design(
    score: np.ndarray,
    similarity: np.ndarray,
    log_words: np.ndarray,
    reviewer: np.ndarray,
    n_reviewers: int,
) -> np.ndarray:
    """Column 0 the score; then a slope column per reviewer (its similarity on its own rows,
    0 elsewhere), then a length column for reviewers 1.. (0 = reference). Leniency is a
    reviewer x session fixed effect, absorbed with the answer effects. One array, filled in
    place, so no per-reviewer indicator matrices are held at once."""
    rows = np.arange(reviewer.size)
    matrix = np.zeros((reviewer.size, 2 * n_reviewers))
    matrix[:, 0] = score
    matrix[rows, 1 + reviewer] = similarity
    relative = reviewer >= 1
    matrix[rows[relative], n_reviewers + reviewer[relative]] = log_words[relative]
    return matrix


def _design_column_abs_sums(
    similarity: np.ndarray, log_words: np.ndarray, reviewer: np.ndarray, n_reviewers: int
) -> np.ndarray:
    """The sum of absolute values of each design column of :func:`_response_and_design`
    (slopes, then lengths of reviewers 1..), from the inputs: a column holds one
    reviewer's rows, so it is a per-reviewer sum (no pass over a strided design column)."""
    slopes = np.bincount(reviewer, weights=np.abs(similarity), minlength=n_reviewers)
    lengths = np.bincount(reviewer, weights=np.abs(log_words), minlength=n_reviewers)
    return np.concatenate([slopes, lengths[1:]])


def _own_column_sd(z_tilde: np.ndarray, reviewer: np.ndarray, n_reviewers: int) -> np.ndarray:
    """Per reviewer ``r``: the sample sd (ddof 1) of ``z_tilde[:, r]`` over ``r``'s rows
    (NaN under two rows); two passes (mean, then squared deviations) like ``np.std``."""
    own = z_tilde[np.arange(reviewer.size), reviewer]  # each row's value in its own column
    counts = np.bincount(reviewer, minlength=n_reviewers)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.bincount(reviewer, weights=own, minlength=n_reviewers) / counts
        own -= means[reviewer]
        squares = np.bincount(reviewer, weights=own * own, minlength=n_reviewers)
        return np.where(counts >= 2, np.sqrt(squares / (counts - 1)), np.nan)


#: alternating projections stop when no column moves by more than this (relative)
_PROJECTION_TOLERANCE = 1e-11
_PROJECTION_MAX_ROUNDS = 200


def _demean_two_way(
    values: np.ndarray, first: np.ndarray, n_first: int, second: np.ndarray, n_second: int
) -> np.ndarray:
    """``values`` with both fixed effects projected out (alternating projections)."""
    scale = max(1.0, float(np.abs(values).max(initial=0.0)))
    current = values
    for _ in range(_PROJECTION_MAX_ROUNDS):
        updated = _demean_within(_demean_within(current, first, n_first), second, n_second)
        change = float(np.abs(updated - current).max(initial=0.0))
        current = updated
        if change <= _PROJECTION_TOLERANCE * scale:
            break
    return current


#: doubles held at once by the jackknife's padded per-session blocks (about 16 MB)
_JACKKNIFE_BLOCK_DOUBLES = 2_000_000


def _jackknife_covariance(
    z: np.ndarray,
    y: np.ndarray,
    cluster: np.ndarray,
    n_clusters: int,
    coefficients: np.ndarray,
    gram: np.ndarray,
    moment_total: np.ndarray,
) -> np.ndarray:
    """CV3: ``(C-1)/C * sum_c (beta_(-c) - beta)(beta_(-c) - beta)^T`` (module docstring).

    ``gram`` and ``moment_total`` are the full-sample ``z.T @ z`` and ``z.T @ y`` (the
    caller's, not recomputed). Sessions are processed in blocks, each padded to the largest
    session's row count, so memory stays bounded whatever the number of sessions.
    """
    n_columns = z.shape[1]
    if np.all(cluster[1:] >= cluster[:-1]):  # rows already grouped by session: no copies
        z_sorted, y_sorted, cluster_sorted = z, y, cluster
    else:
        order = np.argsort(cluster, kind="stable")
        z_sorted, y_sorted, cluster_sorted = z[order], y[order], cluster[order]
    counts = np.bincount(cluster_sorted, minlength=n_clusters)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    max_rows = int(counts.max())
    equal_sizes = bool(np.all(counts == max_rows))
    # each row's place in its session, for padding (equal sessions are reshaped instead)
    row_in_cluster = (
        None if equal_sizes else np.arange(cluster_sorted.size) - starts[cluster_sorted]
    )
    block = max(1, _JACKKNIFE_BLOCK_DOUBLES // max(1, max_rows * n_columns))
    outer = np.zeros((n_columns, n_columns))
    for first in range(0, n_clusters, block):
        last = min(first + block, n_clusters)
        rows = slice(int(starts[first]), int(starts[last - 1] + counts[last - 1]))
        if equal_sizes:  # every session has max_rows rows: the block is a reshape
            padded_z = z_sorted[rows].reshape(last - first, max_rows, n_columns)
            padded_y = y_sorted[rows].reshape(last - first, max_rows)
        else:
            assert row_in_cluster is not None
            local = cluster_sorted[rows] - first
            padded_z = np.zeros((last - first, max_rows, n_columns))
            padded_y = np.zeros((last - first, max_rows))
            padded_z[local, row_in_cluster[rows]] = z_sorted[rows]
            padded_y[local, row_in_cluster[rows]] = y_sorted[rows]
        cross = padded_z.transpose(0, 2, 1) @ padded_z
        moment = np.einsum("cmi,cm->ci", padded_z, padded_y)
        deleted = left_out_solutions(gram, cross, moment_total[None] - moment)
        deviation = deleted - coefficients[None, :]
        outer += deviation.T @ deviation
    return np.asarray((n_clusters - 1) / n_clusters * outer)


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
    """The per-reviewer slopes ``beta_r`` of the module's model, CV3 jackknife by session.

    ``reviewer`` holds indices ``0 .. n_reviewers - 1``; ``answer`` and ``session`` any
    integer ids (an answer lies in one session). Rows with a non-finite score or
    similarity are left out; leave self-reviews out before calling.
    """
    inputs = {
        "score": score,
        "similarity": similarity,
        "log_words": log_words,
        "reviewer": reviewer,
        "answer": answer,
        "session": session,
    }
    return mimicry_slopes_of_columns(inputs, n_reviewers, confidence)


def _finite_columns_by_session(
    inputs: dict[str, ArrayLike], n_reviewers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Score, similarity, log words, reviewer, answer and session, popped from ``inputs``.

    Rows with a non-finite score, similarity or length are dropped; the rest are grouped by
    session (the fit does not depend on their order), so the projection and the jackknife
    read each session as one slice instead of sorting copies.
    """
    y = np.asarray(inputs.pop("score"), dtype=float)
    x = np.asarray(inputs.pop("similarity"), dtype=float)
    w = np.asarray(inputs.pop("log_words"), dtype=float)
    r = np.asarray(inputs.pop("reviewer"), dtype=np.int64)
    a = np.asarray(inputs.pop("answer"), dtype=np.int64)
    c = np.asarray(inputs.pop("session"), dtype=np.int64)
    if inputs:
        raise TypeError(f"unexpected inputs: {', '.join(sorted(inputs))}")
    outside = (r < 0) | (r >= n_reviewers)
    if outside.any():
        raise ValueError(
            f"reviewer index {int(r[outside][0])} outside 0..{n_reviewers - 1} (n_reviewers)"
        )
    keep = np.isfinite(y) & np.isfinite(x) & np.isfinite(w)
    if not keep.all():
        y, x, w, r, a, c = y[keep], x[keep], w[keep], r[keep], a[keep], c[keep]
    if not np.all(c[1:] >= c[:-1]):
        by_session = np.argsort(c, kind="stable")
        y, x, w, r, a, c = (v[by_session] for v in (y, x, w, r, a, c))
    return y, x, w, r, a, c


def _slope_intervals(
    coefficients: np.ndarray,
    covariance: np.ndarray,
    identified: np.ndarray,
    columns: np.ndarray,
    clusters_per_reviewer: np.ndarray,
    n_clusters: int,
    confidence: float,
) -> list[IntervalEstimate]:
    """One t interval per reviewer (``n_clusters - 1`` df); NaN where it is not estimable.

    A reviewer's slope is not estimable when its column was dropped as degenerate, it is
    seen in fewer than two sessions, or its coefficient is not identified.
    """
    nan = float("nan")
    critical = float(t_ppf(0.5 + confidence / 2, n_clusters - 1))
    slopes: list[IntervalEstimate] = []
    position = {int(column): k for k, column in enumerate(columns)}
    for index in range(clusters_per_reviewer.size):
        clusters_here = int(clusters_per_reviewer[index])
        k = position.get(index)
        if k is None or clusters_here < 2 or not identified[k]:
            slopes.append(IntervalEstimate(nan, nan, nan, nan, nan, clusters_here))
            continue
        estimate = float(coefficients[k])
        standard_error = float(np.sqrt(max(covariance[k, k], 0.0)))
        if standard_error > 0:
            t_value = estimate / standard_error
            p_value = float(2 * t_sf(abs(t_value), n_clusters - 1))
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
    return slopes


def mimicry_slopes_of_columns(
    inputs: dict[str, ArrayLike], n_reviewers: int, confidence: float = 0.95
) -> MimicrySlopes:
    """:func:`mimicry_slopes` of ``inputs`` (its six per-row arguments by name), which it
    empties.

    Each column is taken out of the dict, so a caller that keeps no other reference (the
    report, on millions of rows) has the score, similarity, length and answer columns
    freed once the design is built, before the projection and the jackknife reach their
    peak.

    Parameters
    ----------
    inputs : dict of str to array_like, each shape (n,)
        ``score``, ``similarity``, ``log_words``, ``reviewer`` (0..n_reviewers-1),
        ``answer`` and ``session``; emptied.
    n_reviewers : int
        R.
    confidence : float
        Interval level.

    Returns
    -------
    MimicrySlopes
        ``slopes`` (R IntervalEstimates), ``within_answer_sd`` (R,), and the rows and
        sessions used.
    """
    y, x, w, r, a, c = _finite_columns_by_session(inputs, n_reviewers)
    nan = float("nan")
    empty = MimicrySlopes(
        [IntervalEstimate(nan, nan, nan, nan, nan, 0) for _ in range(n_reviewers)],
        np.full(n_reviewers, nan),
        int(y.size),
        0,
    )
    if y.size == 0:
        return empty
    _, answer_index = dense_codes(a)
    del a
    _, cluster_index = dense_codes(c)
    n_answers = int(answer_index.max()) + 1
    n_clusters = int(cluster_index.max()) + 1
    n_rows = int(y.size)
    columns_to_project = _response_and_design(y, x, w, r, n_reviewers)
    scale = np.maximum(_design_column_abs_sums(x, w, r, n_reviewers), 1.0)
    del y, x, w  # in the design now: not held through the projection and the jackknife
    stacked = nested_two_way_residuals(
        columns_to_project, cluster_index, r, answer_index, overwrite=True
    )
    if stacked is None:  # not one table per session (e.g. a repeated reviewer-answer pair)
        _, review_index = dense_codes(r * n_clusters + cluster_index)
        stacked = _demean_two_way(
            columns_to_project, answer_index, n_answers, review_index, int(review_index.max()) + 1
        )
    del columns_to_project
    y_tilde, z_tilde = stacked[:, 0], stacked[:, 1:]
    # one product of the projected columns gives every column's sum of squares, Z'Z and Z'y
    products = stacked.T @ stacked
    usable = np.diag(products)[1:] > _DEGENERATE * scale
    columns = np.flatnonzero(usable)
    within_sd = _own_column_sd(z_tilde, r, n_reviewers)
    if columns.size == 0 or n_clusters < 2:
        return MimicrySlopes(empty.slopes, within_sd, n_rows, n_clusters)
    z = z_tilde if columns.size == z_tilde.shape[1] else z_tilde[:, columns]
    gram = products[1:, 1:][np.ix_(columns, columns)]
    moment = products[1:, 0][columns]
    gram_inverse = np.linalg.pinv(gram)
    coefficients = gram_inverse @ moment
    # a coefficient is identified when its unit vector lies in the row space of the design
    # (e.g. a reviewer whose similarity never varies apart from its leniency column is not)
    projector = gram_inverse @ gram
    identified = np.all(
        np.abs(projector - np.eye(columns.size)) < 1e-8 * max(1.0, float(np.abs(gram).max())),
        axis=0,
    )
    covariance = _jackknife_covariance(
        z, y_tilde, cluster_index, n_clusters, coefficients, gram, moment
    )
    reviewer_in_cluster = np.zeros((n_reviewers, n_clusters), dtype=bool)
    reviewer_in_cluster[r, cluster_index] = True
    slopes = _slope_intervals(
        coefficients,
        covariance,
        identified,
        columns,
        reviewer_in_cluster.sum(axis=1),
        n_clusters,
        confidence,
    )
    return MimicrySlopes(slopes, within_sd, n_rows, n_clusters)
