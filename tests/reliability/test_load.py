"""Many councils at once in one process: no errors, no cross-talk between sessions.

The full-size run (200 councils, peak RSS) is ``benchmarks/load_councils.py``; this is
the small default-run version.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import store_path

CONCURRENT = 20


def _signature(result: Any) -> tuple[Any, ...]:
    metadata = result.metadata
    return (
        [a.text for a in result.stage1],
        metadata["label_to_model"],
        metadata["aggregate_rankings"],
        result.stage3.text,
    )


def test_concurrent_councils_complete_and_match_their_solo_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")

    async def scenario() -> tuple[Any, list[Any]]:
        solo = await run_full_council("q?", seed=3)
        together = await asyncio.gather(
            *(run_full_council("q?", seed=seed) for seed in range(CONCURRENT))
        )
        return solo, together

    solo, results = asyncio.run(scenario())
    assert all(
        r.metadata["degraded"] == [] and r.metadata["middleware_errors"] == [] for r in results
    )
    assert _signature(results[3]) == _signature(solo)  # concurrency changes nothing in a session
    assert len({r.metadata["session_id"] for r in results}) == CONCURRENT
    records = [json.loads(line) for line in store_path().read_text().splitlines()]
    per_session = Counter(record["session_id"] for record in records)
    assert len(per_session) == CONCURRENT + 1 and set(per_session.values()) == {
        25
    }  # 5 reviewers x 5
