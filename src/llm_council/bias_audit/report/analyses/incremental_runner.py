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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_section import (
    IncrementalSection,
    PendingFinish,
    SummaryNotMergeable,
    needs_inputs,
)
from llm_council.bias_audit.report.analyses.section_runner import SectionRunner
from llm_council.bias_audit.report.analyses.summary_keeper import SummaryKeeper
from llm_council.bias_audit.report.analyses.tail_plan import (
    checked_resume,
    held_ids,
    tail_load_allowed,
)
from llm_council.bias_audit.report.load.analysis_database import ANALYSIS_DATABASE
from llm_council.bias_audit.report.load.next_resume import next_resume_point
from llm_council.bias_audit.report.load.resume_point import ReadExtent, ResumePoint
from llm_council.bias_audit.report.load.session_summaries import (
    MAX_FILE_BYTES,
    SavedSection,
    SessionSummaries,
    read_summaries,
    summaries_path,
    write_summaries,
)
from llm_council.bias_audit.report.load.store_coverage import (
    extends,
    store_coverage,
)
from llm_council.bias_audit.report.load.tail_load import TailRefused

log = structlog.get_logger("llm_council.bias_audit")

#: the schema holding the sessions folded now (copies of, or views over, the analysis tables)
FRESH_SCHEMA = "fresh"
#: the schema holding the new sessions held back (not folded: still possibly being written)
HELD_SCHEMA = "held"
_COPIED_TABLES = ("records", "scored", "session_names")
_SHARED_TABLES = ("reviewers", "models")


@dataclass(frozen=True)
class IncrementalPlan:
    """Which sessions each incremental section summarizes now, and what it merges with.

    ``how``: ``"incremental"`` (a verified file; ``n_new`` sessions summarized),
    ``"cold"`` (every session summarized; ``reason`` says why nothing saved was used) or
    ``"off"`` (no summary file for this report: every session, nothing saved). Sessions
    held back are summarized every run and merged into the result, never saved.
    """

    how: str
    reason: str
    schema: str | None  # where the sessions to fold now are; None: none
    held_schema: str | None  # where the sessions held back are; None: none
    saved: SessionSummaries | None
    session_ids: np.ndarray  # the sessions the saved file will hold, sorted
    session_records: np.ndarray  # (sessions, 2) uint64: record count, content digest
    coverage: dict[str, Any] | None
    settings: dict[str, Any]
    n_new: int  # sessions folded now
    n_held: int = 0
    resume: ResumePoint | None = None  # saved with the file: where a tail load resumes


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
    extent: ReadExtent | None = None,
) -> IncrementalPlan:
    """Decide what to summarize, and build the schemas of the sessions to fold now and of
    the sessions held back (new, but in the store's last 64 KiB: :func:`recent_session_ids`).

    ``extent`` (ADR 0081; only when every section of the report is incremental): what the
    load read. The plan then also places the next resume point (the held sessions are
    those after it), and a tail load's sessions are merged with the summaries the tail
    load verified.
    """
    index_and_count, ids = _current_sessions(connection)
    coverage = store_coverage(store) if enabled else None
    if coverage is None:
        reason = "disabled" if not enabled else "the store keeps no summary file"
        return _plan("off", reason, None, index_and_count, ids, np.ones(ids.size, bool), None)
    if extent is not None and extent.base is not None:
        return tail_plan(connection, store, settings, extent, coverage)
    saved = read_summaries(store)
    why = "no verified summary file" if saved is None else None
    if saved is not None:
        why = _unusable(saved, settings, store, ids, index_and_count[:, 1:])
    is_new = np.ones(ids.size, dtype=bool)
    if saved is None or why is not None:
        # a first run is routine; a file that exists but cannot be used is worth a warning
        emit = log.info if saved is None and not summaries_path(store).exists() else log.warning
        emit("report_sessions_rebuilt", store=str(store), reason=why)
        saved, how = None, "cold"
    else:
        is_new[np.searchsorted(ids, saved.session_ids)] = False
        how = "incremental"
    following = next_resume_point(connection, store, extent) if extent is not None else None
    held = is_new & np.isin(ids, held_ids(store, following))
    plan = _plan(how, str(why or ""), saved, index_and_count, ids, is_new & ~held, held)
    plan = replace(plan, coverage=coverage, settings=dict(settings))
    plan = replace(plan, resume=checked_resume(following, plan.session_ids, plan.session_records))
    sessions = index_and_count[:, 0].astype(np.int64)
    if plan.schema == FRESH_SCHEMA:
        if saved is None:  # everything but the held sessions: views, not copies
            _session_tables(connection, FRESH_SCHEMA, sessions[held], keep=False)
        else:
            _session_tables(connection, FRESH_SCHEMA, sessions[is_new & ~held], keep=True)
    if plan.held_schema is not None:
        _session_tables(connection, HELD_SCHEMA, sessions[held], keep=True)
    return plan


