"""The leniency family: is a reviewer harsher or more generous than the others?

Each reviewer against the reference reviewers on the same answers (additive model), in a
Holm step-down that removes each flagged reviewer before re-testing the rest (Holm 1979;
Rosner 1983), with moderated noise by default (ADR 0045). The step-down runs at the
level the session's procedure gives the family
(:mod:`~llm_council.bias_audit.session.session_risk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_council.bias_audit.session.design_limits import RANK_ONLY_LENIENCY_NOTE
from llm_council.bias_audit.session.moderated_noise import ModeratedNoise
from llm_council.bias_audit.session.score_table import ScoreTable
from llm_council.bias_audit.session.session_model import SessionModel, finite_or_none
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.inference.effect_floors import reaches_floor
from llm_council.stats.sessions.moderated_session_tests import step_down_moderated_offsets
from llm_council.stats.sessions.session_test_batch import SessionTests
from llm_council.stats.sessions.session_tests import (
    median_reference_offsets,
    step_down_reviewer_offsets,
)


@dataclass(frozen=True)
class LeniencyOutcome:
    """Each reviewer's offset (points above the reference reviewers) and Holm-adjusted
    p-value from the step-down, its offset from the median reviewer, who was named harsh
    or generous, and the family's gate p-value: the smallest Holm-adjusted p-value of the
    step-down's first step among the offsets that reach ``reviewer_offset_floor`` (None
    when none does or nothing was tested), the p-value the first step compares with its
    level."""

    offsets: Mapping[str, float | None]
    p_values: Mapping[str, float | None]
    offsets_vs_median: Mapping[str, float | None]
    harsh: Sequence[str] = ()
    generous: Sequence[str] = ()
    gate_p_value: float | None = None
    note: str | None = None

    @property
    def tested(self) -> bool:
        return any(p is not None for p in self.p_values.values())

    @property
    def detected(self) -> bool:
        return bool(self.harsh or self.generous)

    def result_fields(self) -> dict[str, Any]:
        """This family's result fields."""
        return {
            "reviewer_offsets": dict(self.offsets),
            "reviewer_offset_p_values": dict(self.p_values),
            "reviewer_offsets_vs_median": dict(self.offsets_vs_median),
            "harsh_reviewers": list(self.harsh),
            "generous_reviewers": list(self.generous),
        }


def leniency_family(
    table: ScoreTable,
    model: SessionModel,
    thresholds: AuditThresholds,
    batch: SessionTests | None,
    priors: ModeratedNoise | None,
    *,
    level: float,
    rank_only: bool = False,
) -> LeniencyOutcome:
    """Each reviewer against the others on the same answers, Holm step-down at ``level``.

    At ``level`` 0 the step-down stops after its first step, whose verdicts give the
    family's gate p-value; the session's procedure then runs it at the family's level.
    ``rank_only``: the scores are rank points, whose every full ranking has the same mean,
    so offsets are estimated and nothing is tested (ADR 0040).
    """
    offsets: dict[str, float | None] = dict.fromkeys(table.reviewers)
    robust_offsets: dict[str, float | None] = dict.fromkeys(table.reviewers)
    p_values: dict[str, float | None] = dict.fromkeys(table.reviewers)
    harsh: list[str] = []
    generous: list[str] = []
    eligible: list[float] = []
    if model.fit is not None:
        active_rows = model.active_rows.tolist()
        median_offsets = median_reference_offsets(model.fit)
        for local, offset in enumerate(median_offsets.tolist()):
            robust_offsets[table.reviewers[active_rows[local]]] = finite_or_none(offset)
        verdicts: list[Any]
        if priors is not None:
            verdicts = step_down_moderated_offsets(
                model.active_scores,
                priors.variances,
                priors.dfs,
                significance_level=level,
                effect_floor=thresholds.reviewer_offset_floor,
                robust_offsets=median_offsets,
                first_fit=model.fit,
            )
        else:
            verdicts = step_down_reviewer_offsets(
                model.active_scores,
                significance_level=level,
                effect_floor=thresholds.reviewer_offset_floor,
                first_fit=model.fit,
                minimum_residual_df=thresholds.minimum_test_df,
                per_reviewer_noise=not thresholds.equal_reviewer_noise,
                first_noise=model.noise,
                first_tests=batch.reviewer_offsets if batch is not None else None,
            )
        for verdict in verdicts:
            name = table.reviewers[active_rows[verdict.reviewer_index]]
            offsets[name] = finite_or_none(verdict.estimate)
            p_values[name] = finite_or_none(verdict.p_value_adjusted)
            if verdict.flagged:
                (harsh if verdict.estimate < 0 else generous).append(name)
        # with nobody flagged (always at level 0) every verdict is the first step's
        eligible = [
            v.p_value_adjusted
            for v in verdicts
            if v.p_value_adjusted is not None
            and reaches_floor(abs(v.estimate), thresholds.reviewer_offset_floor)
        ]
    if rank_only:
        return LeniencyOutcome(
            offsets, dict.fromkeys(p_values), robust_offsets, note=RANK_ONLY_LENIENCY_NOTE
        )
    return LeniencyOutcome(
        offsets,
        p_values,
        robust_offsets,
        harsh,
        generous,
        gate_p_value=min(eligible) if eligible and not (harsh or generous) else None,
    )
