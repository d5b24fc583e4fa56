"""Issue 23: what rank-only reviews, one fixed display order and deterministic judges can
and cannot show, per session and in the cross-session report (ADR 0040).

Data come from ``tests/generators/rank_council.py`` (karpathy-shaped rankings), written
for the tests and independent of ``llm_council.simulation``, and pass through the public
drop-in path (``extract_scores_from_stage2`` -> ``run_bias_audit``) or a JSONL store and
``build_report``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from generators.rank_council import RankCouncilSpec, RankSession, generate_sessions, write_store
from llm_council.bias_audit.report import (
    BiasReport,
    build_report,
    render_csv,
    render_html,
    render_json,
    render_text,
)
from llm_council.bias_audit.session.audit import run_bias_audit
from llm_council.bias_audit.session.design_limits import has_one_shared_order, is_rank_only
from llm_council.bias_audit.session.result import BiasAuditResult
from llm_council.bias_audit.session.score_table import score_table_from_mappings
from llm_council.bias_audit.session.stage2_scores import extract_scores_from_stage2
from llm_council.stats.ranking.rank_points import review_is_rank_points, table_is_rank_points


def _audit(session: RankSession) -> BiasAuditResult:
    scores = extract_scores_from_stage2(session.stage2, session.label_to_model)
    return run_bias_audit(session.stage1, scores, session.label_to_model)


def _table(session: RankSession):  # noqa: ANN202 - a ScoreTable
    scores = extract_scores_from_stage2(session.stage2, session.label_to_model)
    return score_table_from_mappings(session.stage1, scores, session.label_to_model)


# --- recognising rank points -------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "n_shown", "expected"),
    [
        ([4, 3, 2, 1], 4, True),
        ([1, 4, 2, 3], 4, True),  # any order
        ([4, 3, 2], 4, True),  # the last place left unranked (a missing cell)
        ([3, 2, 1], 4, False),  # not the top of 1..4
        ([4, 4, 2, 1], 4, False),  # a tie: scores
        ([4.5, 3, 2, 1], 4, False),
        ([7, 9, 8, 6], 4, False),  # a 1-10 scorer
        ([np.nan, 2, 1], 2, True),  # NaN is no score
        ([], 3, False),
    ],
)
def test_a_review_is_rank_points_when_its_scores_are_the_top_of_n_to_1(
    scores: list[float], n_shown: int, expected: bool
) -> None:
    assert review_is_rank_points(scores, n_shown) is expected


def test_a_table_needs_every_scored_row_in_rank_points_and_one_full_pair() -> None:
    nan = np.nan
    assert table_is_rank_points([[3, 2, 1], [1, 3, 2], [nan, nan, nan]], [3, 3, 3])
    assert not table_is_rank_points([[3, 2, 1], [9, 3, 2]], [3, 3])
    assert not table_is_rank_points([[3, nan, nan], [3, nan, nan]], [3, 3])  # 1 score a row


@pytest.mark.parametrize("order", ["fixed", "session", "reviewer"])
def test_rankings_are_recognised_and_integer_scores_with_ties_are_not(order: str) -> None:
    ranked = generate_sessions(RankCouncilSpec(order=order, truncate_rate=0.3), 20, seed=1)
    assert all(is_rank_only(_table(session)) for session in ranked)
    scored = generate_sessions(RankCouncilSpec(order=order, scores=True), 20, seed=1)
    assert not any(is_rank_only(_table(session)) for session in scored)


# --- per session --------------------------------------------------------------------------


def test_karpathy_shaped_sessions_test_nothing_and_say_so() -> None:
    """Rankings only, one fixed order, 4 members: the issue's 30 of 30 "low" sessions."""
    sessions = generate_sessions(RankCouncilSpec(n_members=4, order="fixed"), 30, seed=23)
    for session in sessions:
        result = _audit(session)
        assert result.overall_bias_risk == "not_tested"
        assert result.risk_tests_run == []
        assert all(p is None for p in result.reviewer_offset_p_values.values())
        assert result.harsh_reviewers == result.generous_reviewers == []
        assert "rank points" in result.indicator_only["leniency"]
        assert "identical display order" in result.indicator_only["confounded_with_slot"]
        assert "not identified" in result.indicator_only["position"]


