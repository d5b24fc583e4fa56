"""The position family: do scores depend on the display slot a reviewer saw?

Slot effects within reviewers, tested against each reviewer's noise from its history
(a weighted Wald test, :mod:`~llm_council.stats.slots.slot_wald`) when every reviewer has one and
every slot is known, else by re-drawing each reviewer's display order (a randomization
test, valid at any size, no noise model). A design that leaves the test nothing to
compare is *not tested*, never "tested, p = 1".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from llm_council.bias_audit.session.moderated_noise import ModeratedNoise, slot_moderated_noise
from llm_council.bias_audit.session.noise_priors import (
    History,
    history_variances,
    slot_adjusted_history,
)
from llm_council.bias_audit.session.score_table import UNKNOWN_POSITION, ScoreTable
from llm_council.bias_audit.session.session_model import SessionModel, finite_or_none
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.prompts import label_for
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.slots.position_tests import joint_slot_effects, position_randomization_test
from llm_council.stats.slots.slot_wald import SlotWaldTest, slot_wald_test

#: how the slot test with history reads its p-value, by ``slot_history_guard``
_GUARD_NOTES = {
    "none": "Satterthwaite's df over the reviewers' moderated variances",
    "session-floor": "Satterthwaite's df, the statistic divided by the session's residual "
    "mean square when above 1",
    "smallest-df": "the smallest reviewer df, a guard against a stale history",
    "larger-p": "the larger of its p-value and the randomization test's",
    "weighted-randomization": "p-value by re-drawing the display orders of residuals "
    "weighted by the history",
    "screen-df": "Satterthwaite's df, a reviewer near the noise screen's level counted "
    "with its session df only",
    "prior-cap": "Satterthwaite's df, each history counted for at most "
    "slot_history_prior_df_max df",
}
_NO_SLOTS_NOTE = "fewer than two known display positions: position not tested"
_NOT_IDENTIFIED_NOTE = (
    "slot effects are not identified: the display slots are confounded with the "
    "answers (every reviewer saw the same order, or too few reviewers and orders), "
    "so position is neither estimated nor tested"
)


@dataclass(frozen=True)
class PositionOutcome:
    """The slot effects' variance (points squared, None when not reported), the test's
    p-value (None when not tested), the effects by display label, whether the variance
    reaches ``position_variance_threshold``, and the note (None when nothing to say)."""

    variance: float | None = None
    p_value: float | None = None
    slot_means: Mapping[str, float] = field(default_factory=dict)
    effect_reaches_threshold: bool = False
    note: str | None = None

    @property
    def tested(self) -> bool:
        return self.p_value is not None

    @property
    def gate_p_value(self) -> float | None:
        """The p-value the session's procedure reads: the test's, when the slot effects'
        variance reaches the threshold (else the flag cannot fire: None)."""
        return self.p_value if self.effect_reaches_threshold else None

    def detected_at(self, level: float) -> bool | None:
        """The flag at ``level`` (None: not tested, the reference design's convention)."""
        if self.p_value is None:
            return None
        return self.effect_reaches_threshold and self.p_value < level

    def result_fields(self, level: float) -> dict[str, Any]:
        """This family's result fields, flagged at ``level`` (the session's, see
        :mod:`~llm_council.bias_audit.session.session_risk`)."""
        return {
            "position_score_variance": self.variance,
            "position_score_p_value": self.p_value,
            "position_slot_means": dict(self.slot_means),
            "position_bias_detected": self.detected_at(level),
        }


def randomization_cannot_fire(
    residuals: np.ndarray, reviewer_ids: np.ndarray, significance_level: float
) -> bool:
    """Can the re-drawn orders never give a p-value below ``significance_level``?

    The randomization test re-orders each reviewer's own n_r scored cells among their
    slots, :math:`N = \\prod_r n_r!` orderings in all, so its exact p-value is at least
    :math:`1/N` (the observed ordering is one of them): at :math:`N \\le 1/\\alpha` it
    cannot fire. A complete 3-member council with self-reviews left out has
    :math:`N = 2!^3 = 8` (p >= 0.125), so its position "test" read p = 0.25-1 and turned
    "not_tested" into "low" (ADR 0050). It also cannot fire when every reviewer's residuals
    are equal: re-ordering them moves nothing.
    """
    reviewers, counts = np.unique(reviewer_ids, return_counts=True)
    log_orderings = sum(math.lgamma(count + 1) for count in counts.tolist())
    if log_orderings <= math.log(1.0 / significance_level):
        return True
    scale = 1e-9 * max(1.0, float(np.abs(residuals).max()))
    for reviewer in reviewers.tolist():
        own = residuals[reviewer_ids == reviewer]
        if own.size > 1 and float(own.max() - own.min()) > scale:
            return False
    return True


def position_family(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    permutation_seed: int,
    names: Sequence[str],
    history: History,
) -> PositionOutcome:
    """Slot effects tested within reviewers (see the module docstring)."""
    fit = model.fit
    if fit is None:
        return PositionOutcome()
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
        return PositionOutcome(note=_NO_SLOTS_NOTE)
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
        return PositionOutcome(note=_NOT_IDENTIFIED_NOTE)
    if all_known and history:
        tested = _history_slot_test(
            fit, slots, reviewer_ids, names, history, thresholds, permutation_seed
        )
        if tested is not None:
            return tested
    return _randomization_slot_test(
        slot_effects.weighted_variance,
        slot_effects.effects,
        fit.observed,
        residuals,
        known_slots,
        reviewer_ids,
        thresholds,
        permutation_seed,
    )


def _history_slot_test(
    fit: AdditiveFit,
    slots: np.ndarray,
    reviewer_ids: np.ndarray,
    names: Sequence[str],
    history: History,
    thresholds: AuditThresholds,
    permutation_seed: int,
) -> PositionOutcome | None:
    """The weighted Wald test against each reviewer's noise from its history, read as
    ``slot_history_guard`` says (every slot known); None when it cannot run (a reviewer
    without history, slots not identified), and the randomization test runs instead."""
    slot_noise = slot_moderated_noise(fit, slots, names, _slot_thresholds(thresholds), history)
    if slot_noise is None:
        return None
    guard = thresholds.slot_history_guard
    reviewer_dfs = slot_noise.noise.moderated_df
    if guard == "screen-df" and slot_noise.screen_p_values is not None:
        reviewer_dfs = _screened_dfs(slot_noise, thresholds.slot_history_screen_level)
    history_test = slot_wald_test(
        fit.design,
        fit.observed,
        slots,
        slot_noise.noise.moderated[fit.rows],
        float(np.min(reviewer_dfs)) if guard == "smallest-df" else reviewer_dfs,
        # the statistic's own Satterthwaite df (ADR 0059)
        noise_groups=None if guard == "smallest-df" else fit.rows,
        session_scale_floor=guard == "session-floor",
    )
    if history_test is not None and guard == "weighted-randomization":
        history_test = _weighted_randomization(
            history_test, fit, names, history, slots, reviewer_ids, thresholds, permutation_seed
        )
    if history_test is not None and guard == "larger-p":
        history_test = _larger_p(
            history_test, fit.residuals, slots, reviewer_ids, thresholds, permutation_seed
        )
    if history_test is None:
        return None
    note = (
        "slot effects tested against each reviewer's noise from its past sessions "
        f"(weighted Wald test, F({history_test.numerator_df}, "
        f"{history_test.denominator_df:.0f}), {_GUARD_NOTES[guard]}); the estimate is "
        "this session's"
    )
    return _tested(
        history_test.weighted_variance,
        history_test.p_value,
        history_test.effects,
        fit.observed,
        thresholds,
        note,
        "Wald",
    )


def _randomization_slot_test(
    weighted_variance: float,
    effects: Mapping[int, float],
    scored: np.ndarray,
    residuals: np.ndarray,
    known_slots: np.ndarray,
    reviewer_ids: np.ndarray,
    thresholds: AuditThresholds,
    permutation_seed: int,
) -> PositionOutcome:
    """The joint slot effects' estimate with the randomization test's p-value (each
    reviewer's display order re-drawn), or not tested when it cannot fire."""
    if randomization_cannot_fire(residuals, reviewer_ids, thresholds.significance_level):
        return PositionOutcome(
            note=(
                "position not tested: re-drawing each reviewer's display order gives too few "
                "distinct orderings (or none that changes the statistic) for a p-value below "
                f"{thresholds.significance_level:g}, e.g. a 3-member council, whose "
                "reviewers each scored two others' answers (2!^3 = 8 orderings)"
            )
        )
    position = position_randomization_test(
        residuals,
        known_slots,
        reviewer_ids,
        n_permutations=thresholds.position_permutations,
        seed=permutation_seed,
    )
    if position is None:
        return PositionOutcome(note=_NO_SLOTS_NOTE)
    return _tested(weighted_variance, position.p_value, effects, scored, thresholds, None)


def _slot_thresholds(thresholds: AuditThresholds) -> AuditThresholds:
    """The thresholds the slot test's moderated noise reads: its own screen level with a
    moved reviewer moderated toward the default prior (``slot_noise_drift_level``), and
    with the 'prior-cap' guard the history's prior df capped at
    ``slot_history_prior_df_max`` as well."""
    update: dict[str, object] = {}
    if thresholds.noise_drift_replacement != "default":
        update["noise_drift_replacement"] = "default"
    if thresholds.slot_noise_drift_level != thresholds.noise_drift_level:
        update["noise_drift_level"] = thresholds.slot_noise_drift_level
    if thresholds.slot_history_guard == "prior-cap":
        cap = min(thresholds.history_prior_df_max, thresholds.slot_history_prior_df_max)
        update["history_prior_df_max"] = cap
    return thresholds.model_copy(update=update) if update else thresholds


def _screened_dfs(slot_noise: ModeratedNoise, level: float) -> np.ndarray:
    """Each reviewer's df for the slot test's Satterthwaite df: the moderated df, or the
    session's own df alone (moderated df less the prior's) for a reviewer whose noise
    screen p-value is below ``level``: a screen that nearly moved it leaves its history's
    variance in doubt, and the test's reference should not lean on that history's df."""
    dfs = np.array(slot_noise.noise.moderated_df, dtype=float)
    screen = slot_noise.screen_p_values
    assert screen is not None
    # NaN (not screened) compares False; a moved reviewer has the default prior already
    from_history = np.array([source == "history" for source in slot_noise.sources])
    doubtful = (screen < level) & from_history
    # an uncapped prior (history_prior_df_max = inf) leaves no session df to isolate
    session_df = dfs - slot_noise.dfs
    doubtful &= np.isfinite(session_df)
    dfs[doubtful] = np.maximum(session_df[doubtful], 1e-3)
    return dfs


def _weighted_randomization(
    history_test: SlotWaldTest,
    fit: AdditiveFit,
    names: Sequence[str],
    history: History,
    known_slots: np.ndarray,
    reviewer_ids: np.ndarray,
    thresholds: AuditThresholds,
    permutation_seed: int,
) -> SlotWaldTest | None:
    """The Wald test's estimate with a randomization p-value: the residuals of the fit
    without slots, each divided by its reviewer's history SD, re-ordered within reviewers.

    The residuals and the history do not change when a reviewer's slots are re-drawn, so
    the p-value is exact under "no slot effect" (Fisher's randomization argument, as
    :func:`~llm_council.stats.slots.position_tests.position_randomization_test`) whatever the
    history says; the history only chooses the weights, which give the power."""
    profiled = history_variances(slot_adjusted_history(history))
    sds = np.array([math.sqrt(profiled[name][0]) for name in names], dtype=float)
    if not (np.all(np.isfinite(sds)) and np.all(sds > 0.0)):
        return None
    standardized = fit.residuals / sds[fit.rows]
    if randomization_cannot_fire(standardized, reviewer_ids, thresholds.significance_level):
        return None
    position = position_randomization_test(
        standardized,
        known_slots,
        reviewer_ids,
        n_permutations=thresholds.position_permutations,
        seed=permutation_seed,
    )
    return None if position is None else replace(history_test, p_value=position.p_value)


def _larger_p(
    history_test: SlotWaldTest,
    residuals: np.ndarray,
    known_slots: np.ndarray,
    reviewer_ids: np.ndarray,
    thresholds: AuditThresholds,
    permutation_seed: int,
) -> SlotWaldTest:
    """The Wald test with the larger of its p-value and the randomization test's: valid
    when either is (a p-value at least a valid one is valid), so a stale history cannot
    make it fire more often than re-drawing the orders does."""
    if randomization_cannot_fire(residuals, reviewer_ids, thresholds.significance_level):
        return replace(history_test, p_value=1.0)
    position = position_randomization_test(
        residuals,
        known_slots,
        reviewer_ids,
        n_permutations=thresholds.position_permutations,
        seed=permutation_seed,
    )
    if position is None:
        return replace(history_test, p_value=1.0)
    return replace(history_test, p_value=max(history_test.p_value, position.p_value))


def _tested(
    weighted_variance: float,
    p_value: float,
    effects: Mapping[int, float],
    scored: np.ndarray,
    thresholds: AuditThresholds,
    note: str | None,
    test_name: str = "randomization",
) -> PositionOutcome:
    """The outcome of a tested slot-effect estimate: the flag needs significance and the
    slot effects' variance at least the threshold."""
    variance = finite_or_none(weighted_variance)
    # values inside an interval of width w have a weighted variance of at most w^2 / 4
    # (Popoviciu 1935): slot effects beyond the scores' own spread are noise, not a number
    largest_possible = float(scored.max() - scored.min()) ** 2 / 4.0
    if variance is not None and variance > largest_possible:
        return PositionOutcome(
            p_value=p_value,
            note=(
                f"slot effects are only weakly identified: their variance ({variance:.3g} "
                f"points^2) exceeds the {largest_possible:.3g} the observed scores allow, so "
                f"it is not reported; the {test_name} p-value stays valid"
            ),
        )
    return PositionOutcome(
        variance=variance,
        p_value=p_value,
        slot_means={label_for(slot): value for slot, value in effects.items()},
        effect_reaches_threshold=variance is not None
        and variance >= thresholds.position_variance_threshold,
        note=note,
    )
