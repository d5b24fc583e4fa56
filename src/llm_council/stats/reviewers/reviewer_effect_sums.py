"""Sufficient statistics of the reviewer-effects fit that add across sessions.

:func:`~llm_council.stats.reviewers.reviewer_effects.fit_reviewer_effects` fits

.. math::

    y_i = a_{k(i)} + \\beta_{r(i), p(i)} + \\gamma_{r(i)} x_i + \\varepsilon_i

by backfitting; its fixed point is the least squares solution. The answer effects
:math:`a_k` are nuisance parameters, one per answer, so they can be profiled out
(Frisch-Waugh-Lovell; Davidson & MacKinnon 2004, sec. 2.4): with :math:`z_i` the row of
score :math:`i` (indicator of its reviewer's slot column, :math:`x_i` in its reviewer's
length column, then :math:`y_i`) and :math:`c_i = z_i - \\bar z_{k(i)}` that row centred
within its answer, the reviewer coefficients :math:`\\theta` solve

.. math::

    \\Big(\\sum_i c_i c_i^\\top\\Big)_{FF}\\, \\theta = \\Big(\\sum_i c_i c_i^\\top\\Big)_{Fy}

over the columns :math:`F` of the fitted reviewers (a reviewer below ``min_scores`` keeps
its scores in the answer means with zero effects, as in the backfitting). Reviewer
:math:`r`'s residual sum of squares is :math:`w^\\top H_r w` with
:math:`H_r = \\sum_{i \\in r} c_i c_i^\\top` and :math:`w = (-\\theta, 1)`, and its raw
design's Gram matrix :math:`X_r^\\top X_r` needs only slot counts, :math:`\\sum x` per slot
and :math:`\\sum x^2`. Every answer lies in one session, so all of these are sums over
sessions: :class:`ReviewerEffectSums` adds exactly, and :func:`effects_from_sums` gives the
estimates of the direct fit (to its convergence tolerance) through the same
:func:`~llm_council.stats.reviewers.reviewer_effects.shrunk_effects`.

Size: with :math:`R` reviewers and :math:`P` columns (each reviewer's seen slots plus its
slope) the sums hold :math:`R (P+1)^2` numbers, about 75 000 for nine members: the
statistics are exact, not small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_council.stats.reviewers.reviewer_effects import (
    MAX_SLOTS,
    ReviewerEffects,
    ReviewerFit,
    shrunk_effects,
)

#: the slot of a reviewer's length-slope column in :attr:`ReviewerEffectSums.columns`
LENGTH = -1
#: eigenvalues below this fraction of the largest are the unidentified directions (a shift
#: or slope every fitted reviewer shares), solved at zero as the centring removes them
_RELATIVE_RANK_TOLERANCE = 1e-10
#: rows centred at a time when summing a whole store (memory: this times the columns)
_CHUNK_ROWS = 1 << 15


@dataclass(frozen=True)
class ReviewerEffectSums:
    """The additive statistics of some sessions' scores (module docstring).

    ``columns[j] = (reviewer index, display slot)`` or ``(reviewer index, LENGTH)``;
    ``cross[r]`` is :math:`H_r` over the columns plus the score as the last one;
    ``gram_diagonal[j]`` is the column's raw :math:`\\sum z^2` over its reviewer's rows
    (a count for a slot, :math:`\\sum x^2` for the slope) and ``gram_length[j]`` its raw
    product with the reviewer's length column.
    """

    reviewers: tuple[str, ...]
    columns: tuple[tuple[int, int], ...]
    n_scores: np.ndarray  # per reviewer
    n_answers: int  # answers scored by two or more reviewers
    n_slots: int  # the highest display slot seen plus one
    cross: np.ndarray  # (reviewers, columns + 1, columns + 1)
    gram_diagonal: np.ndarray  # per column
    gram_length: np.ndarray  # per column

    def merged(self, other: ReviewerEffectSums) -> ReviewerEffectSums:
        """The sums of both sets of sessions (reviewers and columns united by name)."""
        reviewers = list(self.reviewers)
        index = {name: i for i, name in enumerate(reviewers)}
        for name in other.reviewers:
            index.setdefault(name, len(reviewers))
            if len(reviewers) < len(index):
                reviewers.append(name)
        named = [(self.reviewers[r], s) for r, s in self.columns]
        column_index = {column: j for j, column in enumerate(named)}
        for r, s in other.columns:
            column_index.setdefault((other.reviewers[r], s), len(column_index))
        columns = tuple((index[name], s) for name, s in column_index)
        merged = _empty(tuple(reviewers), columns)
        for part in (self, other):
            rows = np.array([index[name] for name in part.reviewers], dtype=np.intp)
            at = [column_index[(part.reviewers[r], s)] for r, s in part.columns]
            full = np.array([*at, len(columns)], dtype=np.intp)
            merged.n_scores[rows] += part.n_scores
            merged.cross[np.ix_(rows, full, full)] += part.cross
            merged.gram_diagonal[at] += part.gram_diagonal
            merged.gram_length[at] += part.gram_length
        return ReviewerEffectSums(
            merged.reviewers,
            columns,
            merged.n_scores,
            self.n_answers + other.n_answers,
            max(self.n_slots, other.n_slots),
            merged.cross,
            merged.gram_diagonal,
            merged.gram_length,
        )


def _empty(reviewers: tuple[str, ...], columns: tuple[tuple[int, int], ...]) -> ReviewerEffectSums:
    size = len(columns) + 1
    return ReviewerEffectSums(
        reviewers,
        columns,
        np.zeros(len(reviewers), dtype=np.int64),
        0,
        0,
        np.zeros((len(reviewers), size, size)),
        np.zeros(len(columns)),
        np.zeros(len(columns)),
    )


def reviewer_effect_sums(
    answer: np.ndarray,
    reviewer: np.ndarray,
    slot: np.ndarray,
    log2_length: np.ndarray,
    score: np.ndarray,
    names: tuple[str, ...],
) -> ReviewerEffectSums:
    """The sums of whole answers' scores, in the arrays of
    :func:`~llm_council.stats.reviewers.reviewer_effects.fit_reviewer_effects` (``reviewer`` indexes
    ``names``; ``log2_length`` already centred within its session). Rows are filtered as
    the fit filters them: non-finite values and slots outside ``0..MAX_SLOTS-1`` dropped,
    then answers with fewer than two scores.

    Parameters
    ----------
    answer, reviewer, slot : ndarray of int, shape (n,)
        Each score's answer id, reviewer index (into ``names``) and display slot.
    log2_length : ndarray, shape (n,)
        log2 of the answer's length, centred within its session.
    score : ndarray, shape (n,)
        The scores.
    names : tuple of str, length R
        The reviewers.

    Returns
    -------
    ReviewerEffectSums
        Per-reviewer cross-products (R, columns + 1, columns + 1), column sums of squares and
        counts, which add across sessions.
    """
    keep = np.isfinite(score) & np.isfinite(log2_length) & (slot >= 0) & (slot < MAX_SLOTS)
    answer, reviewer, slot = answer[keep], reviewer[keep].astype(np.intp), slot[keep]
    x, y = log2_length[keep].astype(float), score[keep].astype(float)
    _, answer_code, per_answer = np.unique(answer, return_inverse=True, return_counts=True)
    shared = per_answer[answer_code] >= 2
    answer_code, reviewer, slot, x, y = (
        array[shared] for array in (answer_code, reviewer, slot.astype(np.intp), x, y)
    )
    if y.size == 0:
        return _empty(tuple(names), ())
    n_answers = int(np.unique(answer_code).size)
    # columns: each reviewer's seen slots ascending, then its slope (code MAX_SLOTS)
    width = MAX_SLOTS + 1
    slot_code, slope_code = reviewer * width + slot, reviewer * width + MAX_SLOTS
    codes = np.unique(np.concatenate([slot_code, slope_code]))
    columns = tuple(
        (int(code // width), LENGTH if code % width == MAX_SLOTS else int(code % width))
        for code in codes
    )
    slot_column, slope_column = (
        np.searchsorted(codes, slot_code),
        np.searchsorted(codes, slope_code),
    )
    sums = _empty(tuple(names), columns)
    sums.n_scores[:] = np.bincount(reviewer, minlength=len(names))
    np.add.at(sums.gram_diagonal, slot_column, 1.0)
    np.add.at(sums.gram_length, slot_column, x)
    np.add.at(sums.gram_diagonal, slope_column, x * x)
    np.add.at(sums.gram_length, slope_column, x * x)
    _add_cross(sums.cross, answer_code, reviewer, slot_column, slope_column, x, y)
    return ReviewerEffectSums(
        sums.reviewers,
        columns,
        sums.n_scores,
        n_answers,
        int(slot.max()) + 1,
        sums.cross,
        sums.gram_diagonal,
        sums.gram_length,
    )


def _add_cross(
    cross: np.ndarray,
    answer_code: np.ndarray,
    reviewer: np.ndarray,
    slot_column: np.ndarray,
    slope_column: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
) -> None:
    """Add :math:`H_r = \\sum_{i \\in r} c_i c_i^\\top` to ``cross``, a chunk of whole
    answers at a time (the rows sorted by answer)."""
    order = np.argsort(answer_code, kind="stable")
    answer_code, reviewer = answer_code[order], reviewer[order]
    slot_column, slope_column, x, y = slot_column[order], slope_column[order], x[order], y[order]
    starts = np.flatnonzero(np.r_[True, answer_code[1:] != answer_code[:-1]])
    bounds = [*starts[:: max(1, _CHUNK_ROWS // 16)].tolist(), y.size]
    size = cross.shape[1]
    for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
        n = end - begin
        rows = np.zeros((n, size))
        local = np.arange(n)
        rows[local, slot_column[begin:end]] = 1.0
        rows[local, slope_column[begin:end]] = x[begin:end]
        rows[:, -1] = y[begin:end]
        chunk_starts = starts[(starts >= begin) & (starts < end)] - begin
        counts = np.diff(np.r_[chunk_starts, n])
        means = np.add.reduceat(rows, chunk_starts, axis=0) / counts[:, None]
        rows -= np.repeat(means, counts, axis=0)
        for r in np.unique(reviewer[begin:end]):
            mine = rows[reviewer[begin:end] == r]
            cross[r] += mine.T @ mine


def effects_from_sums(
    sums: ReviewerEffectSums, *, min_scores: int = 10
) -> list[ReviewerEffects | None]:
    """The shrunk effects of ``sums.reviewers`` (None below ``min_scores`` scores): the
    least squares solution of the module docstring, then the fit's own centring and
    James-Stein shrinkage.

    Parameters
    ----------
    sums : ReviewerEffectSums
        Sums over the sessions, from :func:`reviewer_effect_sums` (added together).
    min_scores : int
        Fewest usable scores for a reviewer to get effects.

    Returns
    -------
    list of ReviewerEffects or None, length len(sums.reviewers)
        Leniency, per-slot effects, length slope and score count per reviewer.
    """
    n_reviewers = len(sums.reviewers)
    fitted = [r for r in range(n_reviewers) if sums.n_scores[r] >= min_scores]
    if not fitted or sums.n_answers == 0:
        return [None] * n_reviewers
    owner = np.array([r for r, _ in sums.columns], dtype=np.intp)
    theta = least_squares_coefficients(sums, fitted)
    weights = np.append(-theta, 1.0)
    n_used = int(sums.n_scores[fitted].sum())
    inflation = n_used / max(n_used - sums.n_answers, 1)
    fits: list[ReviewerFit | None] = [None] * n_reviewers
    for r in fitted:
        # its slots ascending, then its slope (the fit's column order)
        mine = np.array(
            sorted(np.flatnonzero(owner == r), key=lambda j: _column_order(sums.columns[j])),
            dtype=np.intp,
        )
        k = mine.size
        gram = np.diag(sums.gram_diagonal[mine])
        gram[-1, :] = gram[:, -1] = sums.gram_length[mine]
        rss = max(float(weights @ sums.cross[r] @ weights), 0.0)
        sigma2 = rss / max(int(sums.n_scores[r]) - k, 1) * inflation
        fits[r] = ReviewerFit(
            coefficients=-weights[mine],
            covariance=sigma2 * np.linalg.pinv(gram),
            seen_slots=np.array([sums.columns[j][1] for j in mine[:-1]], dtype=np.intp),
            n_scores=int(sums.n_scores[r]),
        )
    return shrunk_effects(fits, sums.n_slots)


def least_squares_coefficients(sums: ReviewerEffectSums, fitted: list[int]) -> np.ndarray:
    """The reviewer coefficients of the module docstring's normal equations, one per
    column of ``sums.columns`` (0 for the columns of reviewers not in ``fitted``): the
    minimum-norm solution, so a direction the design does not identify (a shift or slope
    every fitted reviewer shares, a disconnected group) is solved at zero.

    Parameters
    ----------
    sums : ReviewerEffectSums
        Sums over the sessions.
    fitted : list of int
        The reviewers whose effects are fitted (the others are held at zero).

    Returns
    -------
    ndarray, shape (len(sums.columns),)
        :math:`\\theta`.
    """
    owner = np.array([r for r, _ in sums.columns], dtype=np.intp)
    in_fit = np.flatnonzero(np.isin(owner, fitted))
    total = sums.cross.sum(axis=0)
    theta = np.zeros(len(sums.columns))
    theta[in_fit] = _solve_semidefinite(total[np.ix_(in_fit, in_fit)], total[in_fit, -1])
    return theta


def _column_order(column: tuple[int, int]) -> tuple[bool, int]:
    return column[1] == LENGTH, column[1]


def _solve_semidefinite(matrix: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The minimum-norm solution of ``matrix @ theta = right`` for a symmetric positive
    semidefinite ``matrix`` (eigen-decomposition, tiny eigenvalues treated as zero)."""
    values, vectors = np.linalg.eigh(matrix)
    keep = values > _RELATIVE_RANK_TOLERANCE * max(float(values.max(initial=0.0)), 1e-300)
    projected = vectors[:, keep].T @ right
    return np.asarray(vectors[:, keep] @ (projected / values[keep]), dtype=float)
