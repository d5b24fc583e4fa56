"""Compute a :class:`BiasAuditResult` from a :class:`ScoreTable`.

This module gathers arrays from the table, calls the pure tests in
:mod:`llm_council.stats`, applies the thresholds and packages the result. Self-reviews
are left out of the length, position and leniency statistics (a reviewer's view of its
own answer is a different question) and used only for self-preference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile
from llm_council.bias_audit.session.audit_methods import METHODS, pooled_self_preference_note
from llm_council.bias_audit.session.design_limits import (
    has_one_shared_order,
    is_rank_only,
    leniency_not_tested,
    self_preference_confounded,
)
from llm_council.bias_audit.session.history_exclusion import history_without_session
from llm_council.bias_audit.session.moderated_noise import (
    ModeratedNoise,
    moderated_noise,
    moderated_self_preference,
    moderation_note,
    slot_moderated_noise,
)
from llm_council.bias_audit.session.noise_priors import History, history_profiles
from llm_council.bias_audit.session.result import BiasAuditResult, RiskLevel
from llm_council.bias_audit.session.score_table import (
    UNKNOWN_POSITION,
    ScoreTable,
    score_table_from_mappings,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds
from llm_council.prompts import label_for
from llm_council.stats.additive_model import AdditiveFit
from llm_council.stats.correlation import pearson_correlation_t_test
from llm_council.stats.design_cache import fit_additive_two_way_cached
from llm_council.stats.moderated_session_tests import step_down_moderated_offsets
from llm_council.stats.position_tests import joint_slot_effects, position_randomization_test
from llm_council.stats.reviewer_noise import ReviewerNoise, estimate_reviewer_noise
from llm_council.stats.session_test_batch import SessionTests, session_noise_aware_tests
from llm_council.stats.session_tests import (
    median_reference_offsets,
    pooled_self_preference_test,
    self_preference_tests,
    step_down_reviewer_offsets,
)
from llm_council.stats.slot_wald import slot_wald_test


def _finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _risk_level(flag_count: int, tests_run: int) -> RiskLevel:
    """``not_tested`` when no risk test ran: "no flag" from no test is not "low"."""
    if flag_count == 0:
        return "low" if tests_run else "not_tested"
    return "medium" if flag_count == 1 else "high"


def _risk_tests_run(
    position: Mapping[str, Any],
    leniency: Mapping[str, Any],
    self_pref: Mapping[str, Any],
    *,
    self_preference_confounded: bool = False,
) -> list[str]:
    """The risk tests that produced a p-value (a test that did not run leaves None); a
    self-preference test confounded with the display slot did not test self-preference."""
    ran = {
        "position": position["position_score_p_value"] is not None,
        "leniency": any(p is not None for p in leniency["reviewer_offset_p_values"].values()),
        "self_preference": not self_preference_confounded
        and (
            self_pref["pooled_self_preference_p_value"] is not None
            or any(p is not None for p in self_pref["self_preference_p_values"].values())
        ),
    }
    return [name for name, done in ran.items() if done]


@dataclass(frozen=True)
class _SessionModel:
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


def _fit_session(table: ScoreTable, thresholds: AuditThresholds) -> _SessionModel:
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
    return _SessionModel(
        others_scores, active_rows, active_columns, active_scores, consensus, fit, noise
    )


def _reviewer_tests_runnable(model: _SessionModel, thresholds: AuditThresholds) -> bool:
    """Enough residual df, and per-reviewer noise estimated unless assumed equal."""
    return (
        model.fit is not None
        and model.fit.residual_df >= thresholds.minimum_test_df
        and (thresholds.equal_reviewer_noise or model.noise is not None)
    )


def _length_fields(
    table: ScoreTable, model: _SessionModel, thresholds: AuditThresholds, notes: dict[str, str]
) -> dict[str, Any]:
    """Length vs score, one pair per answer so pairs are independent under the null."""
    log_words = np.log(np.maximum(table.length_words, 1.0))
    correlation = pearson_correlation_t_test(log_words, model.consensus)
    few_pairs = (
        f"only {correlation.n_pairs} length-score pairs, so the test has little power; "
        if correlation.n_pairs < thresholds.minimum_length_pairs
        else ""
    )
    notes["length"] = (
        f"{few_pairs}length_score_correlation is the correlation of answer length with the "
        "consensus score: it cannot tell 'judges reward length' from 'longer answers were "
        "better', so length_bias_detected never raises overall_bias_risk. The padding "
        "probe and `llm-council bias-report`'s reviewer x length term separate the two"
    )
    detected = (
        correlation.r is not None
        and correlation.p_value is not None
        and correlation.p_value < thresholds.significance_level
        and abs(correlation.r) >= thresholds.length_correlation_threshold
    )
    return {
        "length_score_correlation": _finite_or_none(correlation.r),
        "length_score_p_value": _finite_or_none(correlation.p_value),
        "length_bias_detected": detected,
        "length_score_pairs": correlation.n_pairs,
    }


def _position_fields(
    table: ScoreTable,
    model: _SessionModel,
    thresholds: AuditThresholds,
    notes: dict[str, str],
    permutation_seed: int,
    names: list[str],
    history: History,
) -> dict[str, Any]:
    """Slot effects within reviewers: tested against each reviewer's noise from its history
    of the model with slot effects when every reviewer has one and every slot is known
    (:mod:`~llm_council.stats.slot_wald`), else by re-drawing
    each reviewer's display order (valid at any size, no noise model)."""
    fields: dict[str, Any] = {
        "position_score_variance": None,
        "position_score_p_value": None,
        "position_slot_means": {},
        "position_bias_detected": None,  # not tested (the reference's None, ADR 0039)
    }
    fit = model.fit
    if fit is None:
        return fields
    row_ids = model.active_rows[fit.rows]
    slots = table.positions[row_ids, model.active_columns[fit.columns]]
    known = slots != UNKNOWN_POSITION
    all_known = bool(known.all())
    # every slot known (the middleware's case): the fit's own arrays, no masked copies
    known_slots, design, residuals, reviewer_ids = (
        (slots, fit.design, fit.residuals, row_ids)
        if all_known
        else (slots[known], fit.design[known], fit.residuals[known], row_ids[known])
    )
    if known_slots.size == 0 or known_slots.min() == known_slots.max():
        notes["position"] = "fewer than two known display positions: position not tested"
        return fields
    # identifiability first: a slot effect confounded with the answers (one shared order,
    # or too few reviewers) has no estimate and no test, whatever a solver would return
    slot_effects = joint_slot_effects(
        design,
        residuals,
        known_slots,
        covariance_unscaled=fit.covariance_unscaled if all_known else None,
        annihilator=model.noise.annihilator if all_known and model.noise is not None else None,
    )
    if slot_effects is None:
        notes["position"] = (
            "slot effects are not identified: the display slots are confounded with the "
            "answers (every reviewer saw the same order, or too few reviewers and orders), "
            "so position is neither estimated nor tested"
        )
        return fields
    slot_noise = (
        slot_moderated_noise(fit, slots, names, thresholds, history)
        if all_known and history
        else None
    )
    if slot_noise is not None:
        history_test = slot_wald_test(
            design,
            fit.observed,
            known_slots,
            slot_noise.noise.moderated[fit.rows],
            float(slot_noise.noise.moderated_df.min()),
        )
        if history_test is not None:
            notes["position"] = (
                "slot effects tested against each reviewer's noise from its past sessions "
                f"(weighted Wald test, F({history_test.numerator_df}, "
                f"{history_test.denominator_df:.0f})); the estimate is this session's"
            )
            return _position_result(
                fields,
                history_test.weighted_variance,
                history_test.p_value,
                history_test.effects,
                fit.observed,
                thresholds,
                notes,
                "Wald",
            )
    position = position_randomization_test(
        residuals,
        known_slots,
        reviewer_ids,
        n_permutations=thresholds.position_permutations,
        seed=permutation_seed,
    )
    if position is None:
        notes["position"] = "fewer than two known display positions: position not tested"
        return fields
    return _position_result(
        fields,
        slot_effects.weighted_variance,
        position.p_value,
        slot_effects.effects,
        fit.observed,
        thresholds,
        notes,
    )


