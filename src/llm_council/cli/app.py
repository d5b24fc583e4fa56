"""The ``llm-council`` typer application and its error handling.

Each command lives in its own module with a ``register(app)`` function. User mistakes
(any :class:`~llm_council.errors.CouncilError`) become one line on stderr and a non-zero
exit code, never a traceback.
"""

from __future__ import annotations

import sys

import typer

from llm_council.errors import CouncilError

app = typer.Typer(
    name="llm-council",
    help="Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges."""


def _register_commands() -> None:
    from llm_council.cli import ask, bias_import, bias_report, calibrate, convert

    for module in (ask, bias_report, bias_import, calibrate, convert):
        module.register(app)


_register_commands()


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
