"""ADR 0071: the history's risk flags checked against the session-only path's (an
intersection-union test), so a history written under other noise cannot raise the
session's error rate."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from llm_council.bias_audit.records.reviewer_profiles import (
    Profiles,
    merge_profiles,
    session_profiles,
)
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.family_leniency import LeniencyOutcome
from llm_council.bias_audit.session.family_self_preference import SelfPreferenceOutcome
from llm_council.bias_audit.session.history_check import (
    checked_leniency,
    checked_self_preference,
    larger_p_value,
    session_scale,
)
from llm_council.bias_audit.session.score_table import ScoreTable, score_table_from_mappings
from llm_council.bias_audit.session.thresholds import AuditThresholds

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bias_audit.session.test_history_drift import _cells  # noqa: E402
from generators.independent_council import CouncilSpec, generate_session  # noqa: E402

OFF = AuditThresholds(history_session_check="off")


def _table(spec: CouncilSpec, rng: np.random.Generator) -> ScoreTable:
    session = generate_session(spec, rng)
    return score_table_from_mappings(
        session.stage1_responses, session.stage2_scores, session.position_mapping
    )


def _history(spec: CouncilSpec, n_sessions: int, rng: np.random.Generator) -> Profiles:
    history: Profiles = {}
    for _ in range(n_sessions):
        history = merge_profiles(history, session_profiles(_cells(_table(spec, rng))))
    return history


def test_the_larger_p_value_and_its_looser_form() -> None:
    # max(p_h, s p_s): s = 1 is the intersection-union test (Berger 1982)
    assert larger_p_value(0.01, 0.3) == 0.3
    assert larger_p_value(0.3, 0.01) == 0.3
    assert larger_p_value(0.01, None) is None and larger_p_value(None, 0.3) is None
    # s = 0.05 / 0.2 = 0.25: the session leg at 0.2 (0.25 * 0.16 = 0.04 > 0.01)
    assert larger_p_value(0.01, 0.16, 0.25) == pytest.approx(0.04)
    assert session_scale(AuditThresholds()) == 1.0
    assert session_scale(AuditThresholds(history_session_check_level=0.2)) == pytest.approx(0.25)
    # a gamma below the significance level cannot make the check stricter than max(p, p)
    assert session_scale(AuditThresholds(history_session_check_level=0.01)) == 1.0


@pytest.mark.parametrize("gamma", [0.0, 1.0, -0.1, float("nan")])
def test_a_session_check_level_outside_zero_one_is_refused(gamma: float) -> None:
    with pytest.raises(ValidationError, match="history_session_check_level"):
        AuditThresholds(history_session_check_level=gamma)
    with pytest.raises(ValidationError, match="history_session_check"):
        AuditThresholds(history_session_check="sometimes")  # type: ignore[arg-type]


def _leniency(p_values: dict[str, float | None], **named: list[str]) -> LeniencyOutcome:
    offsets = {"a": -1.5, "b": 0.2, "c": 1.3, "d": None}
    return LeniencyOutcome(
        offsets=offsets,
        p_values=p_values,
        offsets_vs_median=offsets,
        harsh=named.get("harsh", []),
        generous=named.get("generous", []),
    )


def test_leniency_takes_each_reviewers_larger_p_value_and_names_only_whom_both_name() -> None:
    history = _leniency({"a": 0.001, "b": 0.9, "c": 0.04, "d": None}, harsh=["a"])
    session = _leniency({"a": 0.2, "b": 0.95, "c": 0.03, "d": 0.5}, generous=["c"])
    combined = checked_leniency(history, session, offset_floor=1.0)
    assert combined.p_values == {"a": 0.2, "b": 0.95, "c": 0.04, "d": None}
    assert (combined.harsh, combined.generous) == ([], [])
    both = checked_leniency(history, _leniency(session.p_values, harsh=["a"]), 1.0)
    assert both.harsh == ["a"]


def test_the_leniency_gate_is_at_least_the_session_only_gate() -> None:
    # at the first step (nobody named) each path's gate is its least p-value among the
    # offsets reaching the floor (a, c here; b is 0.2 points); the combined gate is the
    # least of the per-reviewer maxima over the same reviewers: min(0.2, 0.04) = 0.04,
    # at least the session-only gate min(0.2, 0.03) = 0.03 and the history's 0.001
    history = _leniency({"a": 0.001, "b": 0.002, "c": 0.04, "d": None})
    session = _leniency({"a": 0.2, "b": 0.001, "c": 0.03, "d": 0.5})
    assert checked_leniency(history, session, offset_floor=1.0).gate_p_value == 0.04
    # nothing reaches a 2-point floor: no gate (the family reads p = 1)
    assert checked_leniency(history, session, offset_floor=2.0).gate_p_value is None
    rng = np.random.default_rng(0)
    for _ in range(200):
        p_h, p_s = rng.uniform(size=(2, 4)) ** 3
        names = "abcd"
        first = _leniency(dict(zip(names, p_h.tolist(), strict=True)))
        second = _leniency(dict(zip(names, p_s.tolist(), strict=True)))
        gate = checked_leniency(first, second, offset_floor=1.0).gate_p_value
        session_gate = min(p_s[0], p_s[2])  # a and c reach the floor
        assert gate is not None and gate >= session_gate and gate >= min(p_h[0], p_h[2])


def _self_preference(p_values: dict[str, float | None], pooled: float) -> SelfPreferenceOutcome:
    return SelfPreferenceOutcome(
        raw={"a": 2.0, "b": 0.1},
        adjusted={"a": 2.0, "b": 0.1},
        p_values=p_values,
        pooled_estimate=1.2,
        pooled_p_value=pooled,
        pooled_flag_factor=2.0,
        n_self_reviews=2,
        floor=1.0,
    )


def test_self_preference_takes_the_larger_p_values_and_the_flag_follows() -> None:
    history = _self_preference({"a": 0.001, "b": 0.5}, pooled=0.002)
    session = _self_preference({"a": 0.08, "b": None}, pooled=0.03)
    combined = checked_self_preference(history, session)
    assert combined.p_values == {"a": 0.08, "b": None}
    assert combined.pooled_p_value == 0.03
    # gate: min(a's 0.08, the pooled 2 * 0.03) = 0.06, not the history's 0.001
    assert combined.gate_p_value == pytest.approx(0.06)
    assert history.detected_at(0.05) and not combined.detected_at(0.05)


def _stale_sessions(n_members: int, seed: int, count: int) -> list[tuple[ScoreTable, Profiles]]:
    """Honest sessions whose 30-session history has judge 0 at SD 0.5; it is 2.0 now."""
    sds = np.linspace(0.5, 1.5, n_members).tolist()
    rng = np.random.default_rng(seed)
    history = _history(CouncilSpec(n_members=n_members, noise_sds=sds), 30, rng)
    now = CouncilSpec(n_members=n_members, noise_sds=[2.0] + sds[1:])
    return [(_table(now, rng), history) for _ in range(count)]


@pytest.mark.parametrize("n_members", [4, 5, 9])
def test_each_risk_p_value_is_at_least_the_session_only_ones(n_members: int) -> None:
    # the guarantee's core, session by session: with the check, leniency's and position's
    # gate p-values are never below the no-history audit's (the same session-only tests),
    # and never below the history's own
    for table, history in _stale_sessions(n_members, seed=n_members, count=6):
        checked = audit_score_table(table, AuditThresholds(), history=history)
        alone = audit_score_table(table, AuditThresholds())
        unchecked = audit_score_table(table, OFF, history=history)
        assert "history_check" in checked.indicator_only
        assert "history_check" not in alone.indicator_only | unchecked.indicator_only
        for family in ("leniency", "position"):
            if family in checked.risk_p_values and family in alone.risk_p_values:
                assert checked.risk_p_values[family] >= alone.risk_p_values[family] - 1e-12
        # (position with history reads Satterthwaite's df under the check, the "larger-p"
        # guard, so it may be below the unchecked "smallest-df" one: only leniency here)
        if "leniency" in checked.risk_p_values and "leniency" in unchecked.risk_p_values:
            assert checked.risk_p_values["leniency"] >= unchecked.risk_p_values["leniency"] - 1e-12
        first_step = not (checked.harsh_reviewers or checked.generous_reviewers)
        for name, p_value in checked.reviewer_offset_p_values.items():
            session_p = alone.reviewer_offset_p_values.get(name)
            if first_step and p_value is not None and session_p is not None:
                # first-step p-values: Holm's factor is the same on both paths
                assert p_value >= session_p - 1e-12
        assert set(checked.harsh_reviewers) <= set(unchecked.harsh_reviewers)
        assert set(checked.generous_reviewers) <= set(unchecked.generous_reviewers)


def test_a_stale_history_that_names_an_honest_judge_no_longer_does() -> None:
    # judge 0's history says SD 0.5, it is 2.0 now: without the check its leniency test
    # runs on the old variance and names it in some honest sessions; with it, never in
    # these (the session-only path sees the judge's own noise)
    named_unchecked = named_checked = 0
    for table, history in _stale_sessions(4, seed=11, count=40):
        unchecked = audit_score_table(table, OFF, history=history)
        checked = audit_score_table(table, AuditThresholds(), history=history)
        named_unchecked += bool(unchecked.harsh_reviewers or unchecked.generous_reviewers)
        named_checked += bool(checked.harsh_reviewers or checked.generous_reviewers)
    assert named_unchecked >= 1
    assert named_checked < named_unchecked


def test_no_history_no_check_and_no_change() -> None:
    # without history (or with the check off) the audit is the session-only path's
    rng = np.random.default_rng(3)
    spec = CouncilSpec(n_members=5, noise_sds=[0.5, 0.75, 1.0, 1.25, 1.5])
    table = _table(spec, rng)
    assert audit_score_table(table, AuditThresholds()) == audit_score_table(table, OFF)
    assert "history_check" not in audit_score_table(table, AuditThresholds()).indicator_only


def test_integer_ties_a_constant_judge_and_missing_cells_keep_finite_p_values() -> None:
    # the independent generator's scores are integers clipped to 1-10 (ties); a judge
    # giving one score to everything and a missing cell must not break either path
    rng = np.random.default_rng(8)
    spec = CouncilSpec(n_members=5, noise_sds=[0.5, 0.75, 1.0, 1.25, 1.5])
    history = _history(spec, 30, rng)
    table = _table(spec, rng)
    scores = table.scores.copy()
    scores[1] = np.where(np.isnan(scores[1]), np.nan, 7.0)
    scores[2, 3 if not table.is_self[2, 3] else 4] = np.nan
    for variant in (table, dataclasses.replace(table, scores=scores)):
        audit = audit_score_table(variant, AuditThresholds(), history=history)
        assert audit.risk_tests_run
        for value in [*audit.risk_p_values.values(), *audit.risk_p_values_adjusted.values()]:
            assert 0.0 <= value <= 1.0
        for value in audit.reviewer_offset_p_values.values():
            assert value is None or 0.0 <= value <= 1.0


def test_scores_that_fit_exactly_leave_nothing_to_check_the_history_with() -> None:
    # a session whose scores are exactly additive has no residual noise: the session-only
    # path cannot test leniency or self-preference, so with the check the history gives
    # them no support either ("not tested", never p = 1 read as "low" evidence)
    rng = np.random.default_rng(1)
    spec = CouncilSpec(n_members=4, noise_sds=[1.0] * 4)
    history = _history(spec, 30, rng)
    table = _table(spec, rng)
    rows, columns = table.scores.shape
    exact = np.add.outer(np.arange(rows, dtype=float), np.arange(columns, dtype=float)) + 3.0
    exact[np.isnan(table.scores)] = np.nan
    audit = audit_score_table(
        dataclasses.replace(table, scores=exact), AuditThresholds(), history=history
    )
    assert "leniency" not in audit.risk_tests_run
    assert "self_preference" not in audit.risk_tests_run
    assert audit.harsh_reviewers == [] and audit.generous_reviewers == []
    unchecked = audit_score_table(dataclasses.replace(table, scores=exact), OFF, history=history)
    assert "leniency" in unchecked.risk_tests_run