def _position_result(
    fields: dict[str, Any],
    weighted_variance: float,
    p_value: float,
    effects: Mapping[int, float],
    scored: np.ndarray,
    thresholds: AuditThresholds,
    notes: dict[str, str],
    test_name: str = "randomization",
) -> dict[str, Any]:
    """The position fields from a tested slot-effect estimate: flagged when significant
    and the slot effects' variance reaches the threshold."""
    variance = _finite_or_none(weighted_variance)
    # values inside an interval of width w have a weighted variance of at most w^2 / 4
    # (Popoviciu 1935): slot effects beyond the scores' own spread are noise, not a number
    largest_possible = float(scored.max() - scored.min()) ** 2 / 4.0
    if variance is not None and variance > largest_possible:
        notes["position"] = (
            f"slot effects are only weakly identified: their variance ({variance:.3g} "
            f"points^2) exceeds the {largest_possible:.3g} the observed scores allow, so it is "
            f"not reported; the {test_name} p-value stays valid"
        )
        fields["position_score_p_value"] = p_value
        fields["position_bias_detected"] = False  # tested; the variance rule cannot fire
        return fields
    fields.update(
        position_score_variance=variance,
        position_score_p_value=p_value,
        position_slot_means={label_for(slot): value for slot, value in effects.items()},
        position_bias_detected=(
            variance is not None
            and p_value < thresholds.significance_level
            and variance >= thresholds.position_variance_threshold
        ),
    )
    return fields


