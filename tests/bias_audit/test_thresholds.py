"""Threshold defaults come from the packaged TOML; env overrides are validated."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from llm_council.bias_audit.session.thresholds import load_thresholds
from llm_council.errors import ConfigError

REPO_CONFIG = Path(__file__).resolve().parents[2] / "config" / "thresholds.toml"


def test_defaults_are_the_packaged_toml() -> None:
    expected = tomllib.loads(REPO_CONFIG.read_text())
    thresholds = load_thresholds({})
    assert thresholds.length_correlation_threshold == expected["length_correlation_threshold"]
    assert thresholds.position_variance_threshold == expected["position_variance_threshold"]
    assert thresholds.significance_level == expected["significance_level"]
    assert (
        thresholds.length_correlation_threshold,
        thresholds.position_variance_threshold,
        thresholds.significance_level,
    ) == (0.3, 0.5, 0.05)


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD", "0.45")
    monkeypatch.setenv("LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD", " 0.2 ")
    monkeypatch.setenv("LLM_COUNCIL_SIGNIFICANCE_LEVEL", "0.01")
    thresholds = load_thresholds()
    assert thresholds.length_correlation_threshold == 0.45
    assert thresholds.position_variance_threshold == 0.2
    assert thresholds.significance_level == 0.01


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD", "high", "is not a number"),
        ("LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD", "1.5", "out of range"),
        ("LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD", "-0.1", "out of range"),
        ("LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD", "nan", "out of range"),
        ("LLM_COUNCIL_SIGNIFICANCE_LEVEL", "0", "out of range"),
        ("LLM_COUNCIL_SIGNIFICANCE_LEVEL", "5%", "is not a number"),
    ],
)
def test_bad_environment_value_names_variable_and_quotes_value(
    variable: str, value: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_thresholds({variable: value})
    message = str(raised.value)
    assert message.startswith(f"{variable}={value!r}")
    assert reason in message
