"""The session's risk under one error rate (ADR 0050): Holm over the risk families.

Hand-derived Holm values (Holm 1979: sort ascending, multiply the i-th smallest by
k - i + 1, carry the running maximum, cap at 1), the levels each family's own tests get,
and, on seeded audits, that a family is flagged exactly when its adjusted p-value is
below the session's error rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.family_position import randomization_cannot_fire
from llm_council.bias_audit.session.score_table import score_table_from_mappings
from llm_council.bias_audit.session.session_risk import (
    FAMILY_FLAGS,
    RISK_FAMILIES,
    risk_level,
    session_risk,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds


def test_holm_over_three_families_matches_the_hand_derivation() -> None:
    # sorted: position 0.01, self_preference 0.03, leniency 0.04 (k = 3)
    # adjusted: 3 * 0.01 = 0.03; max(0.03, 2 * 0.03) = 0.06; max(0.06, 1 * 0.04) = 0.06
    risk = session_risk({"position": 0.01, "leniency": 0.04, "self_preference": 0.03}, 0.05)
    assert risk.tested == ["position", "leniency", "self_preference"]
    assert risk.p_values_adjusted == pytest.approx(
        {"position": 0.03, "leniency": 0.06, "self_preference": 0.06}
    )
    # position passes at 0.05 / 3; the step at rank 2 fails (0.06), so nothing else runs
    assert risk.levels == pytest.approx(
        {"position": 0.05 / 3, "leniency": 0.0, "self_preference": 0.0}
    )


def test_each_passing_family_gets_holm_level_at_its_rank() -> None:
    # position 0.01 -> 2 * 0.01 = 0.02 at level 0.025; leniency 0.02 -> max(0.02, 0.02)
    # = 0.02 at level 0.05 (the last family alone)
    risk = session_risk({"position": 0.01, "leniency": 0.02}, 0.05)
    assert risk.p_values_adjusted == pytest.approx({"position": 0.02, "leniency": 0.02})
    assert risk.levels == pytest.approx({"position": 0.025, "leniency": 0.05})
    assert risk.level("self_preference") == 0.0  # not tested


def test_a_tested_family_with_nothing_at_its_floor_counts_with_gate_one() -> None:
    # None: tested, no effect reached its floor; it still takes a share (k = 2): 2 * 0.03
    risk = session_risk({"leniency": None, "self_preference": 0.03}, 0.05)
    assert risk.p_values == {"leniency": 1.0, "self_preference": 0.03}
    assert risk.p_values_adjusted == pytest.approx({"leniency": 1.0, "self_preference": 0.06})
    assert risk.levels == {"leniency": 0.0, "self_preference": 0.0}
    assert session_risk({"position": math.nan}, 0.05).p_values == {"position": 1.0}


def test_one_family_alone_keeps_the_full_level_and_no_family_is_not_tested() -> None:
    risk = session_risk({"self_preference": 0.049}, 0.05)
    assert risk.p_values_adjusted == {"self_preference": 0.049}
    assert risk.levels == {"self_preference": 0.05}
    empty = session_risk({}, 0.05)
    assert empty.tested == [] and risk_level(0, len(empty.tested)) == "not_tested"
    assert [risk_level(n, 1) for n in (0, 1, 2, 3)] == ["low", "medium", "high", "high"]


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown risk families"):
        session_risk({"length": 0.01}, 0.05)


def test_ties_keep_holm_order_and_cap_at_one() -> None:
    risk = session_risk({"position": 0.4, "leniency": 0.4, "self_preference": 0.4}, 0.05)
    assert risk.p_values_adjusted == {"position": 1.0, "leniency": 1.0, "self_preference": 1.0}


@pytest.mark.parametrize(
    ("spec", "seed"),
    [
        (CouncilSpec(n_members=4, leniency=[-2.5, 0, 0, 0]), 1),
        (CouncilSpec(n_members=5, self_bias=[2.0] * 5, noise_sds=[0.5, 1, 1.5, 0.7, 1.2]), 2),
        (CouncilSpec(n_members=5, slot_effects=[[3.5]] * 5, missing_score_rate=0.1), 3),
        (CouncilSpec(n_members=9, leniency=[-2.0] + [0.0] * 8, missing_review_rate=0.5), 4),
        (CouncilSpec(n_members=3, leniency=[-4.0, 0, 0]), 5),
    ],
)
def test_a_family_is_flagged_exactly_when_its_adjusted_p_is_below_the_rate(
    spec: CouncilSpec, seed: int
) -> None:
    flagged_somewhere = False
    for index, session in enumerate(generate_sessions(spec, 15, seed)):
        table = score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )
        audit = audit_score_table(table, AuditThresholds(), permutation_seed=index)
        assert audit.session_error_rate == audit.significance_level == 0.05
        assert list(audit.risk_p_values) == audit.risk_tests_run
        assert set(audit.risk_tests_run) <= set(RISK_FAMILIES)
        for family in audit.risk_tests_run:
            adjusted = audit.risk_p_values_adjusted[family]
            assert 0.0 <= audit.risk_p_values[family] <= adjusted <= 1.0
            flagged = FAMILY_FLAGS[family] in audit.risk_flags
            assert flagged == (adjusted < 0.05), (family, adjusted, audit.risk_flags)
            flagged_somewhere |= flagged
        assert audit.overall_bias_risk == risk_level(
            len(audit.risk_flags), len(audit.risk_tests_run)
        )
    assert flagged_somewhere


def test_randomization_that_cannot_reach_the_level_is_recognised() -> None:
    rng = np.random.default_rng(0)
    # 3 reviewers x 2 cells: 2!^3 = 8 orderings, p >= 1/8 > 0.05
    three = np.repeat(np.arange(3), 2)
    assert randomization_cannot_fire(rng.normal(size=6), three, 0.05)
    # ... but at the 0.2 level 8 orderings can fire (1/8 < 0.2)
    assert not randomization_cannot_fire(rng.normal(size=6), three, 0.2)
    # 4 reviewers x 3 cells: 6^4 = 1296 orderings
    four = np.repeat(np.arange(4), 3)
    assert not randomization_cannot_fire(rng.normal(size=12), four, 0.05)
    # equal residuals within each reviewer: nothing moves under re-ordering
    assert randomization_cannot_fire(np.repeat([0.3, -0.1, 0.2, -0.4], 3), four, 0.05)


@pytest.mark.parametrize(
    "thresholds",
    [AuditThresholds(moderate_reviewer_noise=False), AuditThresholds(equal_reviewer_noise=True)],
)
def test_the_session_only_paths_predict_self_reviews_with_slot_effects_too(
    thresholds: AuditThresholds,
) -> None:
    spec = CouncilSpec(n_members=6, slot_effects=[[2.0]] * 6)
    adjusted = 0
    for index, session in enumerate(generate_sessions(spec, 12, 6)):
        table = score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )
        audit = audit_score_table(table, thresholds, permutation_seed=index)
        if "display-slot effects" in audit.indicator_only.get("self_preference", ""):
            adjusted += 1
            # 6 x 5 non-self scores, 11 + 5 parameters: 14 residual df, every test runs
            assert None not in audit.self_preference_p_values.values()
            assert "self_preference" in audit.risk_tests_run
    assert adjusted >= 10