def _leniency_fields(
    table: ScoreTable,
    model: _SessionModel,
    thresholds: AuditThresholds,
    batch: SessionTests | None,
    priors: ModeratedNoise | None,
) -> dict[str, Any]:
    """Each reviewer against the others on the same answers, Holm step-down."""
    offsets: dict[str, float | None] = dict.fromkeys(table.reviewers)
    robust_offsets: dict[str, float | None] = dict.fromkeys(table.reviewers)
    p_values: dict[str, float | None] = dict.fromkeys(table.reviewers)
    harsh: list[str] = []
    generous: list[str] = []
    if model.fit is not None:
        active_rows = model.active_rows.tolist()
        median_offsets = median_reference_offsets(model.fit)
        for local, offset in enumerate(median_offsets.tolist()):
            robust_offsets[table.reviewers[active_rows[local]]] = _finite_or_none(offset)
        verdicts: list[Any]
        if priors is not None:
            verdicts = step_down_moderated_offsets(
                model.active_scores,
                priors.variances,
                priors.dfs,
                significance_level=thresholds.significance_level,
                effect_floor=thresholds.reviewer_offset_floor,
                robust_offsets=median_offsets,
                first_fit=model.fit,
            )
        else:
            verdicts = step_down_reviewer_offsets(
                model.active_scores,
                significance_level=thresholds.significance_level,
                effect_floor=thresholds.reviewer_offset_floor,
                first_fit=model.fit,
                minimum_residual_df=thresholds.minimum_test_df,
                per_reviewer_noise=not thresholds.equal_reviewer_noise,
                first_noise=model.noise,
                first_tests=batch.reviewer_offsets if batch is not None else None,
            )
        for verdict in verdicts:
            name = table.reviewers[active_rows[verdict.reviewer_index]]
            offsets[name] = _finite_or_none(verdict.estimate)
            p_values[name] = _finite_or_none(verdict.p_value_adjusted)
            if verdict.flagged:
                (harsh if verdict.estimate < 0 else generous).append(name)
    return {
        "reviewer_offsets": offsets,
        "reviewer_offset_p_values": p_values,
        "reviewer_offsets_vs_median": robust_offsets,
        "harsh_reviewers": harsh,
        "generous_reviewers": generous,
    }


