"""A large store's sections summarized a block of sessions at a time (ADR 0092).

Every incremental section's summary of some sessions merges exactly with its summary of
other sessions (ADR 0073: the merge of two parts equals the summary of their union, tested
for every section in three orders). A section that summarizes every record at once holds
per-record arrays of the whole store: at 10M records of the default council each section
peaked 0.6-2.4 GB above the tables. Past :data:`CHUNKED_ABOVE_RECORDS` records the
sessions a run summarizes are split into blocks of consecutive session codes holding
about :data:`CHUNK_RECORDS` records each; a section summarizes one block at a time, each
through views that keep only that block's rows (the schemas ``chunk_0``, ``chunk_1``, ...)
and merges it into what it has so far. Its peak is then one block's temporaries plus its
own summary (which still grows with the store where the section keeps per-review rows).

The result is the merge of the blocks' summaries, which equals the whole store's summary
by the merge contract: bit for bit for the sections whose merges are exact, within
rounding for the few that add floating sums in another order (ADR 0077). A section whose
blocks refuse to merge (:class:`SummaryNotMergeable`: a choice made for the whole store
differs between blocks) is summarized over every session at once, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_plan import (
    IncrementalPlan,
    filtered_tables,
    new_schema,
)
from llm_council.bias_audit.report.analyses.incremental_section import (
    IncrementalSection,
    SummaryNotMergeable,
)
from llm_council.bias_audit.report.analyses.section_runner import PARALLEL_MAX_RECORDS
from llm_council.bias_audit.report.load.analysis_database import ANALYSIS_DATABASE

log = structlog.get_logger("llm_council.bias_audit")

#: summaries over more records than this are made a block of sessions at a time (the
#: sections then run one at a time too: :data:`PARALLEL_MAX_RECORDS`)
CHUNKED_ABOVE_RECORDS = PARALLEL_MAX_RECORDS
#: about how many records a block holds (a session is never split)
CHUNK_RECORDS = 1_000_000
#: the prefix of the blocks' schemas
CHUNK_SCHEMA_PREFIX = "chunk_"


def chunk_bounds(
    session_codes: np.ndarray, n_records: np.ndarray, size: int
) -> list[tuple[int, int]]:
    """Inclusive ``(first, last)`` session codes of consecutive blocks of about ``size``
    records: a block closes once it holds ``size`` records or more, so each holds at most
    ``size`` plus one session's records less one; every code given falls in one block.

    ``session_codes`` sorted ascending, ``n_records`` each one's record count."""
    bounds: list[tuple[int, int]] = []
    first = 0
    held = 0
    for at in range(session_codes.size):
        held += int(n_records[at])
        if held >= size:
            bounds.append((int(session_codes[first]), int(session_codes[at])))
            first, held = at + 1, 0
    if first < session_codes.size:
        bounds.append((int(session_codes[first]), int(session_codes[-1])))
    return bounds


def create_chunk_schemas(
    connection: duckdb.DuckDBPyConnection,
    schema: str,
    *,
    above: int | None = None,
    size: int | None = None,
) -> tuple[str, ...]:
    """The block schemas over ``schema``'s sessions (views, no copies), in session-code
    order; ``()`` when ``schema`` holds at most ``above`` records (defaults: the module's
    :data:`CHUNKED_ABOVE_RECORDS` and :data:`CHUNK_RECORDS`, read at the call)."""
    above = CHUNKED_ABOVE_RECORDS if above is None else above
    size = CHUNK_RECORDS if size is None else size
    source = f"{ANALYSIS_DATABASE}.{schema}"
    per_session = connection.execute(
        f"SELECT session, count(*) AS n FROM {source}.records GROUP BY session ORDER BY session"
    ).fetchnumpy()
    n_records = np.asarray(per_session["n"], dtype=np.int64)
    if int(n_records.sum()) <= above:
        return ()
    codes = np.asarray(per_session["session"], dtype=np.int64)
    names = []
    for index, (first, last) in enumerate(chunk_bounds(codes, n_records, size)):
        name = f"{CHUNK_SCHEMA_PREFIX}{index}"
        _block_views(connection, source, f"{ANALYSIS_DATABASE}.{name}", first, last)
        names.append(name)
    log.info("report_sessions_in_blocks", blocks=len(names), records=int(n_records.sum()))
    return tuple(names)


def _block_views(
    connection: duckdb.DuckDBPyConnection, source: str, target: str, first: int, last: int
) -> None:
    """Views in ``target`` of ``source``'s rows of sessions ``first``..``last``."""
    new_schema(connection, target)
    condition = f"session BETWEEN {int(first)} AND {int(last)}"
    filtered_tables(connection, source, target, condition, copy=False)


def summarize_in_blocks(
    section: IncrementalSection[Any, Any],
    blocks: tuple[str, ...],
    summarize_in: Callable[[str], Any],
) -> tuple[Any, bool]:
    """(the merge of ``section``'s summaries of ``blocks``, True), or (None, False) when
    two blocks' summaries refuse to merge (the caller summarizes every session at once).
    ``summarize_in(schema)``: the section's summary of one schema's sessions."""
    merged: Any = None
    for block in blocks:
        summary = summarize_in(block)
        if summary is None:
            continue
        try:
            merged = summary if merged is None else section.merge(merged, summary)
        except SummaryNotMergeable as error:
            log.info("report_section_not_in_blocks", section=section.name, reason=str(error))
            return None, False
        del summary
    return merged, True


def with_blocks(
    connection: duckdb.DuckDBPyConnection,
    plan: IncrementalPlan,
    *,
    above: int | None = None,
    size: int | None = None,
) -> IncrementalPlan:
    """``plan`` with the block schemas of the sessions it folds now (none: small)."""
    if plan.schema is None:
        return plan
    return replace(
        plan, blocks=create_chunk_schemas(connection, plan.schema, above=above, size=size)
    )


__all__ = [
    "CHUNKED_ABOVE_RECORDS",
    "CHUNK_RECORDS",
    "chunk_bounds",
    "create_chunk_schemas",
    "summarize_in_blocks",
    "with_blocks",
]
