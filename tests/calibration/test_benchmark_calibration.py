"""Speed of replay and of a live simulated run (``pytest -m benchmark tests/calibration``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.session import LiveSettings, replay_reports, run_live

from .conftest import simulated_pair_records

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


@pytest.mark.benchmark
def test_replay_throughput() -> None:
    # the fixture repeated 25 times under distinct ids: 4000 records, like the full PRD set
    base = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    lines = [json.dumps({**r, "id": f"{r['id']}-{k}"}) for k in range(25) for r in base]
    started = time.perf_counter()
    reports = replay_reports(parse_pairs_lines(lines, "bench"), path="bench")
    elapsed = time.perf_counter() - started
    print(f"replay of {len(lines)} records: {elapsed:.2f} s")
    assert sum(r["pairs_evaluated"] for r in reports) == 4000
    assert elapsed < 10.0


@pytest.mark.benchmark
def test_live_simulated_throughput(tmp_path: Path) -> None:
    pairs = parse_pairs_lines(
        [json.dumps(r) for r in simulated_pair_records(1000, seed=1)], "bench"
    )
    started = time.perf_counter()
    report = run_live(
        pairs, LiveSettings(spec="simulated:unbiased", cache_path=tmp_path / "c.jsonl")
    )
    elapsed = time.perf_counter() - started
    print(f"live simulated run, 2000 calls with fsync'd checkpoint: {elapsed:.2f} s")
    assert report["model_calls"] == 2000
    started = time.perf_counter()
    resumed = run_live(
        pairs, LiveSettings(spec="simulated:unbiased", cache_path=tmp_path / "c.jsonl")
    )
    print(f"same run from the checkpoint: {time.perf_counter() - started:.2f} s")
    assert resumed["model_calls"] == 0 and resumed["cached_calls"] == 2000


@pytest.mark.benchmark
def test_study_mode_throughput() -> None:
    # 4000 records (2 judges x 2000 pairs), split per model pair and compared across judges
    from llm_council.calibration.session import replay_study

    base = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    lines = [json.dumps({**r, "id": f"{r['id']}-{k}"}) for k in range(25) for r in base]
    started = time.perf_counter()
    reports, comparison = replay_study(
        parse_pairs_lines(lines, "bench"), path="bench", by=("judge", "model_pair")
    )
    elapsed = time.perf_counter() - started
    print(f"study mode (--by judge --by model_pair) on {len(lines)} records: {elapsed:.2f} s")
    assert comparison is not None and comparison["common_pairs"] == 2000
    assert all(len(r["subsets"]["model_pair"]) == 10 for r in reports)
    assert elapsed < 30.0