@dataclass(frozen=True)
class _SelfReviews:
    """The session's scored self-reviews: every one (for the raw differences) and those
    inside the fitted rows and columns (``fit_cells``: local indexes and score)."""

    rows: list[int]
    columns: list[int]
    fit_cells: list[tuple[int, int, float]]
    fit_names: list[str]


def _self_reviews(table: ScoreTable, model: _SessionModel) -> _SelfReviews:
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
    return _SelfReviews(rows, columns, fit_cells, fit_names)


def _self_preference_fields(
    table: ScoreTable,
    model: _SessionModel,
    thresholds: AuditThresholds,
    self_reviews: _SelfReviews,
    batch: SessionTests | None,
    priors: ModeratedNoise | None,
) -> dict[str, Any]:
    """Own score vs the others' mean (raw) and vs the model's prediction (tested)."""
    raw: dict[str, float | None] = {}
    adjusted: dict[str, float | None] = {}
    p_values: dict[str, float | None] = {}
    preferring: list[str] = []
    pooled_estimate: float | None = None
    pooled_p_value: float | None = None
    for row, col in zip(self_reviews.rows, self_reviews.columns, strict=True):
        name = table.reviewers[row]
        own_score = float(table.scores[row, col])
        others_mean = float(model.consensus[col])
        raw[name] = None if math.isnan(others_mean) else own_score - others_mean
        adjusted[name] = None
        p_values[name] = None
    fit_cells = self_reviews.fit_cells
    if model.fit is not None and fit_cells:
        testable = priors is not None or _reviewer_tests_runnable(model, thresholds)
        if priors is not None:
            tests, pooled = moderated_self_preference(model.fit, fit_cells, priors.noise)
        elif batch is not None:
            tests, pooled = batch.self_preference, batch.pooled_self_preference
        else:
            tests = self_preference_tests(model.fit, fit_cells, model.noise)
            pooled = pooled_self_preference_test(model.fit, fit_cells, model.noise)
        for name, test in zip(self_reviews.fit_names, tests, strict=True):
            adjusted[name] = _finite_or_none(test.estimate)
            p_values[name] = _finite_or_none(test.p_value_adjusted) if testable else None
            if (
                testable
                and test.p_value_adjusted is not None
                and test.p_value_adjusted < thresholds.significance_level
                and test.estimate >= thresholds.self_preference_floor
            ):
                preferring.append(name)
        if pooled is not None:
            pooled_estimate = _finite_or_none(pooled.estimate)
            pooled_p_value = _finite_or_none(pooled.p_value) if testable else None
    # moderated noise: the council-wide mean is tested beside the reviewers, each family
    # at half the level (Bonferroni over the two), so the flag keeps its rate
    pooled_detected = (
        priors is not None
        and pooled_p_value is not None
        and pooled_estimate is not None
        and pooled_p_value < thresholds.significance_level / 2.0
        and pooled_estimate >= thresholds.self_preference_floor
    )
    return {
        "self_preference": raw,
        "self_preference_adjusted": adjusted,
        "self_preference_p_values": p_values,
        "self_preferring_reviewers": preferring,
        "self_preference_detected": bool(preferring) or pooled_detected,
        "pooled_self_preference": pooled_estimate,
        "pooled_self_preference_p_value": pooled_p_value,
        "n_self_reviews": len(self_reviews.rows),
    }


