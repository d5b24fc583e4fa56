"""Attribution a user can act on (issue 9 section 2): the report names the right judges."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.analyses.position import position_bias
from llm_council.bias_audit.report.analyses.reviewers import reviewer_profiles
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables

ONE_HARSH = CouncilSpec(n_members=5, leniency=[-1.5, 0.0, 0.0, 0.0, 0.0])


def profiles_of(path: Path):  # type: ignore[no-untyped-def]
    store = load_store(path, threads=1)
    try:
        create_analysis_tables(store.connection)
        return {profile.reviewer: profile for profile in reviewer_profiles(store.connection)}
    finally:
        store.connection.close()


@pytest.mark.parametrize("seed", [11, 12])
def test_one_harsh_judge_is_the_only_one_labelled(tmp_path: Path, seed: int) -> None:
    """The issue's scenario: 5 reviewers, judge-0 at -1.5 points, 150 sessions."""
    path = tmp_path / "one-harsh.jsonl"
    write_store(path, generate_sessions(ONE_HARSH, 150, seed=seed))
    profiles = profiles_of(path)
    harsh = profiles["judge-0"]
    assert harsh.leniency_label == "harsh"
    assert not harsh.in_leniency_reference
    # integer rounding and the clip at 1/10 shrink the offset a little
    assert -1.6 < harsh.leniency.estimate < -1.2
    for name in ("judge-1", "judge-2", "judge-3", "judge-4"):
        neutral = profiles[name]
        assert neutral.leniency_label == "neutral", name
        assert neutral.in_leniency_reference
        # against all the others it would be +1.5/4 = +0.375
        assert abs(neutral.leniency.estimate) < 0.15, name


def _position_of(path: Path):  # type: ignore[no-untyped-def]
    store = load_store(path, threads=1)
    try:
        create_analysis_tables(store.connection)
        position = position_bias(store.connection)
        assert position is not None
        return position
    finally:
        store.connection.close()


def test_one_primacy_judge_is_the_only_one_flagged(tmp_path: Path) -> None:
    """judge-0 gives +1 at slot A (5 members, own shuffles): its slot A is +1 - 1/5."""
    spec = CouncilSpec(n_members=5, slot_effects=[[1.0, 0, 0, 0, 0]] + [[0.0] * 5] * 4)
    path = tmp_path / "primacy.jsonl"
    write_store(path, generate_sessions(spec, 150, seed=21))
    by_reviewer = {p.subject: p for p in _position_of(path).per_reviewer}
    primacy = by_reviewer["judge-0"]
    assert primacy.flagged and primacy.direction == "primacy"
    assert primacy.slot_effect[0].estimate == pytest.approx(0.8, abs=0.25)
    assert [name for name, p in by_reviewer.items() if p.flagged] == ["judge-0"]


@pytest.mark.slow
def test_attribution_rates(tmp_path: Path) -> None:
    """How often the report names the right judges (printed; the table in docs/bias-report.md).

    Run: ``ATTRIBUTION_RUNS=200 .venv/bin/pytest tests/bias_audit/report/analyses/test_attribution.py
    -m slow -s``. Targets (issue 9): with one judge at -1.5 among five, 150 sessions, the
    neutral judges are labelled in <= 5% of stores.
    """
    n_runs = int(os.environ.get("ATTRIBUTION_RUNS", "200"))
    neutral_stores = harsh_found = 0
    for run in range(n_runs):
        path = tmp_path / f"harsh-{run}.jsonl"
        write_store(path, generate_sessions(ONE_HARSH, 150, seed=10_000 + run))
        profiles = profiles_of(path)
        harsh_found += profiles["judge-0"].leniency_label == "harsh"
        neutral_stores += any(
            profiles[f"judge-{i}"].leniency_label != "neutral" for i in range(1, 5)
        )
        path.unlink()
    primacy_spec = CouncilSpec(n_members=5, slot_effects=[[1.0, 0, 0, 0, 0]] + [[0.0] * 5] * 4)
    primacy_found = {10: 0, 50: 0}
    others_flagged = {10: 0, 50: 0}
    for n_sessions in primacy_found:
        for run in range(n_runs):
            path = tmp_path / f"primacy-{run}.jsonl"
            write_store(path, generate_sessions(primacy_spec, n_sessions, seed=20_000 + run))
            by_reviewer = {p.subject: p for p in _position_of(path).per_reviewer}
            primacy_found[n_sessions] += by_reviewer["judge-0"].direction == "primacy"
            others_flagged[n_sessions] += any(
                by_reviewer[f"judge-{i}"].flagged for i in range(1, 5)
            )
            path.unlink()
    print(f"\n{n_runs} stores each (independent generator, 5 members, own shuffles)")
    print(
        f"  one judge at -1.5, 150 sessions: harsh judge labelled harsh  {harsh_found / n_runs:6.1%}"
    )
    print(
        f"  one judge at -1.5, 150 sessions: any neutral judge labelled  {neutral_stores / n_runs:6.1%}"
    )
    for n_sessions in primacy_found:
        print(
            f"  one judge +1 at slot A, {n_sessions} sessions: flagged as primacy "
            f"{primacy_found[n_sessions] / n_runs:6.1%}, any other judge flagged "
            f"{others_flagged[n_sessions] / n_runs:6.1%}"
        )
    bound = 0.05 + 3 * (0.05 * 0.95 / n_runs) ** 0.5
    assert neutral_stores / n_runs <= bound
    assert harsh_found / n_runs >= 0.95
    assert others_flagged[50] / n_runs <= bound
