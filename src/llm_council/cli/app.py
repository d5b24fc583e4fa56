"""The ``llm-council`` entry point: the start-up fast path over the command table.

Each command lives in its own module with a ``register(app)`` function, listed in
:data:`~llm_council.cli.command_table.COMMANDS` with its one-line summary. ``llm-council
--help`` is printed from that table alone, in click's plain help layout, without importing
typer, rich or any command module (typer and rich alone cost more than the 0.4 s start-up
budget on a loaded machine, issue 12 section 5). Everything else goes through the typer
application in :mod:`llm_council.cli.command_group`, which imports a command's module only
when that command runs or its own ``--help`` is asked for.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import textwrap
from typing import Any, NoReturn

from llm_council.cli.command_table import COMMANDS, ROOT_HELP, CommandEntry

__all__ = ["COMMANDS", "ROOT_HELP", "CommandEntry", "calibrate_main", "main", "top_level_help"]


#: click's help layout: at most 80 columns minus a margin of 2, at least 50
_MAX_WIDTH = 80
_MIN_WIDTH = 50


def top_level_help(prog_name: str = "llm-council") -> str:
    """``llm-council --help`` as click lays out plain help (what typer prints without
    rich): usage, the description, the one option, and every command of :data:`COMMANDS`
    with its summary, wrapped to the terminal like click does."""
    width = max(min(shutil.get_terminal_size().columns, _MAX_WIDTH) - 2, _MIN_WIDTH)
    name_width = max(len(name) for name in COMMANDS)
    text_column = 2 + name_width + 2
    lines = [
        f"Usage: {prog_name} [OPTIONS] COMMAND [ARGS]...",
        "",
        *textwrap.wrap(ROOT_HELP, width, initial_indent="  ", subsequent_indent="  "),
        "",
        "Options:",
        "  --help  Show this message and exit.",
        "",
        "Commands:",
    ]
    for name, entry in COMMANDS.items():
        wrapped = textwrap.wrap(entry.summary, max(width - text_column, 10)) or [""]
        lines.append(f"  {name.ljust(name_width)}  {wrapped[0]}")
        lines.extend(" " * text_column + more for more in wrapped[1:])
    return "\n".join(lines) + "\n"


def _run_typer(argv: list[str], prog_name: str) -> int:
    from llm_council.cli.command_group import run

    return run(argv, prog_name)


INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, as a shell reports it


def _interrupted_at_exit(signum: int, frame: object) -> None:
    os._exit(INTERRUPTED_EXIT_CODE)


def exit_quietly(code: int) -> NoReturn:
    """``sys.exit(code)``, with Ctrl-C during the interpreter's teardown ending the
    process at once (exit 130) instead of printing a traceback from whatever exit hook
    it interrupted (logging's flush at exit did, once in 22 tries, issue 37 A.11). The
    command's output is flushed first, so nothing it printed is lost."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to save
            stream.flush()
    signal.signal(signal.SIGINT, _interrupted_at_exit)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--help"]:
        sys.stdout.write(top_level_help("llm-council"))
        sys.exit(0)
    code = _run_typer(args, "llm-council")
    if argv is None:  # the console script: the process ends here
        exit_quietly(code)
    sys.exit(code)


def calibrate_main(argv: list[str] | None = None) -> None:
    """The ``calibrate`` console script: ``llm-council calibrate`` under a shorter name."""
    args = list(sys.argv[1:] if argv is None else argv)
    code = _run_typer(["calibrate", *args], "calibrate")
    if argv is None:
        exit_quietly(code)
    sys.exit(code)


def __getattr__(name: str) -> Any:
    """``app``, ``LazyCommandGroup`` and ``_run`` (the typer side) on first use, so
    importing this module stays free of typer."""
    if name in ("app", "LazyCommandGroup", "run", "_run"):
        from llm_council.cli import command_group

        return getattr(command_group, "run" if name == "_run" else name)
    raise AttributeError(f"module 'llm_council.cli.app' has no attribute {name!r}")
