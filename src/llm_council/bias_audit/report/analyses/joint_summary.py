"""The joint bias model (:mod:`.joint`) from merged per-session summaries (ADR 0077).

A session's summary is the additive sums of the absorbed, cluster-robust least squares
(:mod:`llm_council.stats.design.absorbed_sums`) over a design coded so it does not depend
on other sessions: one column per reviewer for leniency, one per reviewer for ln(words)
(not yet centred), one per slot after A, one per reviewer for self-review (``3R + S - 1``
columns for R reviewers and S slots). ``finish`` maps those sums to the coded design of
:func:`.joint.fit_joint_model` (reviewer 0 and slot A as references, verbosity centred on
the mean ln(words) of all scored records, self-review columns only for reviewers that
reviewed themselves) by a linear transform ``T``, so the fit equals the full one up to
rounding. A summary of other reviewers, models or slots is widened (zero columns) before
two are added.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
from scipy import sparse

from llm_council.bias_audit.report.analyses.joint import (
    JointFit,
    design_blocks,
    joint_effects,
    position_wald,
    records_by_answer,
    table_names,
)
from llm_council.bias_audit.report.estimates import JointModel
from llm_council.stats.design.absorbed_sums import (
    AbsorbedClusterSums,
    absorbed_cluster_sums,
    add_absorbed_sums,
    embed_absorbed_sums,
    ols_absorbed_cluster_robust_from_sums,
    transform_absorbed_sums,
)
from llm_council.stats.design.joint_model import group_sum_matrix

_SUM_ARRAYS = ("gram", "cross", "score_outer", "gram_score", "gram_outer")
_COUNTS = ("n_observations", "n_groups", "n_clusters")


@dataclass(frozen=True)
class JointSummary:
    """The sums of the sessions summarized, over the session-free coding (module doc).

    ``column_sums``: each column's sum over records (reviewers' record counts, their ln(words)
    sums, slot and self-review counts); per model (``models`` order): its answers, the sum
    over them of their mean score and of their mean design row.
    """

    reviewers: tuple[str, ...]
    models: tuple[str, ...]
    n_slots: int
    sums: AbsorbedClusterSums
    column_sums: np.ndarray  # (p,)
    model_answers: np.ndarray  # (M,)
    model_mean_score: np.ndarray  # (M,)
    model_mean_design: np.ndarray  # (M, p)


def n_columns(n_reviewers: int, n_slots: int) -> int:
    """Columns of the session-free coding: leniency, ln(words), slots B.., self-review."""
    return 3 * n_reviewers + n_slots - 1


def _column_map(summary: JointSummary, reviewers: Sequence[str], n_slots: int) -> np.ndarray:
    """Where each column of ``summary`` goes in the coding of ``reviewers`` and ``n_slots``."""
    position = {name: index for index, name in enumerate(reviewers)}
    at = np.array([position[name] for name in summary.reviewers], dtype=np.int64)
    n_reviewers = len(reviewers)
    slots = np.arange(summary.n_slots - 1, dtype=np.int64)
    return np.concatenate(
        [at, n_reviewers + at, 2 * n_reviewers + slots, 2 * n_reviewers + n_slots - 1 + at]
    )


def _widened(
    summary: JointSummary, reviewers: Sequence[str], models: Sequence[str], n_slots: int
) -> JointSummary:
    """``summary`` over the (wider) reviewers, models and slots given (zero columns)."""
    if (summary.reviewers, summary.models, summary.n_slots) == (
        tuple(reviewers),
        tuple(models),
        n_slots,
    ):
        return summary
    columns = _column_map(summary, reviewers, n_slots)
    width = n_columns(len(reviewers), n_slots)
    model_at = np.array([models.index(name) for name in summary.models], dtype=np.int64)
    column_sums = np.zeros(width)
    column_sums[columns] = summary.column_sums
    model_answers, model_mean_score = np.zeros(len(models)), np.zeros(len(models))
    model_answers[model_at] = summary.model_answers
    model_mean_score[model_at] = summary.model_mean_score
    model_mean_design = np.zeros((len(models), width))
    model_mean_design[np.ix_(model_at, columns)] = summary.model_mean_design
    return JointSummary(
        tuple(reviewers),
        tuple(models),
        n_slots,
        embed_absorbed_sums(summary.sums, columns, width),
        column_sums,
        model_answers,
        model_mean_score,
        model_mean_design,
    )


def _session_free_design(
    records: Mapping[str, np.ndarray], n_reviewers: int, n_slots: int
) -> sparse.csr_matrix:
    """The CSR design of the session-free coding: four stored entries a row (an explicit 0
    at column 0 for slot A or below, and for a record that is not a self-review's)."""
    reviewer = records["reviewer_index"].astype(np.int64)
    position = records["position"].astype(np.int64)
    n_rows = reviewer.size
    on_slot = position >= 1
    columns = np.column_stack(
        [
            reviewer,
            n_reviewers + reviewer,
            np.where(on_slot, 2 * n_reviewers + position - 1, 0),
            2 * n_reviewers + n_slots - 1 + reviewer,
        ]
    )
    values = np.column_stack(
        [np.ones(n_rows), records["log_words"], on_slot.astype(float), records["is_self"]]
    )
    return sparse.csr_matrix(
        (values.ravel(), columns.ravel(), np.arange(0, 4 * n_rows + 1, 4)),
        shape=(n_rows, n_columns(n_reviewers, n_slots)),
    )


def _per_model(
    design: sparse.csr_matrix, score: np.ndarray, answer: np.ndarray, n_models: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: its answers, and the sums over them of the mean score and design row."""
    answers, of_row, answer_sizes = np.unique(answer, return_inverse=True, return_counts=True)
    weight = 1.0 / answer_sizes[of_row.ravel()]
    model_of_row = (answer % n_models).astype(np.int64)
    model_answers = np.bincount(answers % n_models, minlength=n_models).astype(float)
    mean_score = np.bincount(model_of_row, weights=score * weight, minlength=n_models)
    grouping = group_sum_matrix(np.r_[model_of_row, n_models - 1], np.r_[weight, 0.0])
    mean_design = np.asarray((grouping[:, :-1] @ design).todense()).reshape(n_models, -1)
    return model_answers, mean_score, mean_design


def _coding_transform(
    blocks: list[tuple[str, list[str], int]],
    n_reviewers: int,
    n_slots: int,
    self_reviewers: np.ndarray,
    mean_log_words: float,
) -> np.ndarray:
    """``T``: the session-free columns to :func:`.joint.fit_joint_model`'s coded columns."""
    width = sum(block_width for _, _, block_width in blocks)
    transform = np.zeros((n_columns(n_reviewers, n_slots), width))
    start = 0
    for group, _, block_width in blocks:
        coded = np.arange(start, start + block_width)
        if group == "reviewer_leniency":
            transform[np.arange(1, n_reviewers), coded] = 1.0
        elif group == "reviewer_verbosity":  # ln(words) - mean = raw column - mean x leniency
            transform[n_reviewers + np.arange(1, n_reviewers), coded] = 1.0
            transform[np.arange(1, n_reviewers), coded] = -mean_log_words
        elif group == "position":
            transform[2 * n_reviewers + np.arange(n_slots - 1), coded] = 1.0
        else:  # self_review
            transform[2 * n_reviewers + n_slots - 1 + self_reviewers, coded] = 1.0
        start += block_width
    return transform


class JointModelSection:
    """:func:`.joint.fit_joint_model` as a dependent incremental section (ADRs 0073, 0077):
    ``finish(summary, reference=..., forced_choice=...)``."""

    name = "joint_model"
    version = 1
    needs_inputs = True

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> JointSummary:
        reviewers = table_names(connection, "reviewers", "reviewer")
        models = table_names(connection, "models", "model")
        n_models = max(len(models), 1)
        records = records_by_answer(connection, n_models)
        score, answer = records["score"], records["answer"]
        n_slots = int(records["position"].max()) + 1 if score.size else 1
        n_slots = max(n_slots, 1)
        design = _session_free_design(records, len(reviewers), n_slots)
        del records
        sums = absorbed_cluster_sums(design, score, answer, answer // n_models)
        return JointSummary(
            tuple(reviewers),
            tuple(models),
            n_slots,
            sums,
            np.asarray(design.sum(axis=0), dtype=float).ravel(),
            *_per_model(design, score, answer, n_models),
        )

    def merge(self, saved: JointSummary, new: JointSummary) -> JointSummary:
        reviewers = sorted(set(saved.reviewers) | set(new.reviewers))
        models = sorted(set(saved.models) | set(new.models))
        n_slots = max(saved.n_slots, new.n_slots)
        first = _widened(saved, reviewers, models, n_slots)
        second = _widened(new, reviewers, models, n_slots)
        return JointSummary(
            first.reviewers,
            first.models,
            n_slots,
            add_absorbed_sums(first.sums, second.sums),
            first.column_sums + second.column_sums,
            first.model_answers + second.model_answers,
            first.model_mean_score + second.model_mean_score,
            first.model_mean_design + second.model_mean_design,
        )

    def finish(
        self,
        summary: JointSummary,
        *,
        reference: Collection[str] | None = None,
        forced_choice: bool = False,
    ) -> JointFit | None:
        return joint_fit_from_summary(summary, reference, forced_choice)

    def to_payload(self, summary: JointSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {
            "reviewers": list(summary.reviewers),
            "models": list(summary.models),
            "n_slots": summary.n_slots,
            **{name: int(getattr(summary.sums, name)) for name in _COUNTS},
        }
        arrays = {name: getattr(summary.sums, name) for name in _SUM_ARRAYS}
        arrays["response_squares"] = np.array([summary.sums.response_squares])
        for name in ("column_sums", "model_answers", "model_mean_score", "model_mean_design"):
            arrays[name] = getattr(summary, name)
        return meta, arrays

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> JointSummary:
        return joint_summary_from_payload(meta, arrays)


def _names_field(meta: Mapping[str, Any], field: str) -> tuple[str, ...]:
    names = meta.get(field)
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"joint model summary: {field!r} is not a list of names")
    if names != sorted(set(names)):
        raise ValueError(f"joint model summary: {field!r} is not sorted and distinct")
    return tuple(names)


def _count_field(meta: Mapping[str, Any], field: str, least: int = 0) -> int:
    value = meta.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"joint model summary: {field!r} is not an integer >= {least}")
    return value


def joint_summary_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> JointSummary:
    """:meth:`JointModelSection.to_payload`'s output back; ValueError naming the field."""
    reviewers, models = _names_field(meta, "reviewers"), _names_field(meta, "models")
    n_slots = _count_field(meta, "n_slots", 1)
    width = n_columns(len(reviewers), n_slots)
    half = width * (width + 1) // 2
    shapes = {
        "gram": (width, width),
        "cross": (width,),
        "score_outer": (width, width),
        "gram_score": (half, width),
        "gram_outer": (half, half),
        "response_squares": (1,),
        "column_sums": (width,),
        "model_answers": (len(models),),
        "model_mean_score": (len(models),),
        "model_mean_design": (len(models), width),
    }
    for field, shape in shapes.items():
        array = arrays.get(field)
        if array is None:
            raise ValueError(f"joint model summary: no array {field!r}")
        if array.shape != shape or array.dtype != np.float64:
            raise ValueError(f"joint model summary: {field!r} is not float64 of shape {shape}")
        if not np.isfinite(array).all():
            raise ValueError(f"joint model summary: {field!r} holds a non-finite number")
    sums = AbsorbedClusterSums(
        n_observations=_count_field(meta, "n_observations"),
        n_groups=_count_field(meta, "n_groups"),
        n_clusters=_count_field(meta, "n_clusters"),
        gram=arrays["gram"],
        cross=arrays["cross"],
        response_squares=float(arrays["response_squares"][0]),
        score_outer=arrays["score_outer"],
        gram_score=arrays["gram_score"],
        gram_outer=arrays["gram_outer"],
    )
    return JointSummary(
        reviewers,
        models,
        n_slots,
        sums,
        arrays["column_sums"],
        arrays["model_answers"],
        arrays["model_mean_score"],
        arrays["model_mean_design"],
    )


def joint_fit_from_summary(
    summary: JointSummary, reference: Collection[str] | None, forced_choice: bool
) -> JointFit | None:
    """:func:`.joint.fit_joint_model`'s result from the summary of every session (None
    under the same conditions: under 3 scores, no block, no residual degrees of freedom or
    a single session)."""
    sums, n_reviewers = summary.sums, len(summary.reviewers)
    n = sums.n_observations
    if n < 3:
        return None
    reviewer_sums = summary.column_sums
    self_start = 2 * n_reviewers + summary.n_slots - 1
    self_reviewers = np.flatnonzero(reviewer_sums[self_start:] > 0)
    blocks = design_blocks(list(summary.reviewers), summary.n_slots, self_reviewers)
    width = sum(block_width for _, _, block_width in blocks)
    if not blocks or sums.n_groups + width >= n or sums.n_clusters < 2:
        return None
    mean_log_words = float(reviewer_sums[n_reviewers : 2 * n_reviewers].sum() / n)
    transform = _coding_transform(
        blocks, n_reviewers, summary.n_slots, self_reviewers, mean_log_words
    )
    summed = ols_absorbed_cluster_robust_from_sums(transform_absorbed_sums(sums, transform))
    fit = summed.fit
    effects, position_slice = joint_effects(fit, blocks, reference, forced_choice)
    nan = float("nan")
    position_identified = position_slice.stop > position_slice.start and all(
        effect.identified for effect in effects if effect.group == "position"
    )
    wald_f, wald_p = position_wald(fit, position_slice) if position_identified else (nan, nan)
    # answer effects: alpha_a = mean score - mean coded row . beta, shifted so their
    # record-weighted mean is the mean score (:func:`adjusted_means_by_model`)
    beta = transform @ fit.coefficients
    shift = float(summary.column_sums @ beta) / n
    adjusted = {
        model: float(
            (summary.model_mean_score[i] - summary.model_mean_design[i] @ beta)
            / summary.model_answers[i]
            + shift
        )
        for i, model in enumerate(summary.models)
        if summary.model_answers[i] > 0
    }
    dof = max(n - sums.n_groups - width, 1)
    return JointFit(
        model=JointModel(
            effects=effects,
            n_records=n,
            n_answers=sums.n_groups,
            n_sessions=fit.n_clusters,
            position_wald_f=float(wald_f),
            position_wald_p=float(wald_p),
            position_identified=position_identified,
            residual_sd=float(np.sqrt(summed.residual_squares / dof)),
        ),
        adjusted_mean_by_model=adjusted,
    )


JOINT_MODEL = JointModelSection()