def _reviewer_summaries(table: ScoreTable, model: _SessionModel) -> dict[str, Any]:
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
    return {
        "reviewer_mean_scores": {
            name: mean if count > 0 else None
            for name, count, mean in zip(table.reviewers, count_list, mean_list, strict=True)
        },
        "reviewer_score_variance": {
            name: variance if count > 1 else None
            for name, count, variance in zip(
                table.reviewers, count_list, variance_list, strict=True
            )
        },
    }


def audit_score_table(
    table: ScoreTable,
    thresholds: AuditThresholds,
    *,
    permutation_seed: int = 0,
    history: History | None = None,
) -> BiasAuditResult:
    """Every per-session statistic and flag for one session's score table.

    ``history``: the reviewers' noise profiles from past sessions (ADR 0045); without it
    each reviewer's session variance is moderated toward the default prior.
    """
    model = _fit_session(table, thresholds)
    fitted_names = [table.reviewers[row] for row in model.active_rows.tolist()]
    priors = (
        moderated_noise(model.fit, fitted_names, thresholds, history or {})
        if model.fit is not None
        else None
    )
    notes: dict[str, str] = {}
    residual_df = model.fit.residual_df if model.fit is not None else 0
    if model.fit is None:
        notes["reviewers"] = (
            "the scores do not identify reviewer and answer effects (too few reviewers, "
            "answers or overlapping scores): no leniency, position or self-preference test"
        )
    elif priors is not None:
        notes["reviewers"] = moderation_note(priors, residual_df)
    elif residual_df < thresholds.minimum_test_df:
        notes["reviewers"] = (
            f"only {residual_df} residual degree(s) of freedom (a complete 3-member council "
            "with self-reviews excluded has 1): a t test on so little noise information "
            "cannot detect a bias, so leniency and self-preference are not tested; offsets "
            "and self-preference are estimates only"
        )
    elif model.fit.residual_variance == 0.0:
        notes["reviewers"] = (
            "the scores fit reviewer + answer effects exactly (no residual variation): "
            "there is no noise to test against, so leniency and self-preference are not tested"
        )
    elif not _reviewer_tests_runnable(model, thresholds):
        notes["reviewers"] = (
            "the scores do not estimate each reviewer's own noise (a reviewer with no "
            "residual information): leniency and self-preference are not tested; set "
            "equal_reviewer_noise to test them under equal noise"
        )
    elif residual_df < thresholds.minimum_residual_df:
        notes["reviewers"] = (
            f"only {residual_df} residual degrees of freedom: leniency, position and "
            "self-preference tests keep their false-positive rates but have little power"
        )
    length = _length_fields(table, model, thresholds, notes)
    position = _position_fields(
        table, model, thresholds, notes, permutation_seed, fitted_names, history or {}
    )
    self_reviews = _self_reviews(table, model)
    # with per-reviewer noise, the first step-down step, the self-preference and the
    # pooled tests run as one batch whose design-only part is cached per pattern
    batch = (
        session_noise_aware_tests(model.fit, model.noise, self_reviews.fit_cells)
        if model.fit is not None and model.noise is not None and priors is None
        else None
    )
    leniency = _leniency_fields(table, model, thresholds, batch, priors)
    if is_rank_only(table):
        leniency = leniency_not_tested(leniency, notes)
    self_preference = _self_preference_fields(table, model, thresholds, self_reviews, batch, priors)
    n_self_reviews = self_preference.pop("n_self_reviews")
    shared_order = has_one_shared_order(table) and n_self_reviews > 0
    if shared_order:
        self_preference = self_preference_confounded(self_preference, notes)
    pooled_note = pooled_self_preference_note(
        self_preference["pooled_self_preference_p_value"],
        self_preference["self_preference_detected"],
        n_self_reviews=n_self_reviews,
        significance_level=thresholds.significance_level,
        self_preference_floor=thresholds.self_preference_floor,
        pooled_flag_level=thresholds.significance_level / 2.0 if priors is not None else None,
    )
    if pooled_note is not None:
        notes["pooled_self_preference"] = pooled_note

    flags = {
        "length_bias_detected": length["length_bias_detected"],
        "position_bias_detected": position["position_bias_detected"],
        "harsh_or_generous_reviewers": bool(
            leniency["harsh_reviewers"] or leniency["generous_reviewers"]
        ),
        "self_preference_detected": self_preference["self_preference_detected"],
    }
    flags_raised = [name for name, fired in flags.items() if fired]
    # The length flag measures answers as much as judges (see METHODS["length"]): it is
    # reported, never counted as a risk.
    risk_flags = [name for name in flags_raised if name != "length_bias_detected"]
    risk_tests_run = _risk_tests_run(
        position, leniency, self_preference, self_preference_confounded=shared_order
    )
    return BiasAuditResult(
        **length,
        **position,
        **leniency,
        **self_preference,
        **_reviewer_summaries(table, model),
        overall_bias_risk=_risk_level(len(risk_flags), len(risk_tests_run)),
        flags_raised=flags_raised,
        sample_sizes={
            "n_reviewers": len(table.reviewers),
            "n_candidates": len(table.candidates),
            "n_scores": int(np.count_nonzero(~np.isnan(model.others_scores))),
            "n_self_reviews": n_self_reviews,
            "n_length_pairs": length["length_score_pairs"],
            "residual_df": residual_df,
        },
        thresholds={
            "length_correlation_threshold": thresholds.length_correlation_threshold,
            "position_variance_threshold": thresholds.position_variance_threshold,
            "reviewer_offset_floor": thresholds.reviewer_offset_floor,
            "self_preference_floor": thresholds.self_preference_floor,
        },
        significance_level=thresholds.significance_level,
        indicator_only=notes,
        methods=dict(METHODS),
        risk_flags=risk_flags,
        risk_tests_run=risk_tests_run,
    )


