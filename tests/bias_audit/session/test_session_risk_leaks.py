"""Leaks into the self-preference and position families, closed by ADR 0050.

- a slot the council favours read as self-preference: the self-review's prediction
  ignored the slot it was shown at (4 members, slot A +1.5, 30 sessions of history: the
  family's own test at 5% fired in 9.25% of 400 honest-self sessions before, 2.75% now);
- a harsh judge: its own level is in the prediction (its reviewer effect), so it must
  not read as self-preference (a guard, slow: 3.75% before and after on this generator;
  ``-m slow``);
- a 3-member position test that cannot fire (8 orderings, p >= 1/8) read as tested.

Seeded, on the independent generator (integer scores clipped to 1-10, shuffled orders).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_session
from llm_council.bias_audit.records.reviewer_profiles import (
    Profiles,
    merge_profiles,
    session_profiles,
)
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.score_table import ScoreTable, score_table_from_mappings
from llm_council.bias_audit.session.thresholds import AuditThresholds

N_SESSIONS = 400
#: 5% plus two binomial standard errors at 5% over 400 sessions: 7.2%
CEILING = 0.05 + 2.0 * math.sqrt(0.05 * 0.95 / N_SESSIONS)
THRESHOLDS = AuditThresholds()


def _table(spec: CouncilSpec, rng: np.random.Generator) -> ScoreTable:
    session = generate_session(spec, rng)
    return score_table_from_mappings(
        session.stage1_responses, session.stage2_scores, session.position_mapping
    )


def _profiles(table: ScoreTable) -> Profiles:
    rows, columns = np.nonzero(~np.isnan(table.scores) & ~table.is_self)
    return session_profiles(
        (
            table.reviewers[r],
            table.candidates[c],
            float(table.scores[r, c]),
            int(table.positions[r, c]),
        )
        for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
    )


def _history(spec: CouncilSpec, rng: np.random.Generator) -> Profiles:
    history: Profiles = {}
    for _ in range(30):
        history = merge_profiles(history, _profiles(_table(spec, rng)))
    return history


def test_a_favoured_slot_does_not_read_as_self_preference() -> None:
    spec = CouncilSpec(n_members=4, noise_sds=[0.5, 0.833, 1.167, 1.5], slot_effects=[[1.5]] * 4)
    rng = np.random.default_rng(99)
    history = _history(spec, rng)
    own_test_fired = slot_adjusted = 0
    for index in range(N_SESSIONS):
        audit = audit_score_table(
            _table(spec, rng), THRESHOLDS, history=history, permutation_seed=index
        )
        # the family's own test at the full level, before the session's adjustment
        own_test_fired += audit.risk_p_values.get("self_preference", 1.0) < 0.05
        slot_adjusted += "display-slot effects" in audit.indicator_only.get("self_preference", "")
    assert own_test_fired / N_SESSIONS <= CEILING
    # measured 358 of 400; in the rest the orders do not identify the slot effects next to
    # reviewer and answer effects, or a self-review sat at a slot no other score did
    assert slot_adjusted / N_SESSIONS > 0.85


@pytest.mark.slow
def test_a_harsh_judge_does_not_read_as_self_preference() -> None:
    spec = CouncilSpec(n_members=4, noise_sds=[0.5, 0.833, 1.167, 1.5], leniency=[-1.5, 0, 0, 0])
    rng = np.random.default_rng(7)
    history = _history(spec, rng)
    with_history = without = 0
    for index in range(N_SESSIONS):
        table = _table(spec, rng)
        with_history += audit_score_table(
            table, THRESHOLDS, history=history, permutation_seed=index
        ).self_preference_detected
        without += audit_score_table(
            table, THRESHOLDS, permutation_seed=index
        ).self_preference_detected
    assert with_history / N_SESSIONS <= CEILING
    assert without / N_SESSIONS <= CEILING


def test_a_three_member_position_test_that_cannot_fire_is_not_tested() -> None:
    rng = np.random.default_rng(5)
    spec = CouncilSpec(n_members=3)
    for index in range(200):
        audit = audit_score_table(_table(spec, rng), THRESHOLDS, permutation_seed=index)
        # each reviewer scored two others' answers: 2!^3 = 8 re-drawn orderings, p >= 1/8;
        # before ADR 0050, 8.5% of these sessions reported a p-value (1.0 in most)
        assert audit.position_score_p_value is None
        assert audit.position_bias_detected is None
        assert "position" not in audit.risk_tests_run
        if audit.risk_tests_run == []:
            assert audit.overall_bias_risk == "not_tested"
