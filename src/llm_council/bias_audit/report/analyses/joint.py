"""The joint bias model: every bias estimated at once, so confounded biases separate.

    score[s, r, m] = alpha[s, m] + leniency[r] + position[slot] + self[r] * is_self
                     + verbosity[r] * (ln(words[s, m]) - mean ln(words)) + error

``alpha[s, m]`` is one fixed effect per answer (absorbed by demeaning within the answer),
so answer quality, including any real link between length and quality, is held fixed.
That is also why only *differential* verbosity is identified: ln(words) is constant within
an answer, so what the model can see is how much more one reviewer rewards length than the
others (centred: the reviewers' verbosities sum to 0). The council-wide length effect is
the pooled correlation of :mod:`length`. Leniencies are centred the same way; positions are
relative to slot A (0). Self-preference is per reviewer (a bonus to its own answer beyond
its leniency and its taste for length, against the other reviewers of that same answer).
Intervals are session-clustered (CR1).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import JointEffect, JointModel
from llm_council.bias_audit.report.load.tables import scores_sum_to_a_constant
from llm_council.stats.bias_effects.joint_blocks import (
    adjusted_means_by_model,
    block_design,
    centred_block_effects,
    coded_block_effects,
)
from llm_council.stats.design.joint_model import (
    ClusteredOlsFit,
    ols_absorbed_cluster_robust,
    wald_test,
)


@dataclass(frozen=True)
class JointFit:
    """The model summary plus the per-model adjusted scores (the extra, labelled view)."""

    model: JointModel
    adjusted_mean_by_model: dict[str, float]


def records_by_answer(
    connection: duckdb.DuckDBPyConnection, n_models: int
) -> dict[str, np.ndarray]:
    """Every scored record's model inputs as typed arrays, rows ordered by answer id
    (``session * n_models + model_index``; ``answer`` holds it).

    In answer order every block of answers or sessions that the fit sums over is one slice
    of rows (:mod:`llm_council.stats.design.design_products`), not a scan of all rows per block.
    Each column is reordered as it is converted, so one fetched column extra is held.
    """
    columns = connection.execute(
        """SELECT session, model_index, reviewer_index, position,
                  ln(greatest(words, 1)) AS log_words,
                  is_self, score
           FROM scored"""
    ).fetchnumpy()
    answer = np.asarray(columns.pop("session"), dtype=np.int64) * n_models
    answer += columns.pop("model_index")
    # stable: rows of one answer keep their order, so its sums are added in the same order
    by_answer = np.argsort(answer, kind="stable")
    # small codes as int32 (half the memory of int64 while the design is built)
    kinds = {"reviewer_index": np.int32, "position": np.int32, "is_self": float}
    records = {"answer": answer[by_answer]}
    del answer
    for name in list(columns):
        reordered = np.asarray(columns.pop(name))[by_answer]
        records[name] = reordered.astype(kinds.get(name, float), copy=False)
    return records


def joint_effects(
    fit: ClusteredOlsFit,
    blocks: list[tuple[str, list[str], int]],
    leniency_reference: Collection[str] | None,
    forced_choice: bool,
) -> tuple[list[JointEffect], slice]:
    """Every block's named effects (reviewer blocks centred), and the position block's columns."""
    intervals = fit.confidence_intervals()
    effects: list[JointEffect] = []
    start = 0
    position_slice = slice(0, 0)
    nan = float("nan")
    for group, names, width in blocks:
        block_slice = slice(start, start + width)
        if group in ("reviewer_leniency", "reviewer_verbosity"):
            reference = None
            if group == "reviewer_leniency" and leniency_reference:
                reference = np.array([name in leniency_reference for name in names])
                reference = reference if reference.any() else None
            block = centred_block_effects(fit, block_slice, reference)
        else:
            block = coded_block_effects(fit, block_slice, intervals)
            if group == "position":
                position_slice = block_slice
        identified = block.identified
        if group == "reviewer_leniency" and forced_choice:
            identified[:] = False  # the scale fixes every reviewer's level in a session
        for name, estimate, low, high, se, ok in zip(
            names,
            block.estimates,
            block.ci_low,
            block.ci_high,
            block.standard_errors,
            identified,
            strict=True,
        ):
            values = (float(estimate), float(low), float(high), float(se)) if ok else (nan,) * 4
            effects.append(JointEffect(name, group, *values, identified=bool(ok)))
        start += width
    return effects, position_slice


def position_wald(fit: ClusteredOlsFit, position_slice: slice) -> tuple[float, float]:
    """(F, p) of all slots equal to slot A; NaN when the covariance is singular.

    A singular covariance hides a slot effect that never varied (issue 23): no p-value
    rather than one blind to it; the position section tests it by randomization.
    """
    wald = wald_test(
        fit.coefficients[position_slice],
        fit.covariance[position_slice, position_slice],
        fit.n_clusters,
    )
    if wald.singular:
        return float("nan"), float("nan")
    return wald.f_statistic, wald.p_value


def table_names(connection: duckdb.DuckDBPyConnection, table: str, column: str) -> list[str]:
    """The ``column`` of ``table`` (reviewers or models) in index order."""
    return [
        name
        for (name,) in connection.execute(
            f"SELECT {column} FROM {table} ORDER BY {column}_index"
        ).fetchall()
    ]


def design_blocks(
    reviewer_names: list[str], n_slots: int, self_reviewers: np.ndarray
) -> list[tuple[str, list[str], int]]:
    """The joint model's term groups: ``(group, term names, columns)``, those identified."""
    n_reviewers = len(reviewer_names)
    blocks: list[tuple[str, list[str], int]] = []
    if n_reviewers >= 2:
        blocks.append(("reviewer_leniency", reviewer_names, n_reviewers - 1))
        blocks.append(("reviewer_verbosity", reviewer_names, n_reviewers - 1))
    if n_slots >= 2:
        slot_names = [f"slot {chr(65 + i)}" for i in range(1, n_slots)]
        blocks.append(("position", slot_names, n_slots - 1))
    if self_reviewers.size:
        self_names = [reviewer_names[i] for i in self_reviewers]
        blocks.append(("self_review", self_names, int(self_reviewers.size)))
    return blocks