def run_bias_audit(
    stage1_responses: Any,
    stage2_scores: Mapping[str, Mapping[str, float | None]],
    position_mapping: Mapping[str, Any] | None = None,
    *,
    thresholds: AuditThresholds | None = None,
    history: str | Path | Mapping[str, ReviewerProfile] | None = None,
    session_id: str | None = None,
) -> BiasAuditResult:
    """Audit one session of any council, outside the middleware.

    ``stage1_responses``: ``{model: text}`` or a list of ``{"model", "response"}``;
    ``stage2_scores``: ``{reviewer: {candidate: score}}`` (a reviewer whose name is a
    candidate's is scoring its own answer); ``position_mapping``: the reference design's
    flat ``{candidate: display_index}`` (every reviewer saw that order), or per reviewer
    ``{reviewer: {candidate: display_index}}``, or either as ``label_to_model`` maps (see
    :func:`~llm_council.bias_audit.session.score_table.positions_by_reviewer`). Without positions
    the position test is skipped. Bad shapes raise a one-line ``InputError``. Thresholds
    default to :func:`load_thresholds`. ``history``: a JSONL record store path (its
    reviewer profiles, :mod:`~llm_council.bias_audit.records.reviewer_profiles`), a
    PostgreSQL store URL (its profile tables,
    :mod:`~llm_council.bias_audit.records.postgres_profiles`; a bad URL or an unreachable
    server is a one-line ``RecordError`` without the password) or the profiles
    themselves; each reviewer's noise then comes from its past sessions.
    ``session_id``: the audited session's id when it may already be in a JSONL
    ``history`` store; its own contribution is then left out of the history
    (:mod:`~llm_council.bias_audit.session.history_exclusion`), which otherwise counts
    it twice (ADR 0051).
    """
    table = score_table_from_mappings(stage1_responses, stage2_scores, position_mapping)
    profiles = (
        history_profiles(history)
        if session_id is None
        else history_without_session(history, session_id)
    )
    return audit_score_table(table, thresholds or load_thresholds(), history=profiles)
