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
    model (fewer than 2 reviewers or candidates, too few scored cells).

    One pass over the records into dicts (the last record of a cell wins, as the table's
    assignment did), then one fancy-indexed assignment: a 9-member session has 81 records,
    and per-record numpy item assignments were a third of the estimates' cost (ADR 0053,
    fourth amendment).
    """
    scored: dict[tuple[str, str], tuple[float, bool]] = {}
    seen_first: list[tuple[str, str]] = []  # (reviewer, answer) at position 0, counting
    for record in records:
        if record.check_kind is not None:
            continue
        if record.position == 0:
            seen_first.append((record.reviewer_id, record.model_id))
        value = record.score_value
        # a score outside its own scale is not a score (a store written elsewhere could
        # hold 1e300, whose square would overflow the monitor's sums)
        if value is None:
            continue
        low, high = record.score_scale
        # min() and max() of the pair, inline (two builtin calls a record were a sixth of
        # the estimates' cost at 9 members); the same results, NaN included
        if (high if high < low else low) <= value <= (high if high > low else low):
            cell = (record.reviewer_id, record.model_id)
            scored[cell] = (value, record.is_self_review)
    reviewers = sorted({reviewer for reviewer, _ in scored})
    candidates = sorted({candidate for _, candidate in scored})
    if len(reviewers) < 2 or len(candidates) < 2:
        return None
    row = {name: index for index, name in enumerate(reviewers)}
    column = {name: index for index, name in enumerate(candidates)}
    shape = (len(reviewers), len(candidates))
    rows = [row[reviewer] for reviewer, _ in scored]
    columns = [column[candidate] for _, candidate in scored]
    table = np.full(shape, np.nan)
    table[rows, columns] = [value for value, _ in scored.values()]
    is_self = np.zeros(shape, dtype=bool)
    is_self[rows, columns] = [own for _, own in scored.values()]
    first = np.full(len(reviewers), -1, dtype=np.intp)
    for reviewer, candidate in seen_first:  # in order: the last scored pair wins
        if reviewer in row and candidate in column:
            first[row[reviewer]] = column[candidate]
    # each reviewer's own answer: the last self-review cell in row-major order (the
    # largest column), as ``own[np.nonzero(is_self)[0]] = ...`` chose it
    own_columns = [-1] * len(reviewers)
    for r, c, (_, is_own) in zip(rows, columns, scored.values(), strict=True):
        if is_own and c > own_columns[r]:
            own_columns[r] = c
    own = np.array(own_columns, dtype=np.intp)
    fit_mask = ~np.isnan(table) & ~is_self
    design = effect_design(fit_mask, own)
    if design is None:
        return None
    estimates, variances = session_effects(design, table, first)
    return SessionEstimates(tuple(reviewers), estimates, variances)


__all__ = ["BIASES", "MonitoredRecord", "SessionEstimates", "session_estimates"]
