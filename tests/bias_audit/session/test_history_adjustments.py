"""The audit's reviewer_adjustments and the council's debiased aggregate (ADR 0046)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from conftest import simulated_config
from llm_council.bias_audit.session.history_adjustments import reviewer_adjustments
from llm_council.council import run_full_council
from llm_council.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions, write_store  # noqa: E402


def test_a_harsh_judge_is_found_in_the_independent_generators_history(tmp_path: Path) -> None:
    spec = CouncilSpec(n_members=4, leniency=[-2.0, 0.0, 0.0, 0.0])
    store = tmp_path / "records.jsonl"
    write_store(store, generate_sessions(spec, 40, seed=5))
    found = reviewer_adjustments(store, ["judge-0", "judge-1", "nobody"])
    assert set(found) == {"judge-0", "judge-1"}
    # centred over 4 reviewers: -2 + 0.5 = -1.5 (integer, clipped scores: within 0.3)
    assert found["judge-0"].leniency == pytest.approx(-1.5, abs=0.3)
    assert abs(found["judge-1"].leniency) < 0.5
    assert found["judge-0"].n_scores == 40 * 3
    assert reviewer_adjustments(store, ["judge-0"], council_config_hash="other") == {}
    assert reviewer_adjustments(tmp_path / "missing.jsonl", ["judge-0"]) == {}


def test_debiased_without_a_supplier_stops_before_any_call() -> None:
    config = simulated_config(
        *[(n, "balanced", {}) for n in ("a", "b", "c")], aggregation="debiased"
    )
    with pytest.raises(ConfigError, match="needs a middleware that supplies"):
        asyncio.run(run_full_council("q", config=config, seed=1))


def test_the_chairman_sees_the_debiased_ranking_with_history(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "records.jsonl"))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    members = [
        ("a", "balanced", {}),
        ("b", "harsh", {}),
        ("c", "balanced", {}),
        ("d", "balanced", {}),
    ]
    raw = simulated_config(*members)
    for seed in range(12):
        result = asyncio.run(run_full_council("q", config=raw, seed=seed))
        assert "debiased_rankings" not in result.metadata  # raw: nothing new, no store read
    monkeypatch.setenv("LLM_COUNCIL_AGGREGATION", "debiased")
    import os

    from llm_council.config import with_limit_overrides

    debiased = with_limit_overrides(raw, os.environ)
    result = asyncio.run(run_full_council("q", config=debiased, seed=99))
    metadata = result.metadata
    assert metadata["aggregation_used"] == "debiased"
    assert metadata["middleware_errors"] == []
    adjustments = metadata["reviewer_adjustments"]
    # the harsh member (-1.5) against three balanced ones: centred -1.125
    assert adjustments["b"]["leniency"] < -0.6
    rows = metadata["debiased_rankings"]
    assert sorted(r["model"] for r in rows) == ["a", "b", "c", "d"]
    for row in rows:
        parts = row["leniency_adjustment"] + row["slot_adjustment"] + row["length_adjustment"]
        assert row["mean_score"] - row["debiased_mean_score"] == pytest.approx(parts)
    # b's answer was never scored by b, so it loses nothing to b's harshness; the others do
    by_model = {r["model"]: r for r in rows}
    assert by_model["b"]["leniency_adjustment"] > by_model["a"]["leniency_adjustment"]
    assert [r["place"] for r in rows] == [1, 2, 3, 4]
    # the raw aggregate is still there, unchanged in form
    assert len(metadata["aggregate_rankings"]) == 4


def test_a_hostile_position_neither_allocates_nor_breaks_the_fit(tmp_path: Path) -> None:
    spec = CouncilSpec(n_members=4, leniency=[-2.0, 0.0, 0.0, 0.0])
    store = tmp_path / "records.jsonl"
    write_store(store, generate_sessions(spec, 30, seed=6))
    hostile = {
        "schema_version": 2,
        "session_id": "hostile",
        "timestamp": "2026-01-05T00:00:00Z",
        "reviewer_id": "judge-0",
        "model_id": "judge-1",
        "position": 10**9,
        "n_candidates": 2,
        "response_length_chars": 10,
        "response_length_words": 2,
        "score_value": 1.0,
        "is_self_review": False,
        "council_config_hash": "independent-generator",
        "session_n_records": 2,
    }
    other = {**hostile, "reviewer_id": "judge-2", "position": 0, "score_value": 9.0}
    with store.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(hostile) + "\n" + json.dumps(other) + "\n")
    found = reviewer_adjustments(store, ["judge-0"])
    assert len(found["judge-0"].slot_effects) == 4
    assert found["judge-0"].leniency == pytest.approx(-1.5, abs=0.35)
