"""One session's records as the anytime monitor's input: each reviewer's bias estimates.

The records of a session are laid out as its reviewer x candidate score table (the
reviews that count: ``check_kind`` null, a score given within its ``score_scale``), with
each reviewer's own answer and the answer it saw first (``position`` 0), and handed to
:func:`~llm_council.stats.monitor.monitor_session_effects.session_effects`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from llm_council.stats.monitor.monitor_session_effects import BIASES, effect_design, session_effects


class MonitoredRecord(Protocol):
    """The fields of a :class:`~.schema.ReviewRecord` the monitor reads (a PostgreSQL
    row gives them without building the whole record)."""

    @property
    def session_id(self) -> str: ...
    @property
    def reviewer_id(self) -> str: ...
    @property
    def model_id(self) -> str: ...
    @property
    def position(self) -> int: ...
    @property
    def score_value(self) -> float | None: ...
    @property
    def is_self_review(self) -> bool: ...
    @property
    def check_kind(self) -> str | None: ...
    @property
    def session_n_records(self) -> int | None: ...
    @property
    def score_scale(self) -> tuple[float, float]: ...


@dataclass(frozen=True)
class SessionEstimates:
    """Per reviewer of one session (``reviewers``, in order), ``estimates`` and their design
    variances ``unit_variances``, both ``(len(reviewers), len(BIASES))``; NaN where the
    session gives no estimate."""

    reviewers: tuple[str, ...]
    estimates: np.ndarray
    unit_variances: np.ndarray


def session_estimates(records: Sequence[MonitoredRecord]) -> SessionEstimates | None:
    """The session's estimates, or ``None`` when its scores do not identify the additive
    model (fewer than 2 reviewers or candidates, too few scored cells)."""
    counting = [record for record in records if record.check_kind is None]
    # a score outside its own scale is not a score (a store written elsewhere could hold
    # 1e300, whose square would overflow the monitor's sums)
    scored = [
        record
        for record in counting
        if record.score_value is not None
        and min(record.score_scale) <= record.score_value <= max(record.score_scale)
    ]
    reviewers = sorted({record.reviewer_id for record in scored})
    candidates = sorted({record.model_id for record in scored})
    if len(reviewers) < 2 or len(candidates) < 2:
        return None
    row = {name: index for index, name in enumerate(reviewers)}
    column = {name: index for index, name in enumerate(candidates)}
    shape = (len(reviewers), len(candidates))
    table = np.full(shape, np.nan)
    is_self = np.zeros(shape, dtype=bool)
    for record in scored:
        r, c = row[record.reviewer_id], column[record.model_id]
        table[r, c] = record.score_value
        is_self[r, c] = record.is_self_review
    first = np.full(len(reviewers), -1, dtype=np.intp)
    for record in counting:
        seen_by = row.get(record.reviewer_id)
        seen = column.get(record.model_id)
        if record.position == 0 and seen_by is not None and seen is not None:
            first[seen_by] = seen
    own = np.full(len(reviewers), -1, dtype=np.intp)
    self_rows, self_cols = np.nonzero(is_self & ~np.isnan(table))
    own[self_rows] = self_cols
    fit_mask = ~np.isnan(table) & ~is_self
    design = effect_design(fit_mask, own)
    if design is None:
        return None
    estimates, variances = session_effects(design, table, first)
    return SessionEstimates(tuple(reviewers), estimates, variances)


__all__ = ["BIASES", "MonitoredRecord", "SessionEstimates", "session_estimates"]
