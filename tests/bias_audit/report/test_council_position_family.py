"""The council position family's two hypotheses from 4 slots on (ADR 0076): the edge test
(ADR 0072) and the all-slots-equal test; nested, so tested by their weighted min-p test at
the family's whole share (ADR 0082)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.position_fit import _edge_tested
from llm_council.bias_audit.report.estimates import Interval, SlotProfile
from llm_council.bias_audit.report.finding import Finding
from llm_council.bias_audit.report.hypotheses import (
    ALL_SLOTS_BIAS,
    Hypothesis,
    report_hypotheses,
)
from llm_council.bias_audit.report.report_verdicts import adjusted_p_values
from llm_council.stats.design.joint_model import wald_test
from llm_council.stats.inference.nested_wald import nested_wald_min_p
from llm_council.stats.slots.edge_slots import edge_slot_wald


def _profile(p_value: float, n_slots: int) -> SlotProfile:
    nan = float("nan")
    return SlotProfile(
        subject="council",
        n_sessions=12,
        slot_effect=[Interval(nan, nan, nan)] * n_slots,
        test_statistic=nan,
        test_df=(n_slots - 1, 12 - n_slots + 1),
        test_p_value=p_value,
        adjusted_p_value=p_value,
        trend=Interval(nan, nan, nan),
        direction="",
        identified=True,
        flagged=False,
        basis="within answers",
    )


def test_the_all_slots_p_is_hotellings_and_kept_beside_the_edge_test() -> None:
    # C = 12 clusters of K = 5 slot vectors x_c, a middle slot (C) raised. With b the mean
    # and V = S / C, the all-slots Wald statistic on the K - 1 differences from the last slot
    # is Hotelling's T^2 of the 4-vectors D x_c, and (C - 4) / (4 (C - 1)) T^2 ~ F(4, C - 4)
    # (Hotelling 1931; Anderson 2003, sec. 5.2): computed here from the 4-vectors with
    # numpy's covariance and scipy's F tail.
    rng = np.random.default_rng(34)
    clusters = rng.normal(0.0, 1.0, (12, 5)) + np.array([0.0, 0.0, 0.9, 0.0, 0.0])
    b, v = clusters.mean(axis=0), np.cov(clusters, rowvar=False) / 12
    differences = np.hstack([np.eye(4), -np.ones((4, 1))])
    y = clusters @ differences.T
    y_bar = y.mean(axis=0)
    t2 = 12 * float(y_bar @ np.linalg.solve(np.cov(y, rowvar=False), y_bar))
    reference_p = float(stats.f.sf((12 - 4) / (4 * (12 - 1)) * t2, 4, 12 - 4))
    omnibus = wald_test(differences @ b, differences @ v @ differences.T, 12)
    assert math.isclose(omnibus.p_value, reference_p, rel_tol=1e-9)

    tested = _edge_tested(_profile(omnibus.p_value, 5), b, v, 12)
    assert tested.all_slots_p_value == omnibus.p_value
    assert math.isclose(tested.test_p_value, edge_slot_wald(b, v, 12).p_value, rel_tol=1e-12)
    # with 3 slots the edge test is the all-slots test: one hypothesis, no second p
    three = _edge_tested(_profile(0.2, 3), b[:3], v[:3, :3], 12)
    assert three.test_p_value == 0.2 and math.isnan(three.all_slots_p_value)


def test_without_the_pair_marked_each_test_first_enters_at_half_the_share() -> None:
    """ADR 0076's procedure, kept for hypotheses not marked as nested. Hand check (weights 7 : 1 : 1/4, ADR 0060): families leniency, council position (2
    hypotheses), length, self-preference: summed weights 1 + 7 + 7 + 7 = 22, so the council
    position family's share is 0.05 x 7/22 = 0.0159 and each of its two p first enters at
    half of it, 0.00795 (Holm within); once one is rejected the other has the whole share."""
    families = ["leniency", "council position", "council position", "length", "self-preference"]
    nan = float("nan")

    def adjusted(p: list[float]) -> np.ndarray:
        listed = [
            Hypothesis(Finding("x", "b", f, nan, nan, nan, "", q, nan, "", ""), ("t", i))
            for i, (f, q) in enumerate(zip(families, p, strict=True))
        ]
        return adjusted_p_values(listed, "fwer")

    share = 0.05 * 7 / 22
    inside, outside = share / 2 * 0.99, share / 2 * 1.01
    assert adjusted([0.9, inside, 0.9, 0.9, 0.9])[1] == pytest.approx(inside * 2 * 22 / 7)
    assert adjusted([0.9, inside, 0.9, 0.9, 0.9])[1] < 0.05
    assert adjusted([0.9, 0.9, outside, 0.9, 0.9])[2] > 0.05
    # the edge test rejected first: the all-slots p is then tested at the whole share
    both = adjusted([0.9, 1e-6, share * 0.99, 0.9, 0.9])
    assert both[1] < 0.05 and both[2] < 0.05


def test_the_nested_pair_enters_at_the_whole_share_through_its_min_p_test() -> None:
    """ADR 0082, by hand: families leniency, council position (edge, all slots), length,
    self-preference; summed weights 22, the family's share 0.05 x 7/22 = 0.0159. The pair's
    combined p is its weighted min-p test's; H_all's adjusted p is combined x 22/7, and
    H_edge also needs its own p below the whole share."""
    families = ["leniency", "council position", "council position", "length", "self-preference"]
    nan = float("nan")
    share = 0.05 * 7 / 22

    def adjusted(p: list[float], combined: float) -> np.ndarray:
        listed = [
            Hypothesis(Finding("x", "b", f, nan, nan, nan, "", q, nan, "", ""), ("t", i))
            for i, (f, q) in enumerate(zip(families, p, strict=True))
        ]
        listed[2] = Hypothesis(listed[2].finding, ("t", 2), implies=("t", 1), combined_p=combined)
        return adjusted_p_values(listed, "fwer")

    # a middle slot: p_all = 0.0085 is above half the share (Holm would not reject first);
    # the pair's min-p p lies between p_all and Bonferroni's 2 p_all
    p_edge, p_all = 0.4, 0.0085
    combined = nested_wald_min_p(p_edge, p_all, 2, 4, 30)
    assert p_all < combined < 2 * p_all
    got = adjusted([0.9, p_edge, p_all, 0.9, 0.9], combined)
    assert got[2] == pytest.approx(combined * 22 / 7) and got[2] < 0.05
    assert got[1] >= got[2] and got[1] > 0.05  # the edges are not a finding
    holm = adjusted_p_values(
        [
            Hypothesis(Finding("x", "b", f, nan, nan, nan, "", q, nan, "", ""), ("t", i))
            for i, (f, q) in enumerate(zip(families, [0.9, p_edge, p_all, 0.9, 0.9], strict=True))
        ],
        "fwer",
    )
    assert holm[2] > 0.05 and p_all > share / 2  # ADR 0076 missed it


def test_the_reported_pair_carries_its_combined_p(middle_slot_store: Path) -> None:
    report = build_report(middle_slot_store, n_resamples=20)
    council = report.position.council
    pair = [h for h in report_hypotheses(report) if h.finding.family == "council position"]
    edge, every_slot = pair
    assert every_slot.implies == edge.locator
    expected = nested_wald_min_p(
        council.test_p_value, council.all_slots_p_value, 2, 4, council.test_df[1] + 2
    )
    assert every_slot.combined_p == expected


@pytest.fixture(scope="module")
def middle_slot_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("middle") / "slot_c.jsonl"
    spec = CouncilSpec(n_members=5, slot_effects=[[0.0, 0.0, 1.5, 0.0, 0.0]] * 5)
    write_store(path, generate_sessions(spec, 30, seed=76))
    return path


def test_a_middle_slot_is_a_finding_through_the_all_slots_test(middle_slot_store: Path) -> None:
    report = build_report(middle_slot_store, n_resamples=20)
    assert report.position is not None
    council = report.position.council
    tests = [h for h in report.hypotheses if h.family == "council position"]
    assert [h.bias for h in tests][1] == ALL_SLOTS_BIAS and len(tests) == 2
    edge, every_slot = tests
    assert edge.p_value == council.test_p_value
    assert every_slot.p_value == council.all_slots_p_value
    # slot C raised 1.5 points moves each edge by only 0.375 against the others' mean
    assert every_slot.p_value < edge.p_value and every_slot.finding
    assert council.flagged and any(f.bias == ALL_SLOTS_BIAS for f in report.findings)


def test_three_slots_keep_one_council_hypothesis(tmp_path: Path) -> None:
    path = tmp_path / "three.jsonl"
    spec = CouncilSpec(n_members=3, missing_score_rate=0.05)
    write_store(path, generate_sessions(spec, 12, seed=3))
    report = build_report(path, n_resamples=20)
    assert report.position is not None
    assert math.isnan(report.position.council.all_slots_p_value)
    assert sum(h.family == "council position" for h in report.hypotheses) <= 1


@pytest.mark.parametrize("shared_order", [False, True])
def test_nine_members_integer_scores_and_missing_cells(tmp_path: Path, shared_order: bool) -> None:
    # 9 slots, 5% missing scores, integer 1-10 scores; a shared order goes to the
    # across-sessions fit, whose omnibus p is kept the same way
    path = tmp_path / "nine.jsonl"
    spec = CouncilSpec(n_members=9, missing_score_rate=0.05, shared_order=shared_order)
    write_store(path, generate_sessions(spec, 10, seed=9))
    report = build_report(path, n_resamples=20)
    assert report.position is not None
    council = report.position.council
    tests = [h for h in report.hypotheses if h.family == "council position"]
    assert len(tests) == 2 and 0.0 <= council.all_slots_p_value <= 1.0
    assert tests[1].p_value == council.all_slots_p_value
    assert all(t.p_adjusted >= t.p_value for t in tests)
    assert council.flagged == any(t.finding for t in tests)


def test_an_always_a_judge_is_found_and_the_council_test_stays_valid(tmp_path: Path) -> None:
    # rank-only, 5 members, one judge always ranks the answer at slot A first (a singular
    # slot covariance for that judge: its randomization test); the council keeps a Wald fit
    from generators.rank_council import RankCouncilSpec
    from generators.rank_council import generate_sessions as rank_sessions
    from generators.rank_council import write_store as write_rank_store

    path = tmp_path / "first.jsonl"
    spec = RankCouncilSpec(n_members=5, order="reviewer", judges=["first"] + ["honest"] * 4)
    write_rank_store(path, rank_sessions(spec, 30, seed=4))
    report = build_report(path, n_resamples=20)
    assert report.position is not None
    assert any(f.family == "position" and f.subject == "vendor/model-0" for f in report.findings)
    council = report.position.council
    if council.test_method == "randomization":
        assert math.isnan(council.all_slots_p_value)
    else:
        assert 0.0 <= council.all_slots_p_value <= 1.0
