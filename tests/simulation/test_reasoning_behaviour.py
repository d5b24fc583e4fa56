"""The live simulated reviewer's reasoning and parse behaviour (ADR 0027), end to end:
rationale lengths reach the records, refusals are refused reviews with null records, and a
slipped ranking contradicts its scores by exactly one adjacent pair."""

from __future__ import annotations

import asyncio

import pytest

from conftest import simulated_config
from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.stats.ranking.rank_consistency import score_rank_discordance


def test_simulated_reviewer_refuses_writes_long_rationales_and_slips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    config = simulated_config(
        ("refuser", "balanced", {"abstention_probability": 1.0}),
        ("writer", "balanced", {"rationale_mean_chars": 1500.0, "reasoning_bias": -0.5}),
        ("slipper", "balanced", {"rank_mismatch_probability": 1.0, "score_decimals": 2}),
        ("plain", "balanced", {}),
    )
    slips = 0
    for seed in range(6):
        result = asyncio.run(run_full_council("Why?", config=config, seed=seed))
        reviews = {review.reviewer: review for review in result.stage2}
        assert reviews["refuser"].parse_status == "refused"
        assert reviews["plain"].parse_status == "json"
        slipper = reviews["slipper"]
        ranks = [entry.rank for entry in slipper.candidates]
        scores = [entry.score for entry in slipper.candidates]
        slips += score_rank_discordance(scores, ranks).discordant
        assert score_rank_discordance(scores, ranks).discordant <= 1
        plain = reviews["plain"].candidates
        assert (
            score_rank_discordance([c.score for c in plain], [c.rank for c in plain]).discordant
            == 0
        )
    assert slips >= 4  # a swap of two scores 2 decimals apart almost never ties
    records = list(read_records(store_path()))
    refuser = [r for r in records if r.reviewer_id == "refuser"]
    assert refuser and all(
        r.score_value is None and r.rank is None and r.review_status == "refused" for r in refuser
    )
    lengths = {r.rationale_chars for r in records if r.reviewer_id == "writer"}
    assert len(lengths) >= 4 and min(lengths) > 100  # type: ignore[type-var]
    plain_lengths = {r.rationale_chars for r in records if r.reviewer_id == "plain"}
    assert all(length is not None and length < 100 for length in plain_lengths)