@pytest.mark.parametrize("n_members", [4, 5])
def test_rank_only_sessions_never_count_leniency_as_tested(n_members: int) -> None:
    spec = RankCouncilSpec(n_members=n_members, order="reviewer", truncate_rate=0.2)
    results = [_audit(session) for session in generate_sessions(spec, 40, seed=n_members)]
    assert all("leniency" not in r.risk_tests_run for r in results)
    assert all(r.harsh_reviewers == r.generous_reviewers == [] for r in results)
    lows = [r for r in results if r.overall_bias_risk == "low"]
    assert lows  # position / self-preference still run on ranks
    assert all(set(r.risk_tests_run) <= {"position", "self_preference"} for r in lows)


def test_integer_scores_still_test_leniency() -> None:
    spec = RankCouncilSpec(n_members=5, order="reviewer", scores=True)
    results = [_audit(session) for session in generate_sessions(spec, 20, seed=5)]
    assert any("leniency" in r.risk_tests_run for r in results)
    assert all("leniency" not in r.indicator_only for r in results)


def test_one_shared_order_withholds_self_preference_flags() -> None:
    """A strong self-preference is flagged with per-reviewer orders and, with one order
    shared by the session's reviewers, estimated but not flagged nor counted as tested."""
    bias = [2.0] + [0.0] * 6
    own = RankCouncilSpec(n_members=7, order="reviewer", self_bias=bias, noise_sd=0.3, scores=True)
    shared = RankCouncilSpec(
        n_members=7, order="session", self_bias=bias, noise_sd=0.3, scores=True
    )
    own_results = [_audit(s) for s in generate_sessions(own, 30, seed=8)]
    shared_sessions = generate_sessions(shared, 30, seed=8)
    shared_results = [_audit(s) for s in shared_sessions]
    # measured 7 of 30 (14 before ADR 0050: the family now shares the session's level with
    # position and leniency, Holm over three, and is predicted with slot effects)
    assert sum(r.self_preference_detected for r in own_results) >= 5
    assert not any(r.self_preference_detected for r in shared_results)
    assert all("self_preference" not in r.risk_tests_run for r in shared_results)
    assert all("confounded_with_slot" in r.indicator_only for r in shared_results)
    assert any(p is not None for r in shared_results for p in r.self_preference_p_values.values())
    assert all(has_one_shared_order(_table(s)) for s in shared_sessions)
    assert not any(has_one_shared_order(_table(s)) for s in generate_sessions(own, 10, seed=8))


JUDGES = ("first", "last", "mostly_first")


@pytest.mark.parametrize("n_members", [2, 3, 4, 5])
@pytest.mark.parametrize("order", ["fixed", "session", "reviewer"])
@pytest.mark.parametrize("judge", JUDGES)
def test_per_session_claims_on_rankings_at_every_size_and_order(
    n_members: int, order: str, judge: str
) -> None:
    """What a single rank-only session may claim: never leniency; with one identical order
    neither position nor self-preference; with per-reviewer orders position is tested from
    4 members on (2 members: never identified)."""
    spec = RankCouncilSpec(
        n_members=n_members, order=order, judges=[judge] + ["honest"] * (n_members - 1)
    )
    results = [_audit(s) for s in generate_sessions(spec, 12, seed=n_members)]
    for result in results:
        assert "leniency" not in result.risk_tests_run
        assert result.harsh_reviewers == result.generous_reviewers == []
        if order != "reviewer":
            assert result.risk_tests_run == []
            assert result.overall_bias_risk == "not_tested"
            assert not result.position_bias_detected and not result.self_preference_detected
    tested = sum(r.position_score_p_value is not None for r in results)
    if order == "reviewer" and n_members >= 4:
        assert tested >= 9  # 0.89-1.00 of sessions (docs/bias-audit.md)
    if n_members == 2:
        assert tested == 0


def test_a_council_of_always_a_judges_is_flagged_per_session_where_identified() -> None:
    """Per session the position test is the randomization test of the residuals (valid
    at any size); with 5 members, each its own order, an all-"first" council is flagged in
    about half of single sessions (measured 57 of 100, docs/bias-audit.md); with one fixed
    order it is not identified and not tested."""
    spec = RankCouncilSpec(n_members=5, order="reviewer", judges=["first"] * 5)
    results = [_audit(s) for s in generate_sessions(spec, 60, seed=2)]
    assert sum(r.position_bias_detected for r in results) >= 20
    fixed = RankCouncilSpec(n_members=5, order="fixed", judges=["first"] * 5)
    for result in (_audit(s) for s in generate_sessions(fixed, 10, seed=2)):
        assert result.position_score_p_value is None
        assert "position" not in result.risk_tests_run


