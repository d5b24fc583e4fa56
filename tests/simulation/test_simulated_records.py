"""The simulated record generator: valid records, the council's design, known biases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import ConfigError
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import (
    load_simulated_profiles,
    main,
    simulate_record_columns,
    write_record_store,
)


def test_every_line_is_a_valid_review_record(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    members = load_simulated_profiles()
    written = write_record_store(path, members, 30, seed=1, missing_score_rate=0.1)
    lines = path.read_text().splitlines()
    assert written == len(lines) == 30 * 5 * 5
    records = [ReviewRecord.model_validate_json(line) for line in lines]
    assert any(record.score_value is None for record in records)
    assert all(record.score_value != 0 for record in records)
    assert all((record.rank is None) == (record.score_value is None) for record in records)
    assert {record.reviewer_id for record in records} == {name for name, _ in members}


def test_each_reviewer_sees_its_own_permutation_and_ranks_follow_scores() -> None:
    profiles = [SimulatedProfile(noise_sd=1.0) for _ in range(4)]
    columns = simulate_record_columns(profiles, 50, np.random.default_rng(0))
    for s in range(50):
        for r in range(4):
            mine = (columns.session_index == s) & (columns.reviewer_index == r)
            assert sorted(columns.position[mine]) == [0, 1, 2, 3]
            assert sorted(columns.rank[mine]) == [1, 2, 3, 4]
            order = np.argsort(columns.rank[mine])
            assert np.all(np.diff(columns.score[mine][order]) <= 0)
    assert columns.is_self_review.sum() == 50 * 4


def test_recused_reviewers_never_see_their_own_answer() -> None:
    profiles = [SimulatedProfile() for _ in range(5)]
    columns = simulate_record_columns(profiles, 20, np.random.default_rng(1), self_review=False)
    assert not columns.is_self_review.any()
    assert columns.n_candidates == 4
    assert len(columns) == 20 * 5 * 4
    assert set(columns.position.tolist()) == {0, 1, 2, 3}


def test_configured_biases_show_in_the_raw_scores() -> None:
    # 4000 sessions: leniency -2 shifts the mean by -2 (no clipping near a 6.5 mean with
    # noise 0.5), a +1 slot-A effect adds 1 at display slot 0 only.
    profiles = [
        SimulatedProfile(noise_sd=0.5, leniency=-2.0, quality_sd=0.5),
        SimulatedProfile(noise_sd=0.5, position_effects=(1.0,), quality_sd=0.5, score_decimals=2),
        SimulatedProfile(noise_sd=0.5, quality_sd=0.5, score_decimals=2),
    ]
    c = simulate_record_columns(profiles, 4000, np.random.default_rng(2))
    mean = {r: c.score[c.reviewer_index == r].mean() for r in range(3)}
    assert mean[0] - mean[2] == pytest.approx(-2.0, abs=0.1)
    slot_a = c.score[(c.reviewer_index == 1) & (c.position == 0)].mean()
    slot_other = c.score[(c.reviewer_index == 1) & (c.position > 0)].mean()
    assert slot_a - slot_other == pytest.approx(1.0, abs=0.1)


def test_command_line_writes_the_requested_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.jsonl"
    main(["--out", str(out), "--records", "1000", "--recuse", "--seed", "3"])
    lines = out.read_text().splitlines()
    assert len(lines) == (1000 // 20) * 20
    assert json.loads(lines[0])["n_candidates"] == 4
    assert "wrote 1000 records (50 sessions)" in capsys.readouterr().out


def test_unknown_profile_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown simulated member 'pirate'"):
        load_simulated_profiles(["balanced", "pirate"])