def _adjusted_view(
    fit: ClusteredOlsFit,
    score: np.ndarray,
    raw_design: np.ndarray,
    answer: np.ndarray,
    model_names: list[str],
) -> tuple[dict[str, float], int, float]:
    """The extra view's mean answer effect per model, the number of answers and the
    residual sd (answer effects alpha = within-answer mean of score - X beta)."""
    n_models = len(model_names)
    per_model_sum, per_model_count, n_answers = adjusted_means_by_model(
        score, raw_design, fit.coefficients, answer, n_models
    )
    adjusted = {
        model_names[i]: float(per_model_sum[i] / per_model_count[i])
        for i in range(n_models)
        if per_model_count[i] > 0
    }
    dof = max(fit.n_observations - n_answers - raw_design.shape[1], 1)
    residual_sd = float(np.sqrt((fit.residuals**2).sum() / dof))
    return adjusted, n_answers, residual_sd


def fit_joint_model(
    connection: duckdb.DuckDBPyConnection,
    leniency_reference: Collection[str] | None = None,
    *,
    forced_choice: bool | None = None,
) -> JointFit | None:
    """Fit the joint model on every scored record; None when there is too little data.

    Leniencies are centred on the mean of the ``leniency_reference`` reviewers (the robust
    reference of the reviewer profiles) when given, so one outlying reviewer does not shift
    every other reviewer's leniency; verbosities are centred on all reviewers.
    ``forced_choice`` is :func:`scores_sum_to_a_constant` when the caller has it already.
    """
    reviewer_names = table_names(connection, "reviewers", "reviewer")
    model_names = table_names(connection, "models", "model")
    records = records_by_answer(connection, len(model_names))
    answer, score = records["answer"], records["score"]
    if score.size < 3:
        return None
    reviewer, position = records["reviewer_index"], records["position"]
    is_self = records["is_self"]
    # centred, so each leniency is the reviewer's offset at the average answer length
    log_words = records["log_words"] - records["log_words"].mean()
    del records
    n_reviewers, n_models = len(reviewer_names), len(model_names)

    # The design is filled by index (no dense dummy temporaries): a million rows x 17
    # columns built by broadcasting comparisons costs more than the whole fit.
    self_reviewers = np.flatnonzero(np.bincount(reviewer[is_self > 0], minlength=n_reviewers))
    blocks = design_blocks(reviewer_names, int(position.max()) + 1, self_reviewers)
    if not blocks:
        return None
    raw_design = block_design(
        [(kind, width) for kind, _, width in blocks],
        reviewer,
        position,
        is_self,
        log_words,
        self_reviewers,
        n_reviewers,
    )
    offset = raw_design.shape[1]
    # the design holds what the fit needs of these per-record arrays (about 0.3 GB at 10M)
    del reviewer, position, log_words, is_self
    # group ids need not be dense: empty groups are never indexed
    session = answer // n_models
    n_answers_total = int(np.count_nonzero(np.bincount(answer)))
    if n_answers_total + offset >= score.size or np.count_nonzero(np.bincount(session)) < 2:
        return None  # no residual degrees of freedom, or a single session: nothing to infer
    fit = ols_absorbed_cluster_robust(raw_design, score, answer, session)
    nan = float("nan")

    if forced_choice is None:
        forced_choice = scores_sum_to_a_constant(connection)
    effects, position_slice = joint_effects(fit, blocks, leniency_reference, forced_choice)
    position_identified = position_slice.stop > position_slice.start and all(
        effect.identified for effect in effects if effect.group == "position"
    )
    wald_f, wald_p = position_wald(fit, position_slice) if position_identified else (nan, nan)
    adjusted, n_answers, residual_sd = _adjusted_view(fit, score, raw_design, answer, model_names)
    return JointFit(
        model=JointModel(
            effects=effects,
            n_records=fit.n_observations,
            n_answers=n_answers,
            n_sessions=fit.n_clusters,
            position_wald_f=float(wald_f),
            position_wald_p=float(wald_p),
            position_identified=position_identified,
            residual_sd=residual_sd,
        ),
        adjusted_mean_by_model=adjusted,
    )