# --- across sessions (the report) ---------------------------------------------------------


def _report(tmp_path: Path, spec: RankCouncilSpec, seed: int, n_sessions: int = 30) -> BiasReport:
    path = tmp_path / f"store-{seed}.jsonl"
    write_store(path, generate_sessions(spec, n_sessions, seed=seed))
    return build_report(path, n_resamples=20)


@pytest.mark.parametrize("n_members", [2, 3, 4, 5])
@pytest.mark.parametrize("order", ["session", "reviewer"])
@pytest.mark.parametrize(("judge", "direction"), [("first", "primacy"), ("last", "recency")])
def test_deterministic_judges_are_flagged_across_sessions(
    tmp_path: Path, n_members: int, order: str, judge: str, direction: str
) -> None:
    spec = RankCouncilSpec(
        n_members=n_members, order=order, judges=[judge] + ["honest"] * (n_members - 1)
    )
    report = _report(tmp_path, spec, seed=n_members)
    assert report.position is not None
    profile = next(p for p in report.position.per_reviewer if p.subject.endswith("-0"))
    assert profile.flagged, profile
    assert profile.direction == direction
    if order == "session":
        # one shared order a session: the across-sessions estimator, whose slot-A variance
        # is exactly 0 for this judge: the randomization test replaces the Wald test
        assert profile.basis == "across sessions"
        assert profile.test_method == "randomization"
        assert profile.adjusted_p_value <= n_members / 1000
        slot_a = profile.slot_effect[0]
        assert slot_a.ci_low == pytest.approx(slot_a.ci_high)  # zero spread, printed as such
        text = render_text(report)
        assert "randomization test over display orders" in text
        assert "randomization_variance:across sessions" in render_csv(report)


@pytest.mark.parametrize("n_members", [2, 3, 4, 5])
def test_a_ninety_percent_a_judge_is_flagged_too(tmp_path: Path, n_members: int) -> None:
    judges = ["mostly_first"] + ["honest"] * (n_members - 1)
    for order in ("session", "reviewer"):
        spec = RankCouncilSpec(n_members=n_members, order=order, judges=judges)
        report = _report(tmp_path, spec, seed=40 + n_members)
        assert report.position is not None
        profile = next(p for p in report.position.per_reviewer if p.subject.endswith("-0"))
        assert profile.flagged and profile.direction == "primacy"


def test_rank_only_reports_leave_leniency_and_spread_unidentified(tmp_path: Path) -> None:
    spec = RankCouncilSpec(n_members=4, order="reviewer", truncate_rate=0.1)
    report = _report(tmp_path, spec, seed=3)
    assert {p.leniency_label for p in report.profiles} == {"not identified"}
    assert {p.spread_label for p in report.profiles} == {"not identified"}
    text = render_text(report)
    assert "Rankings only (rank points N..1, no scores)" in text
    assert "rank points from rankings" in text
    scored = _report(tmp_path, RankCouncilSpec(n_members=4, order="reviewer", scores=True), 4)
    assert "not identified" not in {p.spread_label for p in scored.profiles}


@pytest.mark.parametrize("n_members", [2, 3, 4, 5])
@pytest.mark.parametrize("judge", JUDGES)
def test_fixed_order_never_flags_the_slot_a_model_as_favoured(
    tmp_path: Path, n_members: int, judge: str
) -> None:
    spec = RankCouncilSpec(
        n_members=n_members, order="fixed", judges=["honest", judge] + ["honest"] * (n_members - 2)
    )
    report = _report(tmp_path, spec, seed=60 + n_members)
    assert report.position is not None
    assert not report.position.council.identified
    assert not any(p.identified or p.flagged for p in report.position.per_reviewer)
    matrix = report.families.favouritism if report.families else None
    if matrix is not None:
        assert matrix.flagged_pairs() == [] and matrix.mutual_blocs == []
        assert all(c.confounded_with_slot and not c.flagged for c in matrix.cells)
    assert not any(s.detected for s in report.self_preference)


