"""``llm-council --help`` imports no command module (nor typer or rich) and says what
typer would; each command still loads when run."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from llm_council.cli.app import COMMANDS, _run, app

_HEAVY = (
    "scipy",
    "duckdb",
    "numpy",
    "pydantic",
    "openai",
    "anthropic",
    "structlog",
    "typer",
    "rich",
    "click",
)


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from llm_council.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{_HEAVY!r} or m.startswith('llm_council.cli.')"
        " and m not in ('llm_council.cli.app', 'llm_council.cli.command_table')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    help_text, _, imported = result.stdout.rpartition("\n[")
    assert imported.strip() == "]", f"--help imported: [{imported}"
    for name, entry in COMMANDS.items():
        assert name in help_text
        assert entry.summary in " ".join(help_text.split())


@pytest.mark.parametrize("columns", ["80", "55", "120"])
def test_fast_help_is_exactly_typers_own_plain_help(columns: str) -> None:
    """The table-printed help and typer's (without rich) agree byte for byte, so the fast
    path can neither drop a command nor drift from what the typer app would say."""
    environment = {**os.environ, "COLUMNS": columns, "TYPER_USE_RICH": "0"}

    def output(code: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=environment
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    fast = output("from llm_council.cli.app import main; main(['--help'])")
    through_typer = output(
        "import sys; from llm_council.cli.command_group import run; "
        "sys.exit(run(['--help'], 'llm-council'))"
    )
    assert fast == through_typer
    assert fast.startswith("Usage: llm-council [OPTIONS] COMMAND [ARGS]...")
    assert [
        line.split()[0]
        for line in fast.split("Commands:\n")[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ] == list(COMMANDS)


def test_a_commands_help_goes_through_typer_and_lists_its_options() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from llm_council.cli.app import main; main(['ask', '--help'])"],
        capture_output=True,
        text=True,
        env={**os.environ, "TYPER_USE_RICH": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert "Usage: llm-council ask" in result.stdout
    assert "--bias-audit" in result.stdout and "--json" in result.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_summary_in_the_table_is_the_commands_own_docstring(name: str) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    holder = typer.Typer()
    module.register(holder)
    command = typer.main.get_group(holder).commands[name]
    assert (command.help or "").strip().splitlines()[0] == COMMANDS[name].summary


def test_a_command_runs_through_the_lazy_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["bias-report", "--help"], "llm-council", app) == 0
    assert "--engine" in capsys.readouterr().out


def test_unknown_command_suggests_from_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["bias-compcat"], "llm-council", app) == 2
    assert "Did you mean 'bias-compact'" in capsys.readouterr().err


def test_an_error_line_shows_control_and_bidi_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a store path is user text that the one-line error repeats: a right-to-left override
    # or an escape sequence in it must not reach the terminal raw
    hostile = tmp_path / "evil\u202etxt.lmth\x1b[31m" / "records.jsonl"
    code = _run(["bias-report", "--store", str(hostile)], "llm-council", app)
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: ")
    assert "\u202e" not in err and "\x1b" not in err
    assert "\\u202e" in err and ("\\u001b" in err or "\\x1b" in err)


def test_every_council_error_line_goes_through_the_terminal_filter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # an error whose message was not built with repr (a driver's text, say) is escaped too
    import llm_council.cli.command_group as command_group
    from llm_council.errors import InputError

    def fail(*_args: object, **_kwargs: object) -> None:
        raise InputError("bad line from \u202eelif\x1b[2J")

    monkeypatch.setattr(command_group.typer.main, "get_command", fail)
    code = _run(["bias-report"], "llm-council", app)
    err = capsys.readouterr().err
    assert code != 0
    assert err == "error: bad line from \\u202eelif\\u001b[2J\n"


def _help_texts(name: str) -> list[str]:
    """The docstring and every option's help of command ``name``, as written in the code."""
    module = importlib.import_module(COMMANDS[name].module)
    holder = typer.Typer()
    module.register(holder)
    command = typer.main.get_group(holder).commands[name]
    texts = [line for line in (command.help or "").split("\n\n") if line.strip()]
    return texts + [text for param in command.params if (text := getattr(param, "help", None))]


def test_every_help_text_reaches_the_rich_help_as_written() -> None:
    """Rich help reads ``[word]`` as a style tag and drops it (``llm-council[spark]`` once
    printed as ``llm-council``): every command's help, rendered with rich, holds every
    docstring paragraph and option help word for word."""
    separator = "=====8<====="
    code = (
        "import sys\nfrom llm_council.cli.app import main\n"
        f"for name in {sorted(COMMANDS)!r}:\n"
        f"    print({separator!r}, name)\n"
        "    try:\n        main([name, '--help'])\n    except SystemExit:\n        pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400", "TERM": "dumb", "TYPER_USE_RICH": "1"},
    )
    assert result.returncode == 0, result.stderr
    rendered = {
        part.split(None, 1)[0]: " ".join(part.replace("│", " ").split()[1:])
        for part in result.stdout.split(separator)[1:]
    }
    assert set(rendered) == set(COMMANDS)
    assert "╭" in result.stdout, "expected rich's boxed help (ADR 0029)"
    for name in COMMANDS:
        for text in _help_texts(name):
            assert " ".join(text.split()) in rendered[name], (name, text)
