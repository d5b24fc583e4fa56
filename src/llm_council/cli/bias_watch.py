"""``llm-council bias-watch``: each reviewer's anytime-valid bias status (ADR 0053).

Exit codes: 1 when any reviewer is confirmed, 0 when none is, 2 on bad input (a bad
option, a store that is not a JSONL file, a file with lines but no record in it). Lines
that are neither blank nor records in a store that has records are skipped with a warning
on stderr naming the file, how many and the first one's line number. Looking as often as
one likes keeps the monitor's level: its confirmations hold with probability 1 - alpha
over all looks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llm_council.errors import ConfigError, InputError, RecordError
from llm_council.infra.safe_text import terminal_safe

if TYPE_CHECKING:  # the command imports the monitor (numpy, the schema) only when run
    from llm_council.bias_audit.records.monitor_fold import MonitorState


def _text(answer: dict[str, Any], store: str) -> str:
    lines = [
        f"bias monitor of {store}: {answer['sessions']} sessions, practical null "
        f"|effect| <= {answer['delta0']:g} points, alpha {answer['alpha']:g} over all looks",
    ]
    if not answer["reviewers"]:
        lines.append("  no reviewer yet")
    for name, entry in answer["reviewers"].items():
        if entry["status"] == "watching":
            lines.append(f"  {name}: watching")
            continue
        for bias in entry["confirmed"]:
            detail = entry["biases"][bias]
            low, high = detail["bounds"]
            lines.append(
                f"  {name}: confirmed {bias} ({detail['direction']}), "
                f"effect {detail['estimate']:+.2f} [{low:+.2f}, {high:+.2f}] points, "
                f"at session {detail['confirmed_at_session']} of {detail['sessions']}"
            )
    return "\n".join(terminal_safe(line) for line in lines) + "\n"


def _check_lines(state: MonitorState, path: Path) -> None:
    """A file with lines but no session is not a store (one-line error, exit 2); lines
    that are not records beside the records are a warning naming the first."""
    if state.malformed_lines == 0:
        if state.n_sessions == 0 and state.lines_read == 0 and path.stat().st_size > 0:
            # no complete line at all: a store's lines end with a newline
            with path.open("rb") as handle:
                first = handle.read(64)
            if not first.lstrip().startswith(b"{"):
                raise InputError(
                    "not a bias-audit record store (no complete record line)", path=str(path)
                )
        return
    where = f"line {state.first_malformed_line}"
    if state.n_sessions == 0:
        raise InputError(
            "not a bias-audit record store: this line is not a record",
            path=str(path),
            line=state.first_malformed_line,
        )
    sys.stderr.write(
        terminal_safe(
            f"warning: {path}: {state.malformed_lines} lines are not bias-audit records "
            f"(first: {where}); skipped"
        )
        + "\n"
    )


def bias_watch(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="JSONL store or postgresql:// URL "
            "(default: LLM_COUNCIL_BIAS_STORE, else the user data directory).",
        ),
    ] = None,
    delta0: Annotated[
        float | None,
        typer.Option(
            "--delta0",
            help="Practical null: effects within +-D points are not biases "
            "(default: LLM_COUNCIL_MONITOR_DELTA0, else 0.5).",
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="Chance of any false confirmation, ever "
            "(default: LLM_COUNCIL_MONITOR_ALPHA, else 0.05).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> int:
    """Each reviewer's bias status, valid however often you look (exit 1: confirmed)."""
    from llm_council.bias_audit.records.monitor_state import current_monitor
    from llm_council.bias_audit.records.monitor_status import monitor_status
    from llm_council.bias_audit.records.monitor_update import monitor_settings
    from llm_council.bias_audit.records.store_urls import is_postgres_url, redact_url
    from llm_council.bias_audit.records.stores import store_spec
    from llm_council.infra.log_setup import configure_logging

    configure_logging(level="WARNING")  # stderr: stdout carries the status (and --json)
    spec = store if store is not None else store_spec()
    settings = monitor_settings(delta0=delta0, alpha=alpha)
    if is_postgres_url(spec):
        try:
            from llm_council.bias_audit.records.postgres_monitor import postgres_monitor
        except ImportError as error:
            raise ConfigError(
                f"--store: a PostgreSQL store needs the 'postgres' extra ({error.name})"
            ) from None
        try:
            # other settings than the saved state's: computed from the records, not saved
            state = postgres_monitor(spec, settings, save=settings == monitor_settings())
        except RecordError as error:
            raise InputError(str(error)) from None
        location = redact_url(spec)
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            raise InputError("no such record store", path=str(path))
        if not path.is_file():
            raise InputError("the record store must be a regular file", path=str(path))
        try:
            # other settings than the saved state's: computed from the records, not saved
            state = current_monitor(path, settings, save=settings == monitor_settings())
        except RecordError as error:
            raise InputError(str(error)) from None
        location = str(path)
        _check_lines(state, path)
    answer = monitor_status(state)
    if as_json:
        sys.stdout.write(json.dumps(answer, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(_text(answer, location))
    return 1 if answer["confirmed"] else 0


def register(app: typer.Typer) -> None:
    app.command("bias-watch")(bias_watch)