def test_fixed_order_favouritism_and_self_preference_carry_the_confound(tmp_path: Path) -> None:
    """The issue's case: member 1 always ranks Response A (member 0's answer) first."""
    spec = RankCouncilSpec(
        n_members=4, order="fixed", judges=["honest", "first", "honest", "honest"]
    )
    report = _report(tmp_path, spec, seed=23)
    assert report.position is not None and not report.position.council.identified
    matrix = report.families.favouritism if report.families else None
    assert matrix is not None
    cell = next(c for c in matrix.cells if c.reviewer.endswith("-1") and c.model.endswith("-0"))
    # without the confound rule this cell is flagged (Holm p < 1e-4, about +2 points)
    assert cell.holm_p < 1e-3 and cell.effect.estimate > 1.0
    assert cell.confounded_with_slot and cell.fixed_slot == 0 and not cell.flagged
    assert matrix.flagged_pairs() == []
    assert all(c.confounded_with_slot for c in matrix.cells)
    assert report.self_preference
    assert all(s.confounded_with_slot and not s.detected for s in report.self_preference)
    assert any(s.adjusted.excludes_zero() for s in report.self_preference)

    text = render_text(report)
    assert "favours" not in text
    assert "Not flagged, confounded with slot A: vendor/model-1 -> vendor/model-0" in text
    assert "<- detected" not in text
    assert "confounded with slot" in render_html(report)
    payload = json.loads(render_json(report))
    assert payload["families"]["favouritism"]["cells"][0]["confounded_with_slot"] is True
    assert all(item["confounded_with_slot"] for item in payload["self_preference"])
    metrics = {row["metric"] for row in csv.DictReader(io.StringIO(render_csv(report)))}
    assert "confounded_with_slot:A" in metrics


def test_shuffled_orders_carry_no_confound(tmp_path: Path) -> None:
    spec = RankCouncilSpec(n_members=4, order="session")
    report = _report(tmp_path, spec, seed=9)
    matrix = report.families.favouritism if report.families else None
    assert matrix is not None
    assert not any(c.confounded_with_slot for c in matrix.cells)
    assert not any(s.confounded_with_slot for s in report.self_preference)


def test_a_council_of_always_a_judges_with_shared_orders_is_flagged_council_wide(
    tmp_path: Path,
) -> None:
    """Every reviewer always ranks A first, one shuffled order a session: the council's
    covariance is singular too; its randomization units are sessions (one shared order)."""
    spec = RankCouncilSpec(n_members=4, order="session", judges=["first"] * 4)
    report = _report(tmp_path, spec, seed=1)
    assert report.position is not None
    council = report.position.council
    assert council.test_method == "randomization" and council.flagged
    assert council.direction == "primacy"
    assert council.test_p_value == pytest.approx(1 / 20_000)  # refined: no re-shuffle reaches it
    assert all(p.flagged for p in report.position.per_reviewer)


def test_a_ranker_among_scorers_gets_no_leniency_label(tmp_path: Path) -> None:
    """One reviewer ranks (rank points 1..4) while three score 1-10: its mean (2.5) is on
    another scale, so it is neither harsh nor in the others' reference."""
    spec = RankCouncilSpec(n_members=4, order="reviewer", scores=True)
    path = tmp_path / "mixed.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for session in generate_sessions(spec, 40, seed=12):
            records = session.records()
            ranker = [r for r in records if r["reviewer_id"].endswith("-0")]
            ranker.sort(key=lambda r: (-r["score_value"], r["position"]))
            for place, record in enumerate(ranker):
                record["score_value"], record["rank"] = float(len(ranker) - place), place + 1
            handle.writelines(json.dumps(record) + "\n" for record in records)
    report = build_report(path, n_resamples=20)
    labels = {p.reviewer[-1]: (p.leniency_label, p.spread_label) for p in report.profiles}
    assert labels["0"] == ("not identified", "not identified")
    assert all(labels[k][0] != "not identified" for k in "123")
    assert all(labels[k][1] != "not identified" for k in "123")
    ranker_profile = next(p for p in report.profiles if p.reviewer.endswith("-0"))
    assert not ranker_profile.in_leniency_reference
