"""``llm-council bias-compact``: copy the bias-audit store into Parquet day partitions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def bias_compact(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Parquet directory (date=YYYY-MM-DD/ partitions).")
    ],
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="JSONL store or postgresql:// URL (default: LLM_COUNCIL_BIAS_STORE, else the "
            "user data directory).",
        ),
    ] = None,
) -> None:
    """Compact the bias-audit store into Parquet partitioned by date (idempotent)."""
    from llm_council.bias_audit.report.load.parquet_compaction import compact_store
    from llm_council.bias_audit.report.load.record_sources import default_store_location

    result = compact_store(store if store is not None else default_store_location(), out)
    days = result.days_written
    span = f" ({days[0]} .. {days[-1]})" if len(days) > 1 else f" ({days[0]})" if days else ""
    print(
        f"compacted {result.n_sessions_written} session(s) ({result.n_records_written} records) "
        f"into {result.out_dir}: {len(days)} day partition(s) written{span}; "
        f"{result.n_sessions_already_compacted} session(s) were already there",
        file=sys.stderr,
    )
    if result.days_merged:
        merged = result.days_merged
        print(
            f"merged the part files of {len(merged)} day(s) into one each ({', '.join(merged)}); "
            "the next incremental bias-report reads the whole store once",
            file=sys.stderr,
        )
    if result.n_stale_temporaries_removed:
        print(
            f"removed {result.n_stale_temporaries_removed} stale temporary file(s) left by an "
            "interrupted bias-compact",
            file=sys.stderr,
        )
    if result.n_duplicate_records:
        print(
            f"warning: {result.n_duplicate_records} repeated record(s) of sessions found more "
            "than once (every record repeated) not compacted again: each session once",
            file=sys.stderr,
        )
    if result.n_bad_scores:
        print(
            f"warning: {result.n_bad_scores} record(s) whose score is not a finite number "
            "(NaN, an infinity, beyond 1e6 in size, a string or a boolean) not compacted",
            file=sys.stderr,
        )
    if result.n_incomplete_sessions:
        print(
            f"warning: {result.n_incomplete_sessions} incomplete session(s) "
            f"({result.n_incomplete_records} records) not compacted (still being written, or "
            "a writer was killed mid-session)",
            file=sys.stderr,
        )
    if result.n_unreadable:
        print(f"warning: {result.n_unreadable} unreadable line(s) not compacted", file=sys.stderr)
    if result.n_unknown_version:
        print(
            f"warning: {result.n_unknown_version} line(s) of a schema_version this version "
            "does not know not compacted; upgrade llm-council",
            file=sys.stderr,
        )
    if result.n_undated:
        print(
            f"warning: {result.n_undated} record(s) with an unreadable timestamp not compacted",
            file=sys.stderr,
        )


def register(app: typer.Typer) -> None:
    app.command("bias-compact")(bias_compact)
