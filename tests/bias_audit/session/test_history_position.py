"""Position with history: slot-free noise profiles and the weighted slot test (ADR 0047)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.reviewer_profiles import (
    ReviewerProfile,
    merge_profiles,
    records_profiles,
    session_profiles,
)
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.noise_priors import history_variances, slot_adjusted_history
from llm_council.bias_audit.session.score_table import score_table_from_mappings
from llm_council.bias_audit.session.thresholds import AuditThresholds

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_session  # noqa: E402

SDS = [0.5, 0.75, 1.0, 1.25, 1.5]
#: the thresholds without ADR 0071's session-only check, under which the slot guards act
UNCHECKED = AuditThresholds(history_session_check="off")


def _cells(session, *, with_slots: bool) -> list:  # type: ignore[no-untyped-def]
    cells = []
    for reviewer, given in session.stage2_scores.items():
        for candidate, score in given.items():
            if reviewer == candidate or score is None:
                continue
            slot = session.position_mapping[reviewer][candidate]
            cells.append(
                (reviewer, candidate, score, slot) if with_slots else (reviewer, candidate, score)
            )
    return cells


def _history(spec: CouncilSpec, n_sessions: int, seed: int, *, with_slots: bool) -> dict:
    rng = np.random.default_rng(seed)
    profiles: dict[str, ReviewerProfile] = {}
    for _ in range(n_sessions):
        session = generate_session(spec, rng)
        profiles = merge_profiles(
            profiles, session_profiles(_cells(session, with_slots=with_slots))
        )
    return profiles


def test_a_favoured_slot_is_not_counted_as_noise_in_the_slot_adjusted_history() -> None:
    spec = CouncilSpec(n_members=5, noise_sds=SDS, slot_effects=[[2.0]] * 5, quality_scale=1.0)
    profiles = _history(spec, 300, 1, with_slots=True)
    adjusted = history_variances(slot_adjusted_history(profiles))
    two_way = history_variances(profiles)
    # integer scores add about 1/12 to each variance (Sheppard's correction)
    truth = np.array(SDS) ** 2 + 1 / 12
    estimated = np.array([adjusted[f"judge-{i}"][0] for i in range(5)])
    inflated = np.array([two_way[f"judge-{i}"][0] for i in range(5)])
    assert estimated == pytest.approx(truth, rel=0.3, abs=0.1)
    # the two-way sums count +2 on slot A as noise: about 4 * (1/5) * (4/5) = 0.64 more
    assert np.all(inflated - estimated > 0.3)
    # cells without slots give two-way sums only, identical to the slotted ones'
    no_slots = _history(spec, 300, 1, with_slots=False)
    assert slot_adjusted_history(no_slots) == {}
    assert history_variances(no_slots) == two_way


def test_records_carry_their_slot_into_the_profile() -> None:
    spec = CouncilSpec(n_members=5, noise_sds=SDS, slot_effects=[[3.0]] * 5)
    session = generate_session(spec, np.random.default_rng(2))
    records = session.records()
    from_records = records_profiles(records)
    from_cells = session_profiles(_cells(session, with_slots=True))
    assert from_records == from_cells
    # a record without a usable position falls back to the two-way fit
    unknown = [{**record, "position": None} for record in records]
    assert records_profiles(unknown) == session_profiles(_cells(session, with_slots=False))
    assert all(profile.slot_adjusted is None for profile in records_profiles(unknown).values())
    assert all(profile.slot_adjusted is not None for profile in from_records.values())
    hostile = [{**record, "position": True} for record in records]
    assert records_profiles(hostile) == records_profiles(unknown)


def test_with_history_the_slot_test_is_weighted_and_finds_a_strong_slot_effect() -> None:
    spec = CouncilSpec(n_members=5, noise_sds=SDS, slot_effects=[[3.0]] * 5)
    history = _history(spec, 30, 3, with_slots=True)
    rng = np.random.default_rng(4)
    flagged = 0
    flagged_checked = 0
    for _ in range(20):
        session = generate_session(spec, rng)
        table = score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )
        audit = audit_score_table(table, UNCHECKED, history=history)
        assert "weighted Wald test" in audit.indicator_only["position"]
        flagged += bool(audit.position_bias_detected)
        # the default checks the history's slot test against the randomization test
        # (ADR 0071): the larger of the two p-values, never below the session-only one
        checked = audit_score_table(table, AuditThresholds(), history=history)
        alone = audit_score_table(table, AuditThresholds())
        assert "larger of its p-value and the randomization" in checked.indicator_only["position"]
        assert checked.position_score_p_value is not None
        assert alone.position_score_p_value is not None
        assert checked.position_score_p_value >= alone.position_score_p_value
        flagged_checked += bool(checked.position_bias_detected)
    # +3 on slot A at 5 members: about 85% of sessions before ADR 0050/0051; 11 of these 20
    # with both (the position family gets its Holm share of the session's 5%, and the
    # Wald test's df falls with the history's df cap), without ADR 0071's check
    assert flagged >= 10
    assert 1 <= flagged_checked <= flagged
    # without history the randomization test runs, as before
    audit = audit_score_table(table, AuditThresholds())
    assert "weighted Wald" not in audit.indicator_only.get("position", "")


def test_the_slot_guards_never_lower_the_slot_tests_p_value() -> None:
    # ADR 0059's amendment: each guard against a stale history reads the same session's
    # slot effects more cautiously than "none" (Satterthwaite's df): the smallest reviewer df (same
    # statistic, fewer df: F's tail is larger), the larger of two p-values, a df with a
    # doubtful reviewer's history left out, a smaller prior cap (fewer df). None may give a
    # smaller p-value than the default on any session; each names itself in the note.
    spec = CouncilSpec(n_members=5, noise_sds=SDS, slot_effects=[[1.5]] * 5)
    history = _history(spec, 30, 5, with_slots=True)
    rng = np.random.default_rng(6)
    guards = ("smallest-df", "larger-p", "screen-df")
    compared = 0
    for _ in range(8):
        session = generate_session(spec, rng)
        table = score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )
        default = audit_score_table(
            table, UNCHECKED.model_copy(update={"slot_history_guard": "none"}), history=history
        )
        if default.position_score_p_value is None:
            continue
        compared += 1
        for guard in guards:
            guarded = audit_score_table(
                table,
                UNCHECKED.model_copy(update={"slot_history_guard": guard}),
                history=history,
            )
            assert guarded.position_score_p_value is not None
            assert guarded.position_score_p_value >= default.position_score_p_value - 1e-12
        smallest = audit_score_table(
            table,
            UNCHECKED.model_copy(update={"slot_history_guard": "smallest-df"}),
            history=history,
        )
        assert "smallest reviewer df" in smallest.indicator_only["position"]
    assert compared >= 6


def test_every_slot_guard_runs_and_says_which_it_is() -> None:
    # each guard's audit of one session with history is a tested position family whose
    # note names the guard (the randomization guard re-draws orders: its p-value is a
    # multiple of 1 / (permutations + 1))
    spec = CouncilSpec(n_members=5, noise_sds=SDS, slot_effects=[[2.0]] * 5)
    history = _history(spec, 30, 9, with_slots=True)
    session = generate_session(spec, np.random.default_rng(10))
    table = score_table_from_mappings(
        session.stage1_responses, session.stage2_scores, session.position_mapping
    )
    expected = {
        "none": "Satterthwaite's df over",
        "session-floor": "residual mean square",
        "smallest-df": "smallest reviewer df",
        "larger-p": "larger of its p-value",
        "weighted-randomization": "re-drawing the display orders",
        "screen-df": "noise screen's level",
        "prior-cap": "slot_history_prior_df_max",
    }
    for guard, phrase in expected.items():
        thresholds = AuditThresholds(
            slot_history_guard=guard,  # type: ignore[arg-type]
            history_prior_df_max=float("inf") if guard == "screen-df" else 10.0,
            history_session_check="off",  # the check makes every guard "larger-p"
        )
        audit = audit_score_table(table, thresholds, history=history)
        assert audit.position_score_p_value is not None, guard
        assert 0.0 < audit.position_score_p_value <= 1.0, guard
        assert phrase in audit.indicator_only["position"], guard
        if guard == "weighted-randomization":
            draws = AuditThresholds().position_permutations + 1
            assert math.isclose(
                audit.position_score_p_value * draws,
                round(audit.position_score_p_value * draws),
                abs_tol=1e-6,
            )
