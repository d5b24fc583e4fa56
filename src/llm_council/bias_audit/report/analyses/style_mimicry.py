"""Style mimicry per reviewer: do answers more like its own answer get higher scores from it?

Reads ``similarity_to_own`` (computed at audit time,
:mod:`llm_council.bias_audit.session.similarity`) and fits
:func:`llm_council.stats.bias_effects.style_mimicry.mimicry_slopes`: the slope of a reviewer's score
on
that similarity *within each answer* (answer fixed effects hold quality fixed), net of the
reviewer's leniency and length preference, with session-clustered intervals. Flags are
Holm-corrected across reviewers at the report's significance level. Self-reviews carry no
similarity and never enter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
from numpy.typing import ArrayLike

from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.bias_effects.style_mimicry import (
    MimicrySlopes,
    mimicry_slopes_of_columns,
)
from llm_council.stats.inference.multiplicity import holm_adjusted

#: what the method is called in every rendering
METHOD = (
    "slope of score on similarity to the reviewer's own answer, within answer (answer fixed "
    "effects) and within review (reviewer x session leniency), net of length preference; "
    "delete-one-session jackknife (CV3) t interval; Holm across reviewers; not identified "
    "with 3 members (a symmetric similarity is absorbed by the two sets of effects)"
)


@dataclass(frozen=True)
class ReviewerMimicry:
    """One reviewer's mimicry slope (points per unit of similarity, 0..1 scale)."""

    reviewer: str
    slope: Interval  # p_value: the raw (uncorrected) cluster-robust t test
    points_per_sd: float  # slope x the sd of this reviewer's within-answer similarity
    within_answer_sd: float
    n_sessions: int
    n_scores: int
    holm_p: float
    detected: bool


@dataclass(frozen=True)
class StyleMimicry:
    """Every reviewer's slope, and how many scores carried a similarity."""

    reviewers: list[ReviewerMimicry]
    n_scores_with_similarity: int
    n_sessions: int
    significance_level: float = 0.05
    method: str = METHOD


def mimicry_rows(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[dict[int, str], dict[str, np.ndarray] | None]:
    """The reviewers' names by index, and the fit's columns (sorted by session; None when
    no record has a similarity): score, similarity, log_words, reviewer, answer, session."""
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    model_names = [
        model
        for (model,) in connection.execute(
            "SELECT model FROM models ORDER BY model_index"
        ).fetchall()
    ]
    n_models = max(len(model_names), 1)
    # Codes by position in the (few) names, not by joining ``reviewers`` and ``models``:
    # two hash joins on the name strings were two thirds of the query's time.
    rows = connection.execute(
        """SELECT r.session,
                  (list_position(?, r.reviewer) - 1)::INTEGER AS reviewer_index,
                  (list_position(?, r.model) - 1)::INTEGER AS model_index,
                  r.score, r.similarity, r.words
           FROM records r
           WHERE NOT r.is_self AND r.score IS NOT NULL AND r.similarity IS NOT NULL
                 AND r.reviewer IS NOT NULL AND r.model IS NOT NULL
                 AND isfinite(r.score) AND r.similarity BETWEEN 0 AND 1""",
        [[names[index] for index in sorted(names)], model_names],
    ).fetchnumpy()
    if len(rows["session"]) == 0:
        return names, None
    # The fit reads each session as one slice and would sort copies of all its inputs
    # while these are held; sorting each column as it is copied holds one column extra.
    fetched_session = np.asarray(rows["session"], dtype=np.int64)
    by_session = np.argsort(fetched_session, kind="stable")
    session = fetched_session[by_session]
    del fetched_session
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)[by_session]
    answer = np.asarray(rows["model_index"], dtype=np.int64)[by_session]
    answer += session * n_models  # each row's answer id, over its model index (no copy)
    # handed over in a dict the fit empties: held nowhere else, the score, similarity,
    # length and answer columns are freed once its design is built (the 10M peak)
    columns = {
        "score": nullable_floats(rows["score"])[by_session],
        "similarity": nullable_floats(rows["similarity"])[by_session],
        "log_words": np.log(np.maximum(nullable_floats(rows["words"]), 1.0))[by_session],
        "reviewer": reviewer,
        "answer": answer,
        "session": session,
    }
    return names, columns


def mimicry_result(
    fit: MimicrySlopes,
    names: Sequence[str],
    scores_per_reviewer: np.ndarray,
    n_scores: int,
    n_sessions: int,
    significance_level: float,
) -> StyleMimicry:
    """The section's result from the fit: Holm across the reviewers with a score."""
    present = [index for index in range(len(names)) if scores_per_reviewer[index] > 0]
    holm = holm_adjusted([fit.slopes[index].p_value for index in present])
    items = []
    for index, adjusted in zip(present, holm, strict=True):
        slope = fit.slopes[index]
        sd = float(fit.within_answer_sd[index])
        items.append(
            ReviewerMimicry(
                reviewer=names[index],
                slope=Interval.from_estimate(slope),
                points_per_sd=slope.estimate * sd,
                within_answer_sd=sd,
                n_sessions=slope.n_clusters,
                n_scores=int(scores_per_reviewer[index]),
                holm_p=float(adjusted),
                detected=bool(np.isfinite(adjusted) and adjusted < significance_level),
            )
        )
    return StyleMimicry(
        reviewers=items,
        n_scores_with_similarity=n_scores,
        n_sessions=n_sessions,
        significance_level=significance_level,
    )


def style_mimicry(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> StyleMimicry | None:
    """Per-reviewer mimicry slopes from ``records`` (None when no record has a similarity)."""
    names, columns = mimicry_rows(connection)
    if columns is None:
        return None
    n_reviewers = max(names) + 1
    reviewer, session = columns["reviewer"], columns["session"]
    inputs: dict[str, ArrayLike] = dict(columns)
    del columns  # the fit empties ``inputs``: its columns are held nowhere else
    fit = mimicry_slopes_of_columns(inputs, n_reviewers)
    return mimicry_result(
        fit,
        [names[index] for index in range(n_reviewers)],
        np.bincount(reviewer, minlength=n_reviewers),
        int(session.size),
        int(np.count_nonzero(np.diff(session))) + 1,  # session is sorted
        significance_level,
    )
