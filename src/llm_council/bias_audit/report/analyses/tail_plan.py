"""The tail load's part of the incremental plan (ADR 0081): the gate, the sessions held
back after the next resume point, and the check that a resume point describes exactly the
sessions the plan folds."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np
import structlog

from llm_council.bias_audit.report.load.next_resume import NextResume
from llm_council.bias_audit.report.load.resume_point import ResumePoint
from llm_council.bias_audit.report.load.store_coverage import recent_session_ids

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
