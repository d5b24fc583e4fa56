"""Compute a :class:`BiasAuditResult` from a :class:`ScoreTable`.

The orchestrator: fit the session's additive model once
(:mod:`~llm_council.bias_audit.session.session_model`), run each bias family (length,
position, leniency, self-preference: one module each, each returning a frozen outcome),
decide the risk flags under one error rate for the session
(:mod:`~llm_council.bias_audit.session.session_risk`), and flatten everything into the
result once. With history, the risk families are checked against the session-only path
(:mod:`~llm_council.bias_audit.session.history_check`, ADR 0071). Self-reviews are left
out of the length, position and leniency statistics
(a reviewer's view of its own answer is a different question) and used only for
self-preference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile
from llm_council.bias_audit.session.audit_methods import METHODS, pooled_self_preference_note
from llm_council.bias_audit.session.design_limits import (
    CONFOUNDED_WITH_SLOT_NOTE,
    has_one_shared_order,
    is_rank_only,
)
from llm_council.bias_audit.session.family_length import LengthOutcome, length_family
from llm_council.bias_audit.session.family_leniency import LeniencyOutcome, leniency_family
from llm_council.bias_audit.session.family_position import PositionOutcome, position_family
from llm_council.bias_audit.session.family_self_preference import (
    SelfPreferenceOutcome,
    self_preference_family,
)
from llm_council.bias_audit.session.history_check import (
    HISTORY_CHECK_NOTE,
    checked_leniency,
    checked_self_preference,
    history_checked,
    session_scale,
)
from llm_council.bias_audit.session.history_exclusion import history_without_session
from llm_council.bias_audit.session.moderated_noise import ModeratedNoise, moderated_noise
from llm_council.bias_audit.session.noise_priors import History, history_profiles
from llm_council.bias_audit.session.result import BiasAuditResult
from llm_council.bias_audit.session.score_table import ScoreTable, score_table_from_mappings
from llm_council.bias_audit.session.session_model import (
    SelfReviews,
    SessionModel,
    fit_session,
    reviewer_summaries,
    reviewers_note,
    self_reviews,
)
from llm_council.bias_audit.session.session_risk import (
    FAMILY_FLAGS,
    SessionRisk,
    family_gates,
    risk_level,
    session_risk,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds
from llm_council.stats.sessions.session_test_batch import SessionTests, session_noise_aware_tests


@dataclasses.dataclass(frozen=True)
class _FamilyOutcomes:
    """The four families' outcomes of one session, before the session's procedure."""

    length: LengthOutcome
    position: PositionOutcome
    leniency: LeniencyOutcome
    self_preference: SelfPreferenceOutcome
    own_reviews: SelfReviews
    batch: SessionTests | None
    shared_order: bool


@dataclasses.dataclass(frozen=True)
class _Paths:
    """The moderated noise the families read: with the history, and the session-only
    path's that checks it (None: no check, ADR 0071)."""

    priors: ModeratedNoise | None
    session_priors: ModeratedNoise | None = None
    checked: bool = False


def audit_score_table(
    table: ScoreTable,
    thresholds: AuditThresholds,
    *,
    permutation_seed: int = 0,
    history: History | None = None,
) -> BiasAuditResult:
    """Every per-session statistic and flag for one session's score table.

    ``history``: the reviewers' noise profiles from past sessions (ADR 0045); without it
    each reviewer's session variance is moderated toward the default prior. The risk
    flags hold one error rate for the session (``significance_level``, ADR 0050).
    """
    history = history or {}
    model = fit_session(table, thresholds)
    fitted_names = [table.reviewers[row] for row in model.active_rows.tolist()]
    priors = (
        moderated_noise(model.fit, fitted_names, thresholds, history)
        if model.fit is not None
        else None
    )
    notes: dict[str, str] = {}
    reviewers = reviewers_note(model, thresholds, priors)
    if reviewers is not None:
        notes["reviewers"] = reviewers
    paths = _Paths(priors)
    if model.fit is not None and history_checked(thresholds, history, priors):
        paths = _Paths(priors, moderated_noise(model.fit, fitted_names, thresholds, {}), True)
        notes["history_check"] = HISTORY_CHECK_NOTE
    outcomes = _run_families(
        table, model, thresholds, paths, permutation_seed, fitted_names, history, notes
    )
    risk = session_risk(
        family_gates(
            {
                "position": outcomes.position,
                "leniency": outcomes.leniency,
                "self_preference": outcomes.self_preference,
            }
        ),
        thresholds.significance_level,
    )
    outcomes = _at_session_levels(table, model, thresholds, paths, outcomes, risk, notes)
    return _flattened(table, model, thresholds, outcomes, risk, notes)


