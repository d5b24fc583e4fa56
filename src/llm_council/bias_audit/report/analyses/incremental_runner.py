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

After a tail load (ADR 0081) ``records`` holds only the sessions the file has not
folded, and the plan is :func:`~.tail_plan.tail_plan`'s: a section that cannot merge its
saved summary then raises :class:`~.tail_load.TailRefused` rather than being recomputed
from the tables (which would cover the tail alone); the report reads every record again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_plan import (
    FRESH_SCHEMA,
    HELD_SCHEMA,
    IncrementalPlan,
    current_sessions,
    session_tables,
)
from llm_council.bias_audit.report.analyses.incremental_section import (
    IncrementalSection,
    PendingFinish,
    SummaryNotMergeable,
    needs_inputs,
)
from llm_council.bias_audit.report.analyses.section_runner import SectionRunner
from llm_council.bias_audit.report.analyses.session_chunks import summarize_in_blocks
from llm_council.bias_audit.report.analyses.summary_keeper import SummaryKeeper
from llm_council.bias_audit.report.analyses.tail_plan import (
    checked_resume,
    held_ids,
    tail_load_allowed,
    tail_plan,
)
from llm_council.bias_audit.report.load.analysis_database import ANALYSIS_DATABASE
from llm_council.bias_audit.report.load.next_resume import next_resume_point
from llm_council.bias_audit.report.load.resume_point import ReadExtent
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
    sections: Sequence[IncrementalSection[Any, Any]] = (),
    cold_reason: str | None = None,
) -> IncrementalPlan:
    """Decide what to summarize, and build the schemas of the sessions to fold now and of
    the sessions held back (new, but in the store's last 64 KiB: :func:`recent_session_ids`).

    ``extent`` (ADR 0081; only when every section of the report is incremental): what the
    load read. The plan then also places the next resume point (the held sessions are
    those after it), and a tail load's sessions are merged with the summaries the tail
    load verified; every section of ``sections`` must be able to merge with them, else
    :class:`TailRefused` (:func:`~.tail_plan.tail_plan`: the report then reads every record).
    ``cold_reason``: do not use the saved file (why: logged), summarize every session.
    """
    index_and_count, ids = current_sessions(connection)
    coverage = store_coverage(store) if enabled else None
    if coverage is None:
        reason = "disabled" if not enabled else "the store keeps no summary file"
        return _plan("off", reason, None, index_and_count, ids, np.ones(ids.size, bool), None)
    if extent is not None and extent.base is not None:
        return tail_plan(connection, store, settings, extent, coverage, sections)
    saved = read_summaries(store) if cold_reason is None else None
    why = cold_reason or ("no verified summary file" if saved is None else None)
    if saved is not None:
        why = _unusable(saved, settings, store, ids, index_and_count[:, 1:])
    is_new = np.ones(ids.size, dtype=bool)
    if saved is None or why is not None:
        # a first run is routine; a file that exists but cannot be used is worth a warning
        routine = cold_reason is None and not summaries_path(store).exists()
        emit = log.info if routine else log.warning
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
            session_tables(connection, FRESH_SCHEMA, sessions[held], keep=False)
        else:
            session_tables(connection, FRESH_SCHEMA, sessions[is_new & ~held], keep=True)
    if plan.held_schema is not None:
        session_tables(connection, HELD_SCHEMA, sessions[held], keep=True)
    return plan


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


def _summarize_folded(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
) -> Any:
    """``section``'s summary of the sessions the plan folds now (``None``: none), a block
    at a time on a large store (ADR 0092)."""
    if plan.schema is None:
        return None
    if plan.blocks:
        merged, whole = summarize_in_blocks(
            section, plan.blocks, lambda block: _summarize_in(connection, block, section)
        )
        if whole:
            return merged
    return _summarize_in(connection, plan.schema, section)


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


def _saved_summary(section: IncrementalSection[Any, Any], plan: IncrementalPlan) -> Any:
    """The section's saved summary (``None``: none saved); ``ValueError`` when its payload
    does not read. After a tail load, the one the plan read back (taken from the plan, so
    it is freed with the section's result)."""
    if plan.tail:
        if plan.read_back is None or section.name not in plan.read_back:
            raise TailRefused(f"section {section.name!r} was not read back by the tail plan")
        return plan.read_back.pop(section.name)
    saved_section = plan.saved.sections.get(section.name) if plan.saved is not None else None
    if saved_section is None:
        return None
    if saved_section.version != section.version:  # the settings say otherwise: never trusted
        raise ValueError(f"saved as version {saved_section.version}, this is {section.version}")
    return section.from_payload(saved_section.meta, saved_section.arrays)


def _recomputed(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
    reason: str,
    *,
    routine: bool = False,
) -> tuple[Any, None]:
    """The section from every session of the tables, nothing saved for it (rebuilt next
    run). After a tail load the tables hold the new sessions alone: :class:`TailRefused`
    instead, and the report reads every record (never a section over the tail alone)."""
    if plan.tail:
        raise TailRefused(f"section {section.name!r} cannot merge the tail: {reason}")
    emit = log.info if routine else log.warning  # a merge refused by design is routine
    emit("report_section_recomputed", section=section.name, reason=reason)
    return _finisher(section)(_summarize_in(connection, "main", section)), None


def _run_section(
    connection: duckdb.DuckDBPyConnection,
    section: IncrementalSection[Any, Any],
    plan: IncrementalPlan,
) -> tuple[Any, Any]:
    """(the section's result, its summary of the sessions to save); a dependent section's
    result is a :class:`PendingFinish` (:func:`_finisher`)."""
    try:
        saved = _saved_summary(section, plan)
    except ValueError as error:  # sealed, yet not this section's payload: never trusted
        return _recomputed(connection, section, plan, str(error))
    new = _summarize_folded(connection, section, plan)
    held = (
        _summarize_in(connection, plan.held_schema, section)
        if plan.held_schema is not None
        else None
    )
    try:
        folded = _merged(section, saved, new)
        every = _merged(section, folded, held)
    except SummaryNotMergeable as error:
        return _recomputed(connection, section, plan, str(error), routine=True)
    return _finisher(section)(every), folded


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
        assert plan.coverage is not None  # saving only with a coverage
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
