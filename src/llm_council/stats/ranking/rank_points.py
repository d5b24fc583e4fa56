"""Is a score table rank points (a ranking converted to a Borda count), not scores?

karpathy's council and the reference design give rankings only; the drop-in
(``extract_scores_from_stage2``) turns a ranking of N shown answers into N points for
the first, N - 1 for the second, ... (Borda 1781). Nothing in the numbers' type says so,
so it is read from the values: a review is rank points when its k scores are the distinct
integers N, N-1, ..., N-k+1 (k = N when it ranked every answer). Then every complete
review has the mean (N + 1) / 2 and the variance of 1..N, so a reviewer's level
(leniency) and spread describe N, not the judge (issue 23, ADR 0040).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def review_is_rank_points(scores: ArrayLike, n_shown: int) -> bool:
    """Are the finite ``scores`` of one review exactly ``n_shown, n_shown - 1, ...``?"""
    values = np.asarray(scores, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0 or n_shown < values.size:
        return False
    expected = np.arange(n_shown, n_shown - values.size, -1, dtype=float)
    return bool(np.array_equal(np.sort(values)[::-1], expected))


def table_is_rank_points(scores: ArrayLike, n_shown: ArrayLike) -> bool:
    """Is every scored row of ``scores`` (reviewers x candidates, NaN = no score) rank
    points of its ``n_shown[row]`` answers, with at least one row ranking two or more?

    Parameters
    ----------
    scores : array_like, shape (R, C)
        Reviewers x candidates, NaN for no score.
    n_shown : array_like of int, shape (R,)
        How many answers each reviewer was shown.

    Returns
    -------
    bool
        True when every scored row is rank points.
    """
    table = np.atleast_2d(np.asarray(scores, dtype=float))
    shown = np.asarray(n_shown, dtype=int)
    counts = np.isfinite(table).sum(axis=1)
    if not np.any(counts >= 2):
        return False
    return all(
        review_is_rank_points(row, int(size))
        for row, size, count in zip(table, shown, counts, strict=True)
        if count > 0
    )
