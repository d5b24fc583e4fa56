"""The tail load's part of the incremental plan (ADR 0081): the gate, the plan after a tail
load, the sessions held back after the next resume point, and the check that a resume
point describes exactly the sessions the plan folds.

After a tail load the tables hold only the new sessions, so every saved section must merge
with them: a section whose saved summary is missing, of another version or unreadable
cannot be recomputed from the tables (it would cover the tail alone). The plan checks every
section's summary before any runs and raises :class:`TailRefused`; ``build_report`` then
reads every record instead (ADR 0081, amendment).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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
from llm_council.bias_audit.report.analyses.incremental_section import IncrementalSection
from llm_council.bias_audit.report.load.next_resume import NextResume, next_resume_point
from llm_council.bias_audit.report.load.resume_point import ReadExtent, ResumePoint
from llm_council.bias_audit.report.load.session_summaries import SessionSummaries
from llm_council.bias_audit.report.load.store_coverage import recent_session_ids
from llm_council.bias_audit.report.load.tail_load import TailRefused

log = structlog.get_logger("llm_council.bias_audit")


def tail_load_allowed(computed_from_every_record: Collection[str], *, enabled: bool) -> bool:
    """May the report read only the store's tail (ADR 0081)? Only when the summary file is
    in use (``enabled``: summaries on, DuckDB, no ``--since``/``--until``) and no part of
    the report is computed from every record (``computed_from_every_record`` is empty):
    a tail load's ``records`` holds only the sessions not yet folded."""
    return enabled and not computed_from_every_record


def held_ids(store: str | Path, following: NextResume | None) -> np.ndarray:
    """The sessions held back: those after the next resume point, or (without one) those
    with a line in the store's last 64 KiB."""
    if following is not None:
        return following.held_session_ids
    return np.asarray(sorted(recent_session_ids(store)), dtype=str)


def checked_resume(
    following: NextResume | None, session_ids: np.ndarray, session_records: np.ndarray
) -> ResumePoint | None:
    """The next resume point when its prefix holds exactly the sessions and records the
    plan folds (else none is saved: the next run loads every record)."""
    if following is None:
        return None
    counts = following.point.counts
    n_records = int(session_records[:, 0].sum()) if session_ids.size else 0
    if (counts.n_sessions, counts.n_records) != (session_ids.size, n_records):
        log.warning("report_resume_point_dropped", reason="the prefix's counts differ")
        return None
    return following.point


def read_back_sections(
    saved: SessionSummaries,
    settings: Mapping[str, Any],
    sections: Sequence[IncrementalSection[Any, Any]],
) -> dict[str, Any]:
    """Every section's saved summary, read (``from_payload``) by section name; raises
    :class:`TailRefused` naming the first section that cannot be merged with a tail: the
    settings or section list differ, or its summary is missing, of another version or
    malformed (its ``ValueError`` is quoted)."""
    if saved.settings != dict(settings):
        raise TailRefused("the summary file was made with other settings or section versions")
    read_back = {}
    for section in sections:
        entry = saved.sections.get(section.name)
        if entry is None:
            raise TailRefused(f"the summary file holds no summary of section {section.name!r}")
        if entry.version != section.version:
            raise TailRefused(
                f"section {section.name!r}: saved as version {entry.version}, "
                f"this is version {section.version}"
            )
        try:
            read_back[section.name] = section.from_payload(entry.meta, entry.arrays)
        except ValueError as error:  # sealed, yet not this section's payload: never trusted
            raise TailRefused(f"section {section.name!r}: {error}") from None
    return read_back


def tail_plan(
    connection: duckdb.DuckDBPyConnection,
    store: str | Path,
    settings: Mapping[str, Any],
    extent: ReadExtent,
    coverage: dict[str, Any],
    sections: Sequence[IncrementalSection[Any, Any]],
) -> IncrementalPlan:
    """The plan after a tail load: ``records`` holds only sessions the saved file has not
    folded (the tail load refused any other), so every one is new; the saved summaries
    were verified by the tail load (the prefix's digest, not the records), and every
    section's is read here (:func:`read_back_sections`; :class:`TailRefused` before any
    section runs when one cannot be merged)."""
    saved = extent.base_summaries
    read_back = read_back_sections(saved, settings, sections)
    index_and_count, ids = current_sessions(connection)
    following = next_resume_point(connection, store, extent)
    held = np.isin(ids, held_ids(store, following))
    fold = ~held
    all_ids = np.concatenate([saved.session_ids.astype(str), ids[fold]])
    all_records = np.concatenate([saved.session_records, index_and_count[fold, 1:]])
    order = np.argsort(all_ids, kind="stable")
    sessions_index = index_and_count[:, 0].astype(np.int64)
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
        tail=True,
        read_back=read_back,
    )
    if plan.schema is not None:
        session_tables(connection, FRESH_SCHEMA, sessions_index[fold], keep=True)
    if plan.held_schema is not None:
        session_tables(connection, HELD_SCHEMA, sessions_index[held], keep=True)
    return replace(plan, resume=checked_resume(following, plan.session_ids, plan.session_records))


__all__ = ["checked_resume", "held_ids", "read_back_sections", "tail_load_allowed", "tail_plan"]
