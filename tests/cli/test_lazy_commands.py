"""``llm-council --help`` imports no command module; each command still loads when run."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import typer

from llm_council.cli.app import COMMANDS, _run, app

_HEAVY = ("scipy", "duckdb", "numpy", "pydantic", "openai", "anthropic", "structlog")


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from llm_council.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{_HEAVY!r} or m.startswith('llm_council.cli.') and m != 'llm_council.cli.app'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    help_text, _, imported = result.stdout.rpartition("\n[")
    assert imported.strip() == "]", f"--help imported: [{imported}"
    for name in COMMANDS:
        assert name in help_text


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