def _run_families(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    paths: _Paths,
    permutation_seed: int,
    fitted_names: list[str],
    history: History,
    notes: dict[str, str],
) -> _FamilyOutcomes:
    """Each family's outcome (leniency at its first step only), notes added to ``notes``;
    with the session-only check (ADR 0071) leniency and self-preference run on both paths
    and are combined (the position family checks itself: the randomization test)."""
    priors = paths.priors
    length = length_family(table, model, thresholds)
    notes["length"] = length.note
    position = position_family(
        table,
        model,
        _position_thresholds(thresholds),
        permutation_seed,
        fitted_names,
        history,
    )
    if position.note is not None:
        notes["position"] = position.note
    own_reviews = self_reviews(table, model)
    # with per-reviewer session noise, the first step-down step, the self-preference and
    # the pooled tests run as one batch whose design-only part is cached per pattern
    batch = (
        session_noise_aware_tests(model.fit, model.noise, own_reviews.fit_cells)
        if model.fit is not None and model.noise is not None and priors is None
        else None
    )
    rank_only = is_rank_only(table)
    # level 0: the step-down's first step only, which gives the family's gate p-value
    leniency = _leniency(table, model, thresholds, batch, paths, 0.0, rank_only)
    if leniency.note is not None:
        notes["leniency"] = leniency.note
    shared_order = has_one_shared_order(table) and len(own_reviews.rows) > 0
    self_preference = self_preference_family(
        table, model, thresholds, own_reviews, batch, priors, confounded=shared_order
    )
    if paths.checked:
        self_preference = checked_self_preference(
            self_preference,
            self_preference_family(
                table,
                model,
                thresholds,
                own_reviews,
                None,
                paths.session_priors,
                confounded=shared_order,
            ),
            session_scale(thresholds),
        )
    if shared_order:
        notes["confounded_with_slot"] = CONFOUNDED_WITH_SLOT_NOTE
    elif self_preference.note is not None:
        notes["self_preference"] = self_preference.note
    return _FamilyOutcomes(
        length, position, leniency, self_preference, own_reviews, batch, shared_order
    )


def _at_session_levels(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    paths: _Paths,
    outcomes: _FamilyOutcomes,
    risk: SessionRisk,
    notes: dict[str, str],
) -> _FamilyOutcomes:
    """The leniency step-down re-run at the level the session's procedure gave it, and
    the pooled self-preference note at the self-preference family's level."""
    leniency = outcomes.leniency
    if risk.level("leniency") > 0.0:
        leniency = dataclasses.replace(
            _leniency(table, model, thresholds, outcomes.batch, paths, risk.level("leniency")),
            gate_p_value=leniency.gate_p_value,
        )
    self_preference = outcomes.self_preference
    pooled_note = pooled_self_preference_note(
        self_preference.pooled_p_value,
        self_preference.detected_at(risk.level("self_preference")),
        n_self_reviews=self_preference.n_self_reviews,
        significance_level=thresholds.significance_level,
        self_preference_floor=thresholds.self_preference_floor,
        pooled_flag_level=(
            thresholds.significance_level / 2.0 if self_preference.pooled_flag_factor else None
        ),
        n_risk_families=len(risk.tested),
    )
    if pooled_note is not None:
        notes["pooled_self_preference"] = pooled_note
    return dataclasses.replace(outcomes, leniency=leniency)


