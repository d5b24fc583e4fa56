"""The session's additive model and the facts every bias family reads from it.

One fit of score = mean + reviewer + answer to the non-self scores (self-reviews are a
different question and feed only self-preference), its per-reviewer noise, the scored
self-reviews, and the note saying whether the reviewer tests can run at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_council.bias_audit.session.moderated_noise import ModeratedNoise, moderation_note
from llm_council.bias_audit.session.score_table import ScoreTable
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.reviewers.reviewer_noise import ReviewerNoise, estimate_reviewer_noise


def finite_or_none(value: float | None) -> float | None:
    """A JSON-safe number: NaN and infinities become ``None`` (not computed)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class SessionModel:
    """The non-self scores, the additive model fitted to their non-empty rows/columns,
    and its per-reviewer noise (``None`` with equal_reviewer_noise or when not estimable).
    ``consensus[c]`` is the mean non-self score of answer c (NaN when it has none).
    """

    others_scores: np.ndarray
    active_rows: np.ndarray
    active_columns: np.ndarray
    active_scores: np.ndarray
    consensus: np.ndarray
    fit: AdditiveFit | None
    noise: ReviewerNoise | None

    @property
    def residual_df(self) -> int:
        return self.fit.residual_df if self.fit is not None else 0


def fit_session(table: ScoreTable, thresholds: AuditThresholds) -> SessionModel:
    """Fit the additive model to the session's non-self scores."""
    usable = ~np.isnan(table.scores) & ~table.is_self
    others_scores = np.where(usable, table.scores, np.nan)
    # numpy.nanmean's own steps (NaN -> 0, sum, divide by the count): the same numbers
    # without its warnings machinery; an answer nobody else scored gets NaN
    with np.errstate(invalid="ignore", divide="ignore"):
        consensus = np.where(usable, table.scores, 0.0).sum(axis=0) / usable.sum(axis=0)
    active_rows = np.flatnonzero(usable.any(axis=1))
    active_columns = np.flatnonzero(usable.any(axis=0))
    active_scores = others_scores[active_rows][:, active_columns]
    fit = fit_additive_two_way_cached(active_scores)
    noise = (
        estimate_reviewer_noise(fit)
        if fit is not None and not thresholds.equal_reviewer_noise
        else None
    )
    return SessionModel(
        others_scores, active_rows, active_columns, active_scores, consensus, fit, noise
    )


def reviewer_tests_runnable(model: SessionModel, thresholds: AuditThresholds) -> bool:
    """Session-only noise: enough residual df, and per-reviewer noise estimated unless
    assumed equal."""
    return (
        model.fit is not None
        and model.fit.residual_df >= thresholds.minimum_test_df
        and (thresholds.equal_reviewer_noise or model.noise is not None)
    )


@dataclass(frozen=True)
class SelfReviews:
    """The session's scored self-reviews: every one (for the raw differences) and those
    inside the fitted rows and columns (``fit_cells``: local indexes and score)."""

    rows: list[int]
    columns: list[int]
    fit_cells: list[tuple[int, int, float]]
    fit_names: list[str]


def self_reviews(table: ScoreTable, model: SessionModel) -> SelfReviews:
    """The scored self-reviews, located in the fit's local indexes where they fall inside."""
    row_lookup = {int(row): local for local, row in enumerate(model.active_rows)}
    column_lookup = {int(col): local for local, col in enumerate(model.active_columns)}
    self_rows, self_columns = np.nonzero(table.is_self & ~np.isnan(table.scores))
    rows, columns = self_rows.tolist(), self_columns.tolist()
    fit_cells: list[tuple[int, int, float]] = []
    fit_names: list[str] = []
    if model.fit is not None:
        for row, col in zip(rows, columns, strict=True):
            if row in row_lookup and col in column_lookup:
                fit_cells.append(
                    (row_lookup[row], column_lookup[col], float(table.scores[row, col]))
                )
                fit_names.append(table.reviewers[row])
    return SelfReviews(rows, columns, fit_cells, fit_names)


def reviewers_note(
    model: SessionModel, thresholds: AuditThresholds, priors: ModeratedNoise | None
) -> str | None:
    """``indicator_only["reviewers"]``: why the reviewer tests did not run, rest on little,
    or where each reviewer's moderated noise came from; ``None`` when nothing to say."""
    residual_df = model.residual_df
    if model.fit is None:
        return (
            "the scores do not identify reviewer and answer effects (too few reviewers, "
            "answers or overlapping scores): no leniency, position or self-preference test"
        )
    if priors is not None:
        return moderation_note(priors, residual_df)
    if residual_df < thresholds.minimum_test_df:
        return (
            f"only {residual_df} residual degree(s) of freedom (a complete 3-member council "
            "with self-reviews excluded has 1): a t test on so little noise information "
            "cannot detect a bias, so leniency and self-preference are not tested; offsets "
            "and self-preference are estimates only"
        )
    if model.fit.residual_variance == 0.0:
        return (
            "the scores fit reviewer + answer effects exactly (no residual variation): "
            "there is no noise to test against, so leniency and self-preference are not tested"
        )
    if not reviewer_tests_runnable(model, thresholds):
        return (
            "the scores do not estimate each reviewer's own noise (a reviewer with no "
            "residual information): leniency and self-preference are not tested; set "
            "equal_reviewer_noise to test them under equal noise"
        )
    if residual_df < thresholds.minimum_residual_df:
        return (
            f"only {residual_df} residual degrees of freedom: leniency, position and "
            "self-preference tests keep their false-positive rates but have little power"
        )
    return None


def reviewer_summaries(
    table: ScoreTable, model: SessionModel
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """Mean and sample variance (ddof 1) of the scores each reviewer gave others' answers."""
    scored = ~np.isnan(model.others_scores)
    counts = scored.sum(axis=1)
    filled = np.where(scored, model.others_scores, 0.0)
    sums = filled.sum(axis=1)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    squares = np.where(scored, (model.others_scores - means[:, None]) ** 2, 0.0).sum(axis=1)
    variances = np.divide(squares, counts - 1, out=np.zeros_like(sums), where=counts > 1)
    # plain Python values once, not a numpy scalar per reviewer (same doubles)
    count_list, mean_list, variance_list = counts.tolist(), means.tolist(), variances.tolist()
    mean_scores = {
        name: mean if count > 0 else None
        for name, count, mean in zip(table.reviewers, count_list, mean_list, strict=True)
    }
    score_variances = {
        name: variance if count > 1 else None
        for name, count, variance in zip(table.reviewers, count_list, variance_list, strict=True)
    }
    return mean_scores, score_variances
