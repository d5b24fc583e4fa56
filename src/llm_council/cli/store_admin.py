"""``llm-council store-migrate``, ``store-rebuild`` and ``store-copy``: a PostgreSQL
record store's administration (ADR 0056).

Writers never create or migrate the schema (a writer role needs no ``CREATE`` right);
a council process never finishes a large rebuild (a CLI ``ask`` lives ~2 s); moving from
a JSONL store to a shared one needs no code. These commands do each once, on purpose.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llm_council.errors import RecordError

if TYPE_CHECKING:
    from llm_council.bias_audit.records.postgres_copy import CopySummary

_STORE_HELP = "The PostgreSQL store, postgresql://... (default: LLM_COUNCIL_BIAS_STORE)."
_PROGRESS_EVERY_S = 2.0
_SHOWN_REFUSALS = 5


def _postgres_url(store: str | None, command: str) -> str:
    """The ``--store`` URL (or the configured one); a one-line error when it is not one."""
    from llm_council.bias_audit.records.stores import is_postgres_url, store_spec

    spec = store if store is not None else store_spec()
    if not is_postgres_url(spec):
        raise RecordError(
            f"{command} works on a PostgreSQL store: --store must be a postgresql:// URL "
            "(or set LLM_COUNCIL_BIAS_STORE to one)"
        )
    return spec


def store_migrate(
    store: Annotated[str | None, typer.Option("--store", help=_STORE_HELP)] = None,
) -> None:
    """Create or migrate the PostgreSQL store's schema (once, as a role that may create tables)."""
    from llm_council.bias_audit.records.postgres_schema import SCHEMA_VERSION, migrate_store
    from llm_council.bias_audit.records.store_urls import redact_url

    url = _postgres_url(store, "store-migrate")
    before = migrate_store(url)
    if before == SCHEMA_VERSION:
        print(f"{redact_url(url)}: schema already at version {SCHEMA_VERSION}", file=sys.stderr)
    else:
        was = "no schema" if before == 0 else f"version {before}"
        print(
            f"{redact_url(url)}: schema migrated from {was} to version {SCHEMA_VERSION}",
            file=sys.stderr,
        )


def store_rebuild(
    store: Annotated[str | None, typer.Option("--store", help=_STORE_HELP)] = None,
) -> None:
    """Rebuild the PostgreSQL store's reviewer profiles and monitor from its records (import)."""
    from llm_council.bias_audit.records.postgres_profile_rebuild import (
        RebuildCounts,
        rebuild_current_store,
    )
    from llm_council.bias_audit.records.store_urls import redact_url

    url = _postgres_url(store, "store-rebuild")
    counts = RebuildCounts()
    started = time.monotonic()
    profiles = rebuild_current_store(url, counts)
    outcome = "saved" if counts.saved else "computed, not saved (this role may not write them)"
    print(
        f"{redact_url(url)}: reviewer profiles of {len(profiles)} reviewer(s) from "
        f"{counts.sessions_folded} session(s), {outcome}, in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    if counts.sessions_incomplete:
        print(f"left out {counts.sessions_incomplete} incomplete session(s)", file=sys.stderr)
    if counts.sessions_out_of_bound:
        print(
            f"left out {counts.sessions_out_of_bound} session(s) with a score beyond +/-1e6 "
            "or not finite",
            file=sys.stderr,
        )
    _rebuild_monitor(url)


def _rebuild_monitor(url: str) -> None:
    """The anytime monitor's state too (ADR 0053): an import leaves it stale as well."""
    from llm_council.bias_audit.records.monitor_settings import monitor_settings
    from llm_council.bias_audit.records.postgres_monitor import rebuild_postgres_monitor
    from llm_council.bias_audit.records.store_urls import redact_url

    started = time.monotonic()
    state, saved = rebuild_postgres_monitor(url, monitor_settings())
    outcome = "saved" if saved else "computed, not saved (this role may not write it)"
    print(
        f"{redact_url(url)}: the bias monitor from {state.n_sessions} session(s), {outcome}, "
        f"in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )


def store_copy(
    source: Annotated[
        Path, typer.Option("--from", help="The JSONL store to copy (its complete sessions).")
    ],
    store: Annotated[str | None, typer.Option("--store", help=_STORE_HELP)] = None,
) -> None:
    """Copy a JSONL bias-audit store into a PostgreSQL store (idempotent: re-run to resume)."""
    from llm_council.bias_audit.records.postgres_copy import copy_jsonl_to_postgres
    from llm_council.bias_audit.records.store_urls import redact_url

    url = _postgres_url(store, "store-copy")
    started = time.monotonic()
    last = [started]

    def progress(summary: CopySummary) -> None:
        now = time.monotonic()
        if now - last[0] >= _PROGRESS_EVERY_S:
            last[0] = now
            print(
                f"... {summary.sessions_read} session(s) read, {summary.sessions_written} "
                f"written ({summary.sessions_read / (now - started):.0f}/s)",
                file=sys.stderr,
            )

    summary = copy_jsonl_to_postgres(source.expanduser(), url, progress=progress)
    print(
        f"copied {summary.sessions_written} session(s) ({summary.records_written} records) "
        f"from {source} to {redact_url(url)} in {time.monotonic() - started:.1f} s; "
        f"{summary.sessions_already_present} already there",
        file=sys.stderr,
    )
    if summary.lines_left_out:
        print(
            f"left out {summary.lines_left_out} line(s) the JSONL reader skips "
            "(malformed, torn or of an incomplete session)",
            file=sys.stderr,
        )
    if summary.sessions_split:
        print(
            f"left out {summary.sessions_split} session(s) whose lines are not together",
            file=sys.stderr,
        )
    for refusal in summary.sessions_refused[:_SHOWN_REFUSALS]:
        print(f"refused: {refusal}", file=sys.stderr)
    if len(summary.sessions_refused) > _SHOWN_REFUSALS:
        print(f"refused {len(summary.sessions_refused)} session(s) in all", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("store-migrate")(store_migrate)
    app.command("store-rebuild")(store_rebuild)
    app.command("store-copy")(store_copy)
