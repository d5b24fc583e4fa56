"""calibrate --canary: a frozen canary set re-scored, compared with earlier runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from llm_council.calibration.canary import (
    CanaryItem,
    canary_drift,
    judge_fingerprint,
    parse_score,
    read_canary,
    read_canary_run,
    score_canary,
)
from llm_council.cli.app import _run, app
from llm_council.errors import InputError
from llm_council.providers.simulated import SimulatedProvider


def canary_items(n: int = 40) -> list[CanaryItem]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [
        CanaryItem(
            f"c{i}", f"Question {i}?", " ".join(words[(i * 7 + k) % 8] for k in range(20 + i))
        )
        for i in range(n)
    ]


def write_canary(path: Path, items: list[CanaryItem]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": i.item_id, "question": i.question, "response": i.response}) + "\n"
            for i in items
        )
    )
    return path


def simulated_scores(seed: int, leniency: float = 0.0, noise_sd: float = 0.7):
    provider = SimulatedProvider("balanced", noise_sd=noise_sd, leniency=leniency)
    scores, failed = asyncio.run(score_canary(provider, canary_items(), seed=seed))
    assert not failed
    return scores


def run_document(scores, **fingerprint_changes):
    fingerprint = {**judge_fingerprint("simulated:balanced", {}, None), **fingerprint_changes}
    return {"format": "llm-council-canary/1", "fingerprint": fingerprint, "scores": scores}


def test_parse_score_reads_the_last_line_on_the_scale():
    assert parse_score("ok\nSCORE: 7") == 7.0
    assert parse_score("SCORE: 3\nthen\nSCORE: 8.5") == 8.5
    assert parse_score("SCORE: 11") is None
    assert parse_score("no score") is None


def test_fingerprint_names_the_set_up_without_secrets():
    fingerprint = judge_fingerprint("openai:gpt-4o", {"api_key": "sk-secret"}, 0.0)
    assert fingerprint["provider"] == "openai" and fingerprint["model"] == "gpt-4o"
    assert "sk-secret" not in json.dumps(fingerprint)
    assert len(fingerprint["prompt_sha256"]) == 64 and fingerprint["scale"] == [1, 10]


def test_unchanged_and_shifted_judges():
    baseline = run_document(simulated_scores(seed=1))
    same = canary_drift(run_document(simulated_scores(seed=2)), [baseline])
    assert same["items_compared"] == 40 and same["fingerprint_changes"] == []
    shifted = canary_drift(run_document(simulated_scores(seed=3, leniency=-1.0)), [baseline])
    assert shifted["drifted"] and shifted["shift"] < -0.5


def test_only_runs_of_one_fingerprint_are_pooled():
    first = run_document({"a": 5.0, "b": 6.0, "c": 7.0})
    second = run_document({"a": 7.0, "b": 8.0, "c": 9.0})
    other = run_document({"a": 1.0, "b": 1.0, "c": 1.0}, model="gpt-4o-2024-05")
    current = run_document({"a": 6.5, "b": 7.0, "c": 8.5}, model="gpt-4o-2024-11")
    # pooled baseline per item: (5+7)/2, (6+8)/2, (7+9)/2 = 6, 7, 8; differences .5, 0, .5
    drift = canary_drift(current, [other, first, second])
    assert drift["baselines_pooled"] == 2 and drift["baselines_not_pooled"] == 1
    assert drift["shift"] == pytest.approx(1 / 3)
    assert drift["fingerprint_changes"] == ["model"]


def test_cli_exit_6_on_drift_and_0_without(tmp_path, capsys):
    canary = write_canary(tmp_path / "canary.jsonl", canary_items())
    base = tmp_path / "base.json"
    assert _run(["calibrate", "--canary", str(canary), "--model", "simulated:balanced",
                 "-o", "noise_sd=0.7", "--output", str(base)], "llm-council", app) == 0  # fmt: skip
    assert read_canary_run(base)["fingerprint"]["model"] == "balanced"
    code = _run(["calibrate", "--canary", str(canary), "--model", "simulated:balanced",
                 "-o", "noise_sd=0.7", "-o", "leniency=-2", "--baseline", str(base)],
                "llm-council", app)  # fmt: skip
    assert code == 6
    assert "the judge changed since the baseline" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "question": "q"}', "'response' must be a non-empty string"),
        ('{"id": "a", "question": "q", "response": "r"}\n{"id": "a", "question": "q", "response": "r"}',
         "appears twice"),
        ('{"id": "a", "question": "q", "response": "r"}', "at least 2 items"),
        ("[" * 100000, "not a JSON object"),
    ],
)  # fmt: skip
def test_bad_canary_files(tmp_path, content, message):
    path = tmp_path / "c.jsonl"
    path.write_text(content + "\n")
    with pytest.raises(InputError, match=message):
        read_canary(path)


def test_bad_baseline_files(tmp_path):
    path = tmp_path / "b.json"
    path.write_text('{"format": "llm-council-canary/1", "fingerprint": {}, "scores": {"a": NaN}}')
    with pytest.raises(InputError, match="not a finite number"):
        read_canary_run(path)
    path.write_text("{}")
    with pytest.raises(InputError, match="not a canary run"):
        read_canary_run(path)
