"""False-flag rate and power of the report's per-reviewer position test on rank points.

The fix of issue 23 (a randomization test where the Wald covariance is singular, see
:mod:`llm_council.stats.slots.slot_randomization`) must flag deterministic judges and must not
raise false flags. Stores come from ``tests/generators/rank_council.py`` (karpathy-shaped
rankings, independent of ``llm_council.simulation``), 30 sessions each, display orders
shuffled per session (one order shared by the session's reviewers: the across-sessions
estimator) or per reviewer (within answers).

- false flags: every member honest; the rate of honest reviewers flagged (Holm over
  reviewers, per reviewer) and of stores with any flag, at 3, 4 and 5 members;
- power: member 0 always ranks Response A first (``first``), always last (``last``) or
  first 90% of the time (``mostly_first``), the others honest; the rate of stores where
  it is flagged, at 2, 3, 4 and 5 members.

Slow (minutes); run with
``RANK_CALIBRATION_RUNS=100 .venv/bin/pytest tests/bias_audit/report/analyses/test_rank_position_calibration.py -m slow -s``;
the printed table is the one in docs/bias-report.md. The default suite keeps a quick
check at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generators.rank_council import RankCouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.analyses.position import position_bias
from llm_council.bias_audit.report.estimates import PositionBias
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables

N_RUNS = int(os.environ.get("RANK_CALIBRATION_RUNS", "100"))
N_SESSIONS = 30
ORDERS = ("session", "reviewer")


def _position(tmp_path: Path, spec: RankCouncilSpec, seed: int) -> PositionBias:
    path = tmp_path / f"rank-{seed}.jsonl"
    write_store(path, generate_sessions(spec, N_SESSIONS, seed=seed))
    store = load_store(path, threads=1)
    try:
        create_analysis_tables(store.connection)
        position = position_bias(store.connection)
    finally:
        store.connection.close()
        path.unlink()
    assert position is not None
    return position


def null_rates(tmp_path: Path, n_members: int, order: str, n_runs: int) -> dict[str, float]:
    """Honest councils: flagged reviewers / reviewers, stores with a flag / stores, and
    the share of reviewer tests that were randomization tests."""
    spec = RankCouncilSpec(n_members=n_members, order=order)
    flagged = any_flag = randomized = tests = 0
    for run in range(n_runs):
        position = _position(tmp_path, spec, 1000 * n_members + run)
        profiles = [p for p in position.per_reviewer if p.identified]
        flagged += sum(p.flagged for p in profiles)
        any_flag += any(p.flagged for p in profiles)
        randomized += sum(p.test_method == "randomization" for p in profiles)
        tests += len(profiles)
    return {
        "per_reviewer": flagged / max(tests, 1),
        "per_store": any_flag / n_runs,
        "randomized": randomized / max(tests, 1),
    }


def power(tmp_path: Path, n_members: int, order: str, judge: str, n_runs: int) -> float:
    """The share of stores where member 0 (the biased judge) is flagged."""
    judges = [judge] + ["honest"] * (n_members - 1)
    spec = RankCouncilSpec(n_members=n_members, order=order, judges=judges)
    hits = 0
    for run in range(n_runs):
        position = _position(tmp_path, spec, 5000 * n_members + run)
        judge_profile = next(p for p in position.per_reviewer if p.subject.endswith("-0"))
        hits += judge_profile.flagged
    return hits / n_runs


@pytest.mark.slow
def test_print_the_rank_position_table(tmp_path: Path) -> None:
    """The docs table: false-flag rate (honest councils) beside power (biased judge)."""
    print(f"\n{N_RUNS} stores of {N_SESSIONS} sessions per cell")
    print(
        "| members | orders | honest flagged (per reviewer) | any flag (per store) |"
        " honest tests by randomization | always A first | always A last | A first 90% |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for order in ORDERS:
        for n_members in (2, 3, 4, 5):
            null = null_rates(tmp_path, n_members, order, N_RUNS) if n_members >= 3 else None
            powers = [
                power(tmp_path, n_members, order, judge, N_RUNS)
                for judge in ("first", "last", "mostly_first")
            ]
            null_cells = (
                f"{null['per_reviewer']:.3f} | {null['per_store']:.3f} | {null['randomized']:.3f}"
                if null is not None
                else "- | - | -"
            )
            print(
                f"| {n_members} | {order} | {null_cells} | "
                + " | ".join(f"{value:.2f}" for value in powers)
                + " |"
            )
            if null is not None:
                # Holm at 5% family-wise: per store at most 5% + 3 Monte Carlo SEs
                assert null["per_store"] <= 0.05 + 3 * (0.05 * 0.95 / N_RUNS) ** 0.5
            assert min(powers[:2]) >= 0.9


@pytest.mark.parametrize("order", ORDERS)
def test_deterministic_judges_are_flagged_and_honest_ones_mostly_not(
    tmp_path: Path, order: str
) -> None:
    """Quick version for the default suite: 4 members, a few stores."""
    assert power(tmp_path, 4, order, "first", 3) == 1.0
    assert power(tmp_path, 4, order, "last", 3) == 1.0
    rates = null_rates(tmp_path, 4, order, 5)
    assert rates["per_store"] <= 0.4  # 5 stores: at most 2 false flags by chance (p<0.03)
