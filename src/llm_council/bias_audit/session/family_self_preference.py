"""The self-preference family: does a reviewer score its own answer above the prediction?

Each self-review is compared with what the additive model predicts for it from the
other scores (so a harsh or generous reviewer's own level is in the prediction), one-sided,
Bonferroni over the self-reviews; with moderated noise (the default, ADR 0045) the
precision-weighted mean of the self-reviews also flags (ADR 0047), each half of the level.
When the display slots are identified the model carries slot effects and each
self-review is predicted at the slot it was shown at
(:mod:`~llm_council.stats.slots.slot_adjusted_prediction`), so a favoured slot does not read as
self-preference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_council.bias_audit.session.moderated_noise import (
    ModeratedNoise,
    moderated_self_preference,
)
from llm_council.bias_audit.session.score_table import UNKNOWN_POSITION, ScoreTable
from llm_council.bias_audit.session.session_model import (
    SelfReviews,
    SessionModel,
    finite_or_none,
    reviewer_tests_runnable,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.inference.effect_floors import reaches_floor
from llm_council.stats.numerics.identity_memo import IdentityMemo
from llm_council.stats.reviewers.reviewer_noise import estimate_reviewer_noise
from llm_council.stats.sessions.moderated_session_tests import moderate
from llm_council.stats.sessions.session_test_batch import SessionTests
from llm_council.stats.sessions.session_tests import (
    ContrastTest,
    pooled_self_preference_test,
    self_preference_tests,
)
from llm_council.stats.slots.slot_adjusted_fit import with_slot_effects
from llm_council.stats.slots.slot_adjusted_prediction import slot_adjusted_cell_rows

#: ``indicator_only["self_preference"]`` when the prediction carries slot effects
SLOT_ADJUSTED_NOTE = (
    "each self-review is predicted by the model with display-slot effects at the slot it "
    "was shown at, so a slot the reviewers favour does not read as self-preference"
)


@dataclass(frozen=True)
class SelfPreferenceOutcome:
    """Each reviewer's raw and model-adjusted self-preference, its family-adjusted p-value
    (Bonferroni over the self-reviews: factor m, or 2m when the pooled mean shares the
    level), the pooled mean and its unadjusted p-value, and how the pooled test flags
    (``pooled_flag_factor``: its p-value times this below the level; None: never a flag).
    ``confounded``: one shared display order, so nothing is flagged or counted as tested.
    """

    raw: Mapping[str, float | None]
    adjusted: Mapping[str, float | None]
    p_values: Mapping[str, float | None]
    pooled_estimate: float | None
    pooled_p_value: float | None
    pooled_flag_factor: float | None
    n_self_reviews: int
    floor: float
    confounded: bool = False
    note: str | None = None

    @property
    def tested(self) -> bool:
        return not self.confounded and (
            self.pooled_p_value is not None or any(p is not None for p in self.p_values.values())
        )

    def _reaches_floor(self, name: str) -> bool:
        estimate = self.adjusted.get(name)
        return estimate is not None and reaches_floor(estimate, self.floor)

    def _pooled_adjusted(self) -> float | None:
        if self.pooled_flag_factor is None or self.pooled_p_value is None:
            return None
        if self.pooled_estimate is None or not reaches_floor(self.pooled_estimate, self.floor):
            return None
        return min(1.0, self.pooled_flag_factor * self.pooled_p_value)

    @property
    def gate_p_value(self) -> float | None:
        """The smallest family-adjusted p-value among the tests whose estimate reaches
        ``self_preference_floor`` (the flag's effect rule); None when none does."""
        if not self.tested:
            return None
        candidates = [
            p for name, p in self.p_values.items() if p is not None and self._reaches_floor(name)
        ]
        pooled = self._pooled_adjusted()
        if pooled is not None:
            candidates.append(pooled)
        return min(candidates) if candidates else None

    def preferring_at(self, level: float) -> list[str]:
        """The reviewers flagged at ``level``."""
        if self.confounded:
            return []
        return [
            name
            for name, p in self.p_values.items()
            if p is not None and p < level and self._reaches_floor(name)
        ]

    def detected_at(self, level: float) -> bool:
        pooled = self._pooled_adjusted()
        return not self.confounded and (
            bool(self.preferring_at(level)) or (pooled is not None and pooled < level)
        )

    def result_fields(self, level: float) -> dict[str, Any]:
        """This family's result fields, flagged at ``level``."""
        return {
            "self_preference": dict(self.raw),
            "self_preference_adjusted": dict(self.adjusted),
            "self_preference_p_values": dict(self.p_values),
            "self_preferring_reviewers": self.preferring_at(level),
            "self_preference_detected": self.detected_at(level),
            "pooled_self_preference": self.pooled_estimate,
            "pooled_self_preference_p_value": self.pooled_p_value,
        }


@dataclass(frozen=True)
class _PredictionModel:
    """The fit self-reviews are predicted from, their design rows (None: the fit's own
    cell vectors) and whether it carries slot effects."""

    fit: AdditiveFit
    cell_rows: np.ndarray | None
    slot_adjusted: bool


#: the history path and ADR 0071's session-only path predict the same session's
#: self-reviews from the same model (ADR 0075)
_PREDICTIONS: IdentityMemo[_PredictionModel] = IdentityMemo(2)


def _prediction_model(
    table: ScoreTable, model: SessionModel, self_reviews: SelfReviews
) -> _PredictionModel:
    """The model with slot effects when every fitted cell's slot is known, the slots are
    identified with residual df to spare, and every self-review sat at a fitted slot;
    else the two-way fit. Computed once for the session's ``table``, ``model`` and
    ``self_reviews`` objects."""
    # the arrays it reads in the key too: a table changed in place cannot reuse the old one
    key = (table.scores.tobytes(), table.positions.tobytes(), model.active_scores.tobytes())
    return _PREDICTIONS.get(
        (table, model, self_reviews), key, lambda: _predicted_from(table, model, self_reviews)
    )


def _predicted_from(
    table: ScoreTable, model: SessionModel, self_reviews: SelfReviews
) -> _PredictionModel:
    """:func:`_prediction_model`, computed."""
    fit = model.fit
    assert fit is not None
    two_way = _PredictionModel(fit, None, False)
    fit_slots = table.positions[model.active_rows[fit.rows], model.active_columns[fit.columns]]
    if fit_slots.size == 0 or int(fit_slots.min()) == UNKNOWN_POSITION:
        return two_way
    slot_fit = with_slot_effects(fit, fit_slots)
    if slot_fit is fit:
        return two_way
    cells = [(row, col) for row, col, _ in self_reviews.fit_cells]
    cell_slots = [
        int(table.positions[model.active_rows[row], model.active_columns[col]])
        for row, col in cells
    ]
    rows = slot_adjusted_cell_rows(fit, slot_fit, fit_slots, cells, cell_slots)
    if rows is None:
        return two_way
    rows.flags.writeable = False  # shared by both paths
    return _PredictionModel(slot_fit, rows, True)


def _moderated_tests(
    prediction: _PredictionModel,
    fit_cells: list[tuple[int, int, float]],
    priors: ModeratedNoise,
) -> tuple[list[ContrastTest], ContrastTest]:
    """Moderated tests: each self-review's p-value Bonferroni-adjusted by 2m (m
    self-reviews; the pooled test shares the level), the pooled mean's unadjusted."""
    noise = (
        moderate(prediction.fit, priors.variances, priors.dfs)
        if prediction.slot_adjusted
        else priors.noise
    )
    return moderated_self_preference(
        prediction.fit, fit_cells, noise, cell_rows=prediction.cell_rows
    )


def _session_only_tests(
    prediction: _PredictionModel,
    model: SessionModel,
    fit_cells: list[tuple[int, int, float]],
    thresholds: AuditThresholds,
    batch: SessionTests | None,
) -> tuple[list[ContrastTest], ContrastTest | None, bool]:
    """Session-only noise (ADR 0017): the tests and whether they may be read as tests."""
    if not prediction.slot_adjusted:
        testable = reviewer_tests_runnable(model, thresholds)
        if batch is not None:
            return batch.self_preference, batch.pooled_self_preference, testable
        tests = self_preference_tests(prediction.fit, fit_cells, model.noise)
        return tests, pooled_self_preference_test(prediction.fit, fit_cells, model.noise), testable
    noise = None if thresholds.equal_reviewer_noise else estimate_reviewer_noise(prediction.fit)
    testable = prediction.fit.residual_df >= thresholds.minimum_test_df and (
        thresholds.equal_reviewer_noise or noise is not None
    )
    rows = prediction.cell_rows
    tests = self_preference_tests(prediction.fit, fit_cells, noise, cell_rows=rows)
    pooled = pooled_self_preference_test(prediction.fit, fit_cells, noise, cell_rows=rows)
    return tests, pooled, testable


def self_preference_family(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    self_reviews: SelfReviews,
    batch: SessionTests | None,
    priors: ModeratedNoise | None,
    *,
    confounded: bool = False,
) -> SelfPreferenceOutcome:
    """Own score vs the others' mean (raw) and vs the model's prediction (tested).

    ``batch``: the session-only noise-aware tests of the two-way fit, when computed;
    ``confounded``: every reviewer saw one shared order (estimated, never flagged).
    """
    raw: dict[str, float | None] = {}
    adjusted: dict[str, float | None] = {}
    p_values: dict[str, float | None] = {}
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
    note: str | None = None
    if model.fit is not None and fit_cells:
        prediction = _prediction_model(table, model, self_reviews)
        pooled: ContrastTest | None
        if priors is not None:
            tests, pooled = _moderated_tests(prediction, fit_cells, priors)
            testable = True
        else:
            tests, pooled, testable = _session_only_tests(
                prediction, model, fit_cells, thresholds, batch
            )
        for name, test in zip(self_reviews.fit_names, tests, strict=True):
            adjusted[name] = finite_or_none(test.estimate)
            p_values[name] = finite_or_none(test.p_value_adjusted) if testable else None
        if pooled is not None:
            pooled_estimate = finite_or_none(pooled.estimate)
            pooled_p_value = finite_or_none(pooled.p_value) if testable else None
        if prediction.slot_adjusted:
            note = SLOT_ADJUSTED_NOTE
    return SelfPreferenceOutcome(
        raw=raw,
        adjusted=adjusted,
        p_values=p_values,
        pooled_estimate=pooled_estimate,
        pooled_p_value=pooled_p_value,
        # moderated noise: the council-wide mean is tested beside the reviewers, each at
        # half the level (Bonferroni over the two)
        pooled_flag_factor=2.0 if priors is not None else None,
        n_self_reviews=len(self_reviews.rows),
        floor=thresholds.self_preference_floor,
        confounded=confounded,
        note=note,
    )
