"""The live judge's command-line options as one object (cli/calibrate_judging.py)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from llm_council.cli.calibrate_judging import JudgeCallOptions, parse_options
from llm_council.errors import ConfigError


def test_the_options_are_frozen_and_become_the_runners_settings(tmp_path: Path) -> None:
    call = JudgeCallOptions(
        model="simulated:primacy",
        option=("noise_sd=0.5", "name=plain text"),
        output=tmp_path / "report.json",
        repetitions=2,
        concurrency=3,
        seed=7,
        temperature=0.2,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.seed = 8  # type: ignore[misc]
    settings = call.live_settings(tmp_path / "pairs.jsonl")
    assert settings.spec == "simulated:primacy"
    assert dict(settings.options) == {"noise_sd": 0.5, "name": "plain text"}  # JSON, else text
    assert (settings.repetitions, settings.concurrency, settings.seed) == (2, 3, 7)
    assert settings.temperature == 0.2
    assert settings.cache_path == tmp_path / "report.json.calls.jsonl"  # beside the report


def test_the_cache_is_explicit_off_or_in_the_user_cache_for_a_streamed_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pairs = tmp_path / "pairs.jsonl"
    explicit = JudgeCallOptions(model="m:x", cache=tmp_path / "c.jsonl", output=Path("-"))
    assert explicit.live_settings(pairs).cache_path == tmp_path / "c.jsonl"
    assert JudgeCallOptions(model="m:x", no_cache=True).live_settings(pairs).cache_path is None
    streamed = JudgeCallOptions(model="m:x", output=Path("-")).live_settings(pairs)
    # sha256 of "<resolved pairs path>\0<spec>", first 16 hex digits (session.default_cache_path)
    digest = hashlib.sha256(f"{pairs.resolve()}\x00m:x".encode()).hexdigest()[:16]
    assert (
        streamed.cache_path == tmp_path / "cache" / "llm-council" / "calibrate" / f"{digest}.jsonl"
    )


@pytest.mark.parametrize(("repetitions", "concurrency"), [(0, 8), (1, 0), (-1, -1)])
def test_counts_below_one_are_refused_quoting_both(repetitions: int, concurrency: int) -> None:
    call = JudgeCallOptions(model="m:x", repetitions=repetitions, concurrency=concurrency)
    with pytest.raises(ConfigError) as refused:
        call.live_settings(Path("pairs.jsonl"))
    assert str(refused.value) == (
        f"--repetitions and --concurrency must be >= 1, got {repetitions} and {concurrency}"
    )


@pytest.mark.parametrize("item", ["novalue", "=1", " =x"])
def test_an_option_without_a_key_and_value_is_refused(item: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid --option '{item}': expected KEY=VALUE"):
        parse_options([item])