def tail_plan(
    connection: duckdb.DuckDBPyConnection,
    store: str | Path,
    settings: Mapping[str, Any],
    extent: ReadExtent,
    coverage: dict[str, Any],
) -> IncrementalPlan:
    """The plan after a tail load: ``records`` holds only sessions the saved file has not
    folded (the tail load refused any other), so every one is new; the saved summaries
    were verified by the tail load (the prefix's digest, not the records)."""
    saved = extent.base_summaries
    if saved.settings != dict(settings):
        raise TailRefused("the summary file was made with other section versions")
    index_and_count, ids = _current_sessions(connection)
    following = next_resume_point(connection, store, extent)
    held = np.isin(ids, held_ids(store, following))
    fold = ~held
    all_ids = np.concatenate([saved.session_ids.astype(str), ids[fold]])
    all_records = np.concatenate([saved.session_records, index_and_count[fold, 1:]])
    order = np.argsort(all_ids, kind="stable")
    sessions = index_and_count[:, 0].astype(np.int64)
    plan = IncrementalPlan(
        how="incremental",
        reason="",
        schema=FRESH_SCHEMA if fold.any() else None,
        held_schema=HELD_SCHEMA if held.any() else None,
        saved=saved,
        session_ids=all_ids[order],
        session_records=all_records[order],
        coverage=coverage,
        settings=dict(settings),
        n_new=int(fold.sum()),
        n_held=int(held.sum()),
    )
    if plan.schema is not None:
        _session_tables(connection, FRESH_SCHEMA, sessions[fold], keep=True)
    if plan.held_schema is not None:
        _session_tables(connection, HELD_SCHEMA, sessions[held], keep=True)
    return replace(plan, resume=checked_resume(following, plan.session_ids, plan.session_records))


def _plan(
    how: str,
    reason: str,
    saved: SessionSummaries | None,
    index_and_count: np.ndarray,
    ids: np.ndarray,
    fold: np.ndarray,
    held: np.ndarray | None,
) -> IncrementalPlan:
    """The plan: fold the sessions marked ``fold`` (with the saved ones), hold ``held``."""
    folded = fold.copy()
    if saved is not None:
        folded[np.searchsorted(ids, saved.session_ids)] = True
    n_held = int(held.sum()) if held is not None else 0
    if how == "off" or (saved is None and n_held == 0):
        schema: str | None = "main"
    else:
        schema = FRESH_SCHEMA if fold.any() else None
    return IncrementalPlan(
        how=how,
        reason=reason,
        schema=schema,
        held_schema=HELD_SCHEMA if n_held else None,
        saved=saved,
        session_ids=ids[folded],
        session_records=index_and_count[folded, 1:],
        coverage=None,
        settings={},
        n_new=int(fold.sum()),
        n_held=n_held,
    )


def _session_tables(
    connection: duckdb.DuckDBPyConnection, schema: str, sessions: np.ndarray, *, keep: bool
) -> None:
    """The analysis tables in ``schema``: copies of the rows of ``sessions`` (``keep``), or
    views of every other row."""
    main = f"{ANALYSIS_DATABASE}.main"
    target = f"{ANALYSIS_DATABASE}.{schema}"
    connection.execute(f"DROP SCHEMA IF EXISTS {target} CASCADE")
    connection.execute(f"CREATE SCHEMA {target}")
    connection.execute(
        f"CREATE TABLE {target}.chosen_session AS SELECT unnest(?::INTEGER[]) AS session",
        [sessions.tolist()],
    )
    chosen = f"session {'IN' if keep else 'NOT IN'} (SELECT session FROM {target}.chosen_session)"
    kind = "TABLE" if keep else "VIEW"
    for table in _COPIED_TABLES:
        connection.execute(
            f"CREATE {kind} {target}.{table} AS SELECT * FROM {main}.{table} WHERE {chosen}"
        )
    for table in _SHARED_TABLES:
        connection.execute(f"CREATE VIEW {target}.{table} AS SELECT * FROM {main}.{table}")
    if _has_table(connection, main, "check_records"):
        # keyed by session id, not by the load's index; without its own copy a query in
        # ``schema`` would read main's, every session's check reviews (ADR 0085)
        connection.execute(
            f"""CREATE {kind} {target}.check_records AS SELECT * FROM {main}.check_records
                WHERE session_id IN (SELECT session_id FROM {target}.session_names)"""
        )


