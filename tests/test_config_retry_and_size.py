"""Issue 26 items 4-5: the ``[retry]`` table and the council size are checked at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.config import (
    MAX_COUNCIL_MEMBERS,
    CouncilConfig,
    CouncilMember,
    load_council_config,
)
from llm_council.errors import ConfigError

TWO_MEMBERS = (
    '[council]\nmembers=[{name="a", spec="simulated:x"}, {name="b", spec="simulated:y"}]\n'
    'chairman={name="c", spec="simulated:x"}\n'
)


def _load(tmp_path: Path, text: str) -> str:
    path = tmp_path / "council.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_council_config(path, environ={})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: [retry] ")
    return message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("timeout_s = -1", "timeout_s: must be a finite number > 0 (got -1)"),
        ("timeout_s = 0", "timeout_s: must be a finite number > 0 (got 0)"),
        ("timeout_s = nan", "timeout_s: must be a finite number > 0 (got nan)"),
        ("timeout_s = inf", "timeout_s: must be a finite number > 0 (got inf)"),
        ("timeout_s = '5'", "timeout_s: must be a finite number > 0 (got '5')"),
        ("timeout_s = true", "timeout_s: must be a finite number > 0 (got True)"),
        ("max_attempts = 0", "max_attempts: must be an integer >= 1 (got 0)"),
        ("max_attempts = -3", "max_attempts: must be an integer >= 1 (got -3)"),
        ("max_attempts = 2.5", "max_attempts: must be an integer >= 1 (got 2.5)"),
        ("max_attempts = true", "max_attempts: must be an integer >= 1 (got True)"),
        ("initial_backoff_s = -1", "initial_backoff_s: must be a finite number >= 0 (got -1)"),
        ("initial_backoff_s = nan", "initial_backoff_s: must be a finite number >= 0 (got nan)"),
        ("max_backoff_s = -0.5", "max_backoff_s: must be a finite number >= 0 (got -0.5)"),
        ("max_backoff_s = inf", "max_backoff_s: must be a finite number >= 0 (got inf)"),
        ("max_retry_after_s = -1", "max_retry_after_s: must be a finite number >= 0 (got -1)"),
    ],
)
def test_a_bad_retry_value_is_one_line_naming_file_key_and_value(
    tmp_path: Path, line: str, expected: str
) -> None:
    message = _load(tmp_path, TWO_MEMBERS + "[retry]\n" + line + "\n")
    assert message.endswith(expected)


def test_good_retry_values_still_load(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text(
        TWO_MEMBERS + "[retry]\nmax_attempts = 1\ntimeout_s = 0.5\ninitial_backoff_s = 0\n"
        "max_backoff_s = 0\nmax_retry_after_s = 0\n"
    )
    retry = load_council_config(path, environ={}).retry
    assert (retry.max_attempts, retry.timeout_s, retry.initial_backoff_s) == (1, 0.5, 0.0)


def test_a_retry_table_that_is_not_a_table(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text("retry = 3\n" + TWO_MEMBERS)
    with pytest.raises(ConfigError, match=r"\[retry\] must be a table, got 3") as caught:
        load_council_config(path, environ={})
    assert str(caught.value).startswith(str(path))


def _members(n: int) -> str:
    return ", ".join(f'{{name="m{i}", spec="simulated:balanced"}}' for i in range(n))


@pytest.mark.parametrize("size", [MAX_COUNCIL_MEMBERS + 1, 1500])
def test_a_council_larger_than_the_maximum_is_refused_in_one_line(
    tmp_path: Path, size: int
) -> None:
    path = tmp_path / "council.toml"
    path.write_text(
        f'[council]\nmembers=[{_members(size)}]\nchairman={{name="c", spec="simulated:x"}}\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_council_config(path, environ={})
    message = str(caught.value)
    assert message.startswith(str(path)) and "\n" not in message and len(message) < 300
    assert message.endswith(f"a council has at most 32 members, got {size}")


def test_a_council_of_the_maximum_size_loads(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text(
        f"[council]\nmembers=[{_members(MAX_COUNCIL_MEMBERS)}]\n"
        'chairman={name="c", spec="simulated:x"}\n'
    )
    assert len(load_council_config(path, environ={}).members) == MAX_COUNCIL_MEMBERS == 32


def test_the_maximum_applies_to_councils_built_in_code() -> None:
    members = tuple(CouncilMember(name=f"m{i}", spec="simulated:balanced") for i in range(33))
    with pytest.raises(ValueError, match="at most 32 members, got 33"):
        CouncilConfig(members=members, chairman=members[0])
