"""The typer application behind ``llm-council``, and its error handling.

Imported by :func:`llm_council.cli.app.main` for everything but the bare top-level
``--help`` (which :mod:`llm_council.cli.app` prints without typer). Each command's module
is imported only when the command runs or its own ``--help`` is asked for (the
:data:`~llm_council.cli.command_table.COMMANDS` table). User mistakes (any
:class:`~llm_council.errors.CouncilError`) become one line on stderr and a non-zero exit
code, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from difflib import get_close_matches
from typing import Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from llm_council.cli.command_table import COMMANDS, ROOT_HELP
from llm_council.errors import CouncilError
from llm_council.infra.safe_text import terminal_safe


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
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges."""


def run(argv: list[str] | None, prog_name: str, command_app: typer.Typer = app) -> int:
    """Run ``command_app`` on ``argv``; the process exit code (errors as one line, and
    warnings as one ``warning: ...`` line each, see :func:`warning_line`)."""
    # formatwarning, not showwarning: a caller recording warnings (pytest.warns, an
    # embedding application's catch_warnings(record=True)) still gets them as objects
    previous = warnings.formatwarning
    warnings.formatwarning = warning_line
    try:
        return _run_command(argv, prog_name, command_app)
    finally:
        warnings.formatwarning = previous


def warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    """``warnings.formatwarning`` for the CLI: ``warning: <message>``, one line.

    Python's own format adds our source file, line number and the source line of the
    ``warnings.warn`` call, which mean nothing to a user (issue 26 item 7). Categories
    other than ``UserWarning`` keep their name so a library's deprecation stays visible
    as what it is.
    """
    text = " ".join(str(message).split())  # a warning is one line, whatever it quotes
    if not issubclass(category, UserWarning):
        text = f"{category.__name__}: {text}"
    return f"warning: {terminal_safe(text)}\n"


def _run_command(argv: list[str] | None, prog_name: str, command_app: typer.Typer) -> int:
    try:
        result = command_app(args=argv, prog_name=prog_name, standalone_mode=False)
    except CouncilError as error:
        # paths, ids and driver messages in errors can hold control or bidi characters
        print(f"error: {terminal_safe(str(error))}", file=sys.stderr)
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
