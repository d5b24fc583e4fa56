"""Stores for the report's tests: simulated councils with known biases, and hand-made lines."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store


def record_line(**fields: Any) -> str:
    """One valid record as the bias-audit store writes it (through the real schema)."""
    defaults: dict[str, Any] = {
        "session_id": "s1",
        "timestamp": "2026-01-10T12:00:00Z",
        "reviewer_id": "r1",
        "model_id": "m1",
        "position": 0,
        "n_candidates": 2,
        "response_length_chars": 600,
        "response_length_words": 100,
        "score_value": 7.0,
        "rank": 1,
        "is_self_review": False,
        "council_config_hash": "sha256:test",
    }
    defaults.update(fields)
    return ReviewRecord(**defaults).model_dump_json() + "\n"


@pytest.fixture(scope="session")
def biased_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 sessions of the default council: harsh, verbose, primacy, narcissist, balanced."""
    path = tmp_path_factory.mktemp("stores") / "biased.jsonl"
    write_record_store(path, load_simulated_profiles(), 400, seed=20260101)
    return path


@pytest.fixture(scope="session")
def null_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 sessions of five unbiased judges (noise only)."""
    path = tmp_path_factory.mktemp("stores") / "null.jsonl"
    members = [(f"judge{i}", SimulatedProfile(noise_sd=1.0)) for i in range(5)]
    write_record_store(path, members, 400, seed=7)
    return path


@pytest.fixture
def write_lines(tmp_path: Path) -> Callable[[Sequence[str]], Path]:
    def write(lines: Sequence[str]) -> Path:
        path = tmp_path / "store.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
        return path

    return write


def scores_to_lines(table: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """``{session: {model: {reviewer: score}}}`` to record lines (display order = sorted)."""
    lines = []
    for session, by_model in table.items():
        models = sorted(by_model)
        for position, model in enumerate(models):
            for reviewer, score in by_model[model].items():
                ranking = sorted(models, key=lambda m: -by_model[m][reviewer])
                lines.append(
                    record_line(
                        session_id=session,
                        reviewer_id=reviewer,
                        model_id=model,
                        position=position,
                        n_candidates=len(models),
                        score_value=score,
                        rank=ranking.index(model) + 1,
                        response_length_words=100 + 50 * position,
                    )
                )
    return lines


def loads(text: str) -> Any:
    return json.loads(text)