def _has_table(connection: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    """Does ``schema`` (``database.schema``) hold ``table``?"""
    database, name = schema.split(".")
    row = connection.execute(
        """SELECT count(*) FROM duckdb_tables()
           WHERE database_name = ? AND schema_name = ? AND table_name = ?""",
        [database, name, table],
    ).fetchone()
    return bool(row and row[0])


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


def _merged(section: IncrementalSection[Any, Any], first: Any, second: Any) -> Any:
    """The merge of two summaries either of which may be missing (``None``)."""
    if first is None or second is None:
        return second if first is None else first
    return section.merge(first, second)


def _finisher(section: IncrementalSection[Any, Any]) -> Callable[[Any], Any]:
    """How the section's merged summary becomes its result on the worker: ``finish``, or,
    for a section that needs other sections' results, a :class:`PendingFinish` the report
    calls with them."""
    if needs_inputs(section):
        return lambda summary: PendingFinish(section, summary)  # type: ignore[arg-type]
    return section.finish


def _run_section(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
) -> tuple[Any, Any]:
    """(the section's result, its summary of the sessions to save); a dependent section's
    result is a :class:`PendingFinish` (:func:`_finisher`)."""
    finish = _finisher(section)
    saved_section = plan.saved.sections.get(section.name) if plan.saved is not None else None
    try:
        saved = (
            section.from_payload(saved_section.meta, saved_section.arrays)
            if saved_section is not None
            else None
        )
    except ValueError as error:  # sealed, yet not this section's payload: never trusted
        log.warning("report_section_recomputed", section=section.name, reason=str(error))
        return finish(_summarize_in(connection, "main", section)), None
    new = _summarize_in(connection, plan.schema, section) if plan.schema is not None else None
    held = (
        _summarize_in(connection, plan.held_schema, section)
        if plan.held_schema is not None
        else None
    )
    try:
        folded = _merged(section, saved, new)
        every = _merged(section, folded, held)
    except SummaryNotMergeable as error:
        log.info("report_section_recomputed", section=section.name, reason=str(error))
        # the saved summary is dropped: this run saves none for the section (rebuilt next run)
        return finish(_summarize_in(connection, "main", section)), None
    return finish(every), folded


def _run_and_keep(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
    keeper: SummaryKeeper,
) -> Any:
    """The section's result; its folded summary goes to ``keeper`` (kept for the file, or
    dropped at once when there will be no file or the file would be too large)."""
    result, folded = _run_section(connection, section, plan)
    keeper.keep(section, folded)
    return result


def submit_incremental(
    runner: SectionRunner,
    plan: IncrementalPlan,
    sections: Sequence[IncrementalSection[Any, Any]],
) -> tuple[dict[str, Future[Any]], Callable[..., bool]]:
    """Start every section on ``runner``: each section's result as a future, and a function
    that saves the merged summaries beside the store (returns whether it wrote the file)."""
    nothing_new = plan.how == "incremental" and plan.n_new == 0
    keeper = SummaryKeeper(MAX_FILE_BYTES, saving=plan.coverage is not None and not nothing_new)
    results = {
        section.name: runner.submit(_run_and_keep, section, plan, keeper) for section in sections
    }

    def save(store: str | Path, extra: Mapping[str, SavedSection] | None = None) -> bool:
        """``extra``: entries saved beside the sections (the monitor's state, ADR 0087)."""
        if not keeper.saving:
            return False  # no file for this store, or nothing new folded: the file says this
        saved_sections = dict(extra or {})
        for section in sections:
            results[section.name].result()  # every section finished (or raised)
            payload = keeper.kept(section.name)
            if payload is None:
                return False  # a section could not merge, nothing folded yet, or too large
            saved_sections[section.name] = SavedSection(section.version, *payload)
        summaries = SessionSummaries(
            plan.coverage,
            plan.settings,
            plan.session_ids,
            plan.session_records,
            saved_sections,
            plan.resume,
        )
        return write_summaries(store, summaries)

    return results, save


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


__all__ = ["IncrementalPlan", "plan_incremental", "submit_incremental", "tail_load_allowed"]
