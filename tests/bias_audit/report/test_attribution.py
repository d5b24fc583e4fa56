"""Attribution a user can act on (issue 9 section 2): the report names the right judges."""

from __future__ import annotations

from pathlib import Path

import pytest
from generators.independent_council import CouncilSpec, generate_sessions, write_store

from llm_council.bias_audit.report.loading import load_store
from llm_council.bias_audit.report.reviewers import reviewer_profiles
from llm_council.bias_audit.report.tables import create_analysis_tables

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
