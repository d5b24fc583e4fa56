"""Run the incremental sections: summarize the new sessions, merge the saved summaries, finish.

The report loads every record as before (the other sections need them all), so the
session rules (incomplete sessions, duplicates, bad scores, ``session_n_records``) have
already decided which sessions exist: ``records`` holds exactly the sessions a full read
keeps. A saved file (:mod:`~llm_council.bias_audit.report.load.session_summaries`) is
used when it verifies, was made with the same settings and section versions, its store
still extends what it covered (:mod:`~llm_council.bias_audit.report.load.store_coverage`),
and every session it folded is still in ``records`` with the same records (their count
and a digest of their content).
Then the sessions not folded are the new ones: they are copied into a schema of their
own (``fresh``, same table names), each section summarizes them there, and the summary
is merged with the saved one. Otherwise every section summarizes every session (a cold
run). Either way ``finish`` makes the result and the merged summaries are saved, covering
all sessions of ``records``. A session that was incomplete or being written when the
file was saved was not in ``records`` then, so it was not folded: it is new the first
time it is complete. A folded session that changed (dropped, more, fewer or other
records) makes the whole file be rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_section import (
    IncrementalSection,
    SummaryNotMergeable,
)
from llm_council.bias_audit.report.analyses.section_runner import SectionRunner
from llm_council.bias_audit.report.load.analysis_database import ANALYSIS_DATABASE
from llm_council.bias_audit.report.load.session_summaries import (
    SavedSection,
    SessionSummaries,
    read_summaries,
    write_summaries,
)
from llm_council.bias_audit.report.load.store_coverage import extends, store_coverage

log = structlog.get_logger("llm_council.bias_audit")

#: the schema holding the new sessions' copies of the analysis tables
FRESH_SCHEMA = "fresh"
_COPIED_TABLES = ("records", "scored", "session_names")
_SHARED_TABLES = ("reviewers", "models")


@dataclass(frozen=True)
class IncrementalPlan:
    """Which sessions each incremental section summarizes now, and what it merges with.

    ``how``: ``"incremental"`` (a verified file; ``n_new`` sessions summarized),
    ``"cold"`` (every session summarized; ``reason`` says why nothing saved was used) or
    ``"off"`` (no summary file for this report: every session, nothing saved).
    """

    how: str
    reason: str
    schema: str | None  # where the sessions to summarize are; None: nothing to summarize
    saved: SessionSummaries | None
    session_ids: np.ndarray  # every session of ``records``, sorted
    session_records: np.ndarray  # (sessions, 2) uint64: record count, content digest
    coverage: dict[str, Any] | None
    settings: dict[str, Any]
    n_new: int


#: the columns of ``records`` a session's content digest covers (everything an analysis reads)
_DIGESTED = (
    "reviewer, model, position, n_candidates, words, chars, score, rank, rationale_chars, "
    "review_status, is_self, scale_low, scale_high, time, similarity, fingerprint"
)


def _current_sessions(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, np.ndarray]:
    """(per session sorted by id: dense index, record count, content digest; the ids).

    The digest is the sum modulo 2**64 of DuckDB's 64-bit ``hash`` of each record's
    analysed fields: the same records in any order give the same digest, and a record
    changed, added or removed changes it except with probability about 2**-64. DuckDB's
    hash may change between its versions; the saved settings name the version.
    """
    rows = connection.execute(
        f"""SELECT n.session, n.session_id, c.n_records, c.digest FROM session_names n
            JOIN (SELECT session, count(*) AS n_records,
                         (sum(hash({_DIGESTED})) % 18446744073709551616)::UBIGINT AS digest
                  FROM records GROUP BY session) c
            USING (session)"""
    ).fetchnumpy()
    ids = np.asarray(rows["session_id"], dtype=str)
    order = np.argsort(ids, kind="stable")
    table = np.column_stack(
        [
            np.asarray(rows["session"], dtype=np.uint64)[order],
            np.asarray(rows["n_records"], dtype=np.uint64)[order],
            np.asarray(rows["digest"], dtype=np.uint64)[order],
        ]
    )
    return table, ids[order]


def _unusable(
    saved: SessionSummaries,
    settings: Mapping[str, Any],
    store: str | Path,
    ids: np.ndarray,
    counts: np.ndarray,
) -> str | None:
    """Why the saved summaries cannot be merged with the current records (None: they can)."""
    if saved.settings != dict(settings):
        return "made with other settings or section versions"
    if not extends(saved.coverage, store):
        return "the store no longer extends what was summarized (replaced, shrunk or rewritten)"
    folded = saved.session_ids
    if folded.size and np.any(folded[1:] <= folded[:-1]):
        return "the folded sessions are not sorted and distinct"
    at = np.searchsorted(ids, folded)
    found = at < ids.size
    found[found] = ids[at[found]] == folded[found]
    if not found.all():
        return "a summarized session is no longer in the store's records"
    if np.any(counts[at] != saved.session_records):
        return "a summarized session's records changed (count or content)"
    return None


def plan_incremental(
    connection: duckdb.DuckDBPyConnection,
    store: str | Path,
    settings: Mapping[str, Any],
    *,
    enabled: bool,
) -> IncrementalPlan:
    """Decide what to summarize; with new sessions, build the ``fresh`` schema."""
    index_and_count, ids = _current_sessions(connection)
    counts = index_and_count[:, 1:]
    coverage = store_coverage(store) if enabled else None
    plan: dict[str, Any] = {
        "session_ids": ids,
        "session_records": counts,
        "coverage": coverage,
        "settings": dict(settings),
    }
    if coverage is None:
        reason = "disabled" if not enabled else "the store keeps no summary file"
        return IncrementalPlan("off", reason, "main", None, n_new=ids.size, **plan)
    saved = read_summaries(store)
    why = "no verified summary file" if saved is None else None
    if saved is not None:
        why = _unusable(saved, settings, store, ids, counts)
    if saved is None or why is not None:
        log.info("report_sessions_rebuilt", store=str(store), reason=why)
        return IncrementalPlan("cold", str(why), "main", None, n_new=ids.size, **plan)
    is_new = np.ones(ids.size, dtype=bool)
    is_new[np.searchsorted(ids, saved.session_ids)] = False
    new_sessions = index_and_count[is_new, 0].astype(np.int64)
    if new_sessions.size:
        _fresh_tables(connection, new_sessions)
    schema = FRESH_SCHEMA if new_sessions.size else None
    return IncrementalPlan("incremental", "", schema, saved, n_new=int(new_sessions.size), **plan)


def _fresh_tables(connection: duckdb.DuckDBPyConnection, sessions: np.ndarray) -> None:
    """The analysis tables restricted to ``sessions``, in the ``fresh`` schema."""
    main = f"{ANALYSIS_DATABASE}.main"
    fresh = f"{ANALYSIS_DATABASE}.{FRESH_SCHEMA}"
    connection.execute(f"DROP SCHEMA IF EXISTS {fresh} CASCADE")
    connection.execute(f"CREATE SCHEMA {fresh}")
    connection.execute(
        f"CREATE TABLE {fresh}.new_session AS SELECT unnest(?::INTEGER[]) AS session",
        [sessions.tolist()],
    )
    for table in _COPIED_TABLES:
        connection.execute(
            f"""CREATE TABLE {fresh}.{table} AS SELECT * FROM {main}.{table}
                WHERE session IN (SELECT session FROM {fresh}.new_session)"""
        )
    for table in _SHARED_TABLES:
        connection.execute(f"CREATE VIEW {fresh}.{table} AS SELECT * FROM {main}.{table}")


def _summarize_in(
    connection: duckdb.DuckDBPyConnection, schema: str, section: IncrementalSection[Any, Any]
) -> Any:
    """``section.summarize`` over the tables of ``schema`` (the connection's schema restored)."""
    if schema == "main":
        return section.summarize(connection)
    connection.execute(f"USE {ANALYSIS_DATABASE}.{schema}")
    try:
        return section.summarize(connection)
    finally:
        connection.execute(f"USE {ANALYSIS_DATABASE}")


def _run_section(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
) -> tuple[Any, Any]:
    """(the section's result, its summary of every session)."""
    saved_section = plan.saved.sections.get(section.name) if plan.saved is not None else None
    saved = (
        section.from_payload(saved_section.meta, saved_section.arrays)
        if saved_section is not None
        else None
    )
    new = _summarize_in(connection, plan.schema, section) if plan.schema is not None else None
    if saved is None:
        merged = new
    elif new is None:
        merged = saved
    else:
        try:
            merged = section.merge(saved, new)
        except SummaryNotMergeable as error:
            log.info("report_section_recomputed", section=section.name, reason=str(error))
            merged = _summarize_in(connection, "main", section)
    return section.finish(merged), merged


class _ResultOf(Future[Any]):
    """The section's result from a future of (result, summary)."""

    def __init__(self, outcome: Future[tuple[Any, Any]]) -> None:
        super().__init__()
        self._outcome = outcome

    def result(self, timeout: float | None = None) -> Any:
        return self._outcome.result(timeout)[0]


def submit_incremental(
    runner: SectionRunner,
    plan: IncrementalPlan,
    sections: Sequence[IncrementalSection[Any, Any]],
) -> tuple[dict[str, Future[Any]], Callable[[str | Path], bool]]:
    """Start every section on ``runner``: each section's result as a future, and a function
    that saves the merged summaries beside the store (returns whether it wrote the file)."""
    outcomes = {section.name: runner.submit(_run_section, section, plan) for section in sections}

    def save(store: str | Path) -> bool:
        if plan.coverage is None:
            return False
        if plan.how == "incremental" and plan.n_new == 0:
            return False  # nothing new folded: the file already says this
        saved_sections = {}
        for section in sections:
            meta, arrays = section.to_payload(outcomes[section.name].result()[1])
            saved_sections[section.name] = SavedSection(section.version, meta, arrays)
        summaries = SessionSummaries(
            plan.coverage, plan.settings, plan.session_ids, plan.session_records, saved_sections
        )
        return write_summaries(store, summaries)

    return {name: _ResultOf(outcome) for name, outcome in outcomes.items()}, save


def section_settings(
    sections: Sequence[IncrementalSection[Any, Any]], **settings: Any
) -> dict[str, Any]:
    """The settings a saved file must match: the report's, DuckDB's version (its ``hash``
    orders the length plot's points) and each section's version."""
    return {
        **settings,
        "duckdb": duckdb.__version__,
        "sections": {section.name: section.version for section in sections},
    }
