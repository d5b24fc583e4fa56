from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.config import load_council_config
from llm_council.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "council.toml"
    path.write_text(text)
    return path


def test_embedded_default_is_the_simulated_council() -> None:
    config = load_council_config(environ={})
    assert [m.spec for m in config.members][:2] == ["simulated:balanced", "simulated:harsh"]
    assert config.config_hash().startswith("sha256:")


def test_real_council_when_a_key_is_set() -> None:
    config = load_council_config(environ={"ANTHROPIC_API_KEY": "sk-ant-test"})
    assert {m.spec for m in config.members} == {
        "anthropic:claude-sonnet-4-6",
        "anthropic:claude-haiku-4-5",
    }
    config = load_council_config(environ={"OPENAI_API_KEY": "k", "GEMINI_API_KEY": "g"})
    assert {m.spec.split(":")[0] for m in config.members} == {"openai", "google"}


def test_explicit_file_and_env_var(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[council]\nmembers=[{name="a", spec="simulated:harsh"}, {name="b", spec="openai:gpt-4o"}]\n'
        'chairman={name="c", spec="simulated:balanced"}\nself_review="recuse"\n[retry]\nmax_attempts=2\n',
    )
    config = load_council_config(path)
    assert config.self_review == "recuse" and config.retry.max_attempts == 2
    assert load_council_config(environ={"LLM_COUNCIL_CONFIG": str(path)}) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[council\n", "invalid TOML"),
        ("[other]\n", "missing [council] table"),
        (
            '[council]\nmembers=[{name="a", spec="simulated:x"}]\nchairman={name="c", spec="simulated:x"}\n',
            "at least 2 members",
        ),
        (
            '[council]\nmembers=[{name="a", spec="simulated:x"}, {name="a", spec="simulated:y"}]\nchairman={name="c", spec="simulated:x"}\n',
            "repeated: a",
        ),
        (
            '[council]\nmembers=[{name="a", spec="gpt4"}, {name="b", spec="simulated:y"}]\nchairman={name="c", spec="simulated:x"}\n',
            "invalid model spec 'gpt4'",
        ),
        (
            '[council]\nmembers=[{name="a", spec="simulated:x"}, {name="b", spec="simulated:y"}]\nchairman={name="c", spec="simulated:x"}\nself_review="sometimes"\n',
            "field 'self_review'",
        ),
        (
            '[council]\nmembers=[{name="a", spec="simulated:x"}, {name="b", spec="simulated:y"}]\nchairman={name="c", spec="simulated:x"}\n[retry]\ntries=3\n',
            "[retry]",
        ),
    ],
)
def test_bad_config_is_one_clear_line_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_council_config(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="config file not found: /no/such.toml"):
        load_council_config("/no/such.toml")


TWO_MEMBERS = (
    '[council]\nmembers=[{name="a", spec="simulated:x"}, {name="b", spec="simulated:y"}]\n'
    'chairman={name="c", spec="simulated:x"}\n'
)


def test_session_limits_from_the_file_and_the_environment_overrides_them(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_MEMBERS + "session_deadline_s = 90\nmax_answer_chars = 5000\n")
    config = load_council_config(path, environ={})
    assert config.session_deadline_s == 90.0 and config.max_answer_chars == 5000
    overridden = load_council_config(path, environ={"LLM_COUNCIL_SESSION_DEADLINE_S": "12.5"})
    assert overridden.session_deadline_s == 12.5 and overridden.max_answer_chars == 5000
    # limits do not change which sessions are comparable
    assert overridden.config_hash() == config.config_hash()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("session_deadline_s = 0", "field 'session_deadline_s': Input should be greater than 0"),
        ("session_deadline_s = nan", "field 'session_deadline_s': Input should be a finite"),
        ("max_answer_chars = 0", "field 'max_answer_chars'"),
    ],
)
def test_bad_session_limits_in_the_file(tmp_path: Path, line: str, message: str) -> None:
    path = _write(tmp_path, TWO_MEMBERS + line + "\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_council_config(path, environ={})
    assert str(path) in str(caught.value)
