"""``llm-council bias-import``: bring another council's bias records into our store."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llm_council.errors import RecordError
from llm_council.infra.input_files import require_regular_file

if TYPE_CHECKING:
    from llm_council.bias_audit.records.reference_import import ImportSummary

_SHOWN_LINES = 5


class SourceFormat(StrEnum):
    reference = "reference"


def _print_summary(summary: ImportSummary) -> None:
    from llm_council.bias_audit.records.reference_import import FIELD_NOTES

    verb = "would write" if summary.dry_run else "wrote"
    print(
        f"read {summary.n_records_read} reference record(s) from {summary.n_lines} line(s); "
        f"{verb} {summary.n_records_written} record(s) in {summary.n_sessions_written} "
        f"session(s) to {summary.target}",
        file=sys.stderr,
    )
    if summary.n_sessions_already_present:
        print(
            f"left out {summary.n_sessions_already_present} session(s) already in the store",
            file=sys.stderr,
        )
    if summary.n_scores_nulled:
        print(
            f"stored {summary.n_scores_nulled} score(s) of 0 below the scale as null "
            "(the reference's value for a missing score)",
            file=sys.stderr,
        )
    for reason, count in summary.skipped_by_reason().most_common():
        lines = [str(line) for line, why in summary.skipped if why == reason]
        more = ", ..." if len(lines) > _SHOWN_LINES else ""
        print(
            f"not converted: {count} line(s): {reason} (line {', '.join(lines[:_SHOWN_LINES])}"
            f"{more})",
            file=sys.stderr,
        )
    if summary.n_records_written:
        print("fields the reference did not record as we do:", file=sys.stderr)
        for name, note in FIELD_NOTES.items():
            print(f"  {name}: {note}", file=sys.stderr)


def bias_import(
    source: Annotated[Path, typer.Argument(help="The other council's JSONL bias records.")],
    source_format: Annotated[
        SourceFormat, typer.Option("--from", help="The records' origin: reference.")
    ] = SourceFormat.reference,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="Target store (default: LLM_COUNCIL_BIAS_STORE, else the user data directory).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be imported; write nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Convert the reference council's bias records (schema 1.x) into the bias-audit store."""
    from llm_council.bias_audit.records.reference_import import import_reference_store
    from llm_council.bias_audit.records.stores import is_postgres_url, redact_url, store_spec

    spec = str(store) if store is not None else store_spec()
    if spec.lower().startswith(("postgresql:", "postgres:")):
        # a --store given as a Path has its '//' folded, so the URL cannot be parsed (nor its
        # password blanked) any more: then name it without echoing it
        shown = repr(redact_url(spec)) if is_postgres_url(spec) else "the store"
        raise RecordError(
            f"bias-import writes a JSONL store, and {shown} is a PostgreSQL URL: import into "
            "a JSONL file with --store FILE, then copy it: llm-council store-copy --from FILE "
            "--store URL"
        )
    target = Path(spec).expanduser()
    if source.exists():  # a missing file keeps the importer's own message
        require_regular_file(source)  # a FIFO or /dev/zero: one line, not a hang (issue 37 A.10)
    summary = import_reference_store(source, target, dry_run=dry_run)
    if as_json:
        sys.stdout.write(json.dumps(summary.to_json(), indent=2) + "\n")
    else:
        _print_summary(summary)


def register(app: typer.Typer) -> None:
    app.command("bias-import")(bias_import)