def _position_thresholds(thresholds: AuditThresholds) -> AuditThresholds:
    """The slot test's thresholds: under the session-only check (ADR 0071) the slot test
    with history takes the larger of its p-value and the randomization test's (the
    ``"larger-p"`` guard, ADR 0059's amendment), unless its guard is valid whatever the
    history holds already (``"larger-p"``, ``"weighted-randomization"``)."""
    exact = thresholds.slot_history_guard in ("larger-p", "weighted-randomization")
    # on whenever the check is (not only when the main fit's priors came from the store):
    # the slot test reads its own slot-adjusted histories
    if thresholds.history_session_check != "intersection-union" or exact:
        return thresholds
    return thresholds.model_copy(update={"slot_history_guard": "larger-p"})


def _leniency(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    batch: SessionTests | None,
    paths: _Paths,
    level: float,
    rank_only: bool = False,
) -> LeniencyOutcome:
    """The leniency step-down at ``level`` with the history, checked against the
    session-only path's step-down at the same level when the check is on (ADR 0071)."""
    outcome = leniency_family(
        table, model, thresholds, batch, paths.priors, level=level, rank_only=rank_only
    )
    if not paths.checked or rank_only:
        return outcome
    scale = session_scale(thresholds)
    session = leniency_family(
        table, model, thresholds, None, paths.session_priors, level=min(1.0, level / scale)
    )
    return checked_leniency(outcome, session, thresholds.reviewer_offset_floor, scale)


def _flattened(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    outcomes: _FamilyOutcomes,
    risk: SessionRisk,
    notes: dict[str, str],
) -> BiasAuditResult:
    """The families' outcomes at their session levels, flattened into the result once."""
    length, leniency, self_preference = (
        outcomes.length,
        outcomes.leniency,
        outcomes.self_preference,
    )
    position_fields = outcomes.position.result_fields(risk.level("position"))
    self_preference_fields = self_preference.result_fields(risk.level("self_preference"))
    if (
        self_preference_fields["self_preference_detected"]
        and not self_preference_fields["self_preferring_reviewers"]
    ):
        # issue 37 C.5: a flag beside an empty list of reviewers read as a contradiction
        notes["council_self_preference"] = (
            "self_preference_detected comes from the council-wide test: the mean "
            f"self-preference over all {self_preference.n_self_reviews} self-reviews "
            "passed it, while no single reviewer's own test did, so "
            "self_preferring_reviewers is empty (the council as a whole favours its own "
            "answers; the session cannot say which member)"
        )
    flags = {
        "length_bias_detected": length.detected,
        "position_bias_detected": position_fields["position_bias_detected"],
        "harsh_or_generous_reviewers": leniency.detected,
        "self_preference_detected": self_preference_fields["self_preference_detected"],
    }
    flags_raised = [name for name, fired in flags.items() if fired]
    # The length flag measures answers as much as judges (see METHODS["length"]): it is
    # reported, never counted as a risk.
    risk_flags = [name for name in flags_raised if name in FAMILY_FLAGS.values()]
    mean_scores, score_variances = reviewer_summaries(table, model)
    return BiasAuditResult(
        **length.result_fields(),
        **position_fields,
        **leniency.result_fields(),
        **self_preference_fields,
        reviewer_mean_scores=mean_scores,
        reviewer_score_variance=score_variances,
        overall_bias_risk=risk_level(len(risk_flags), len(risk.tested)),
        flags_raised=flags_raised,
        sample_sizes={
            "n_reviewers": len(table.reviewers),
            "n_candidates": len(table.candidates),
            "n_scores": int(np.count_nonzero(~np.isnan(model.others_scores))),
            "n_self_reviews": self_preference.n_self_reviews,
            "n_length_pairs": length.n_pairs,
            "residual_df": model.residual_df,
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
        risk_tests_run=risk.tested,
        risk_p_values=dict(risk.p_values),
        risk_p_values_adjusted=dict(risk.p_values_adjusted),
        session_error_rate=thresholds.significance_level,
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
    themselves; each reviewer's noise then comes from its past sessions. Reading history
    writes nothing beside the store.
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
