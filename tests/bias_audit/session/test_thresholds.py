"""Threshold defaults come from the packaged TOML; env overrides are validated."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from llm_council.bias_audit.session.thresholds import load_thresholds
from llm_council.errors import ConfigError

REPO_CONFIG = Path(__file__).resolve().parents[3] / "config" / "thresholds.toml"


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


def _packaged_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> Path:
    """The packaged thresholds.toml replaced by ``text`` (a user editing the installed file)."""
    from llm_council.bias_audit.session import thresholds

    path = tmp_path / "thresholds.toml"
    path.write_text(text)
    monkeypatch.setattr(thresholds, "default_config_file", lambda name: path)
    thresholds._packaged_defaults.cache_clear()
    return path


@pytest.fixture(autouse=True)
def _fresh_packaged_defaults():  # type: ignore[no-untyped-def]
    from llm_council.bias_audit.session import thresholds

    thresholds._packaged_defaults.cache_clear()
    yield
    thresholds._packaged_defaults.cache_clear()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1e308", "out of range: must be in (0, 9)"),  # issue 37 A.9: overflowed the audit
        ("9.0", "out of range: must be in (0, 9)"),
        ("0", "out of range: must be in (0, 9)"),
        ("inf", "out of range: must be in (0, 9)"),
        ("nan", "out of range: must be in (0, 9)"),
        ('"loud"', "is not a number"),
        ("true", "is not a number"),
        ("[1.5]", "is not a number"),
    ],
)
def test_the_file_and_the_environment_share_one_range_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, reason: str
) -> None:
    path = _packaged_file(
        monkeypatch, tmp_path, f"significance_level = 0.05\n# a comment\nprior_noise_sd = {value}\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_thresholds({})
    message = str(raised.value)
    # one line naming the file, the line and the field, quoting the value
    assert "\n" not in message
    assert message.startswith(f"{path}, line 3: prior_noise_sd = ")
    assert reason in message
    # the environment refuses the same values with the same bounds
    if reason.startswith("out of range"):
        with pytest.raises(ConfigError, match=r"out of range: must be in \(0, 9\)"):
            load_thresholds({"LLM_COUNCIL_PRIOR_NOISE_SD": value})


def test_a_good_file_value_is_read_and_an_environment_value_still_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _packaged_file(monkeypatch, tmp_path, "prior_noise_sd = 1.2\nsignificance_level = 0.01\n")
    assert load_thresholds({}).prior_noise_sd == 1.2
    assert load_thresholds({}).significance_level == 0.01
    assert load_thresholds({"LLM_COUNCIL_PRIOR_NOISE_SD": "0.8"}).prior_noise_sd == 0.8


def test_a_bad_file_stops_the_middleware_before_the_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from llm_council.bias_audit.middleware import BiasAuditMiddleware

    _packaged_file(monkeypatch, tmp_path, "prior_noise_sd = 1e308\n")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "records.jsonl"))
    with pytest.raises(ConfigError, match="prior_noise_sd = 1e\\+308 is out of range"):
        BiasAuditMiddleware().check_config()


def test_thresholds_built_directly_keep_the_same_bound() -> None:
    from pydantic import ValidationError

    from llm_council.bias_audit.session.thresholds import AuditThresholds

    with pytest.raises(ValidationError):
        AuditThresholds(prior_noise_sd=1e308)
