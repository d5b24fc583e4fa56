"""The ``llm-council`` typer application and its error handling.

Each command lives in its own module with a ``register(app)`` function, listed in
:data:`COMMANDS` with its one-line summary. A module is imported only when its command
runs (or its own ``--help`` is asked for): ``llm-council --help`` prints the summaries from
the table and imports no command module, so start-up does not pay for scipy, DuckDB or the
providers' SDKs. User mistakes (any :class:`~llm_council.errors.CouncilError`) become one
line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from difflib import get_close_matches
from typing import Any, NamedTuple

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from llm_council.errors import CouncilError


class CommandEntry(NamedTuple):
    """Where a command lives and the summary ``llm-council --help`` shows for it."""

    module: str
    summary: str


# To add a command: its module defines ``register(app)``; add one line here.
COMMANDS: dict[str, CommandEntry] = {
    "ask": CommandEntry(
        "llm_council.cli.ask",
        "Ask the council a question: answers, anonymized peer review, and a synthesis.",
    ),
    "bias-report": CommandEntry(
        "llm_council.cli.bias_report",
        "Pool the bias-audit records of every session: reviewer profiles, biases, leaderboard.",
    ),
    "bias-import": CommandEntry(
        "llm_council.cli.bias_import",
        "Convert the reference council's bias records (schema 1.x) into the bias-audit store.",
    ),
    "bias-compact": CommandEntry(
        "llm_council.cli.bias_compact",
        "Compact the bias-audit store into Parquet partitioned by date (idempotent).",
    ),
    "calibrate": CommandEntry(
        "llm_council.cli.calibrate",
        "Position-swap calibration of an LLM judge (live with --model, else replay of verdicts).",
    ),
    "convert": CommandEntry(
        "llm_council.cli.convert",
        "Convert a judgment log to our replay pairs JSONL (then: llm-council calibrate OUT).",
    ),
    "probe": CommandEntry(
        "llm_council.cli.calibrate",
        "Bias probes: perturb one answer (authority, format, padding, identity, distraction).",
    ),
    "label-ui": CommandEntry(
        "llm_council.cli.calibrate",
        "Serve a local page (127.0.0.1 only) to label pairs A / B / tie, saving each label.",
    ),
    "export-openai-evals": CommandEntry(
        "llm_council.cli.calibrate",
        "Write the pairs as an OpenAI Evals dataset with a model-graded eval spec.",
    ),
}


class LazyCommandGroup(TyperGroup):
    """A typer group that imports a command's module the first time the command is needed."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing_only = False

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        loaded = self.commands.get(cmd_name)
        if loaded is not None:
            return loaded
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if self._listing_only:
            return TyperCommand(cmd_name, help=entry.summary, short_help=entry.summary)
        self._load(entry.module)
        return self.commands.get(cmd_name)

    def _load(self, module_name: str) -> None:
        """Import a command module and add every command its ``register`` defines."""
        module = importlib.import_module(module_name)
        holder = typer.Typer(add_completion=False)
        module.register(holder)
        for name, command in typer.main.get_group(holder).commands.items():
            self.commands.setdefault(name, command)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing_only = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing_only = False

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as error:
            # typer suggests only from the commands loaded so far; suggest from all of them
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in error.message:
                suggestions = ", ".join(repr(match) for match in matches)
                error.message = f"{error.message.rstrip('.')}. Did you mean {suggestions}?"
            raise


app = typer.Typer(
    name="llm-council",
    cls=LazyCommandGroup,
    help="Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges."""


def _run(argv: list[str] | None, prog_name: str, command_app: typer.Typer) -> int:
    try:
        result = command_app(args=argv, prog_name=prog_name, standalone_mode=False)
    except CouncilError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except typer.Exit as error:
        return int(error.exit_code)
    except typer.TyperException as error:  # usage errors: typer prints them itself
        show = getattr(error, "show", None)
        if callable(show):
            show()
        else:
            print(f"error: {error}", file=sys.stderr)
        return int(getattr(error, "exit_code", 2))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(_run(argv, "llm-council", app))


def calibrate_main(argv: list[str] | None = None) -> None:
    """The ``calibrate`` console script: ``llm-council calibrate`` under a shorter name."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.exit(_run(["calibrate", *args], "calibrate", app))
