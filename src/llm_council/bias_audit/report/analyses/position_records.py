"""The position section's records as arrays, in one order for every run (ADR 0088).

The full run (SQL, :mod:`.position`) and the incremental run (coded reviews,
:mod:`.position_summary`) both pass their reviews through :func:`slot_records`, so
:func:`~.position_fit.position_from_records` fits the same arrays in the same order and
both give the same numbers bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_council.stats.design.dense_ids import dense_codes


@dataclass(frozen=True)
class SlotRecords:
    """The scored records of the sessions of one size at a valid slot, in the fit's order.

    Rows are sorted by (session, model, reviewer, slot, self, score): every block of
    answers or sessions the within-answer fit sums over is one slice of rows
    (:mod:`llm_council.stats.design.design_products`), and the order is a function of the
    records alone, so the full and the incremental run add the same numbers in the same
    order. ``session`` is dense (0..S-1 in session id order); ``reviewer`` and ``model`` are
    the indices among every reviewer and model of the store's records (by name), as the
    analysis tables number them.
    """

    n_slots: int
    session: np.ndarray  # int64
    reviewer: np.ndarray  # int32
    model: np.ndarray  # int32
    slot: np.ndarray  # int32
    is_self: np.ndarray  # bool
    score: np.ndarray  # float64


def slot_records(
    n_slots: int,
    session: np.ndarray,
    reviewer: np.ndarray,
    model: np.ndarray,
    slot: np.ndarray,
    is_self: np.ndarray,
    score: np.ndarray,
) -> SlotRecords:
    """The rows in :class:`SlotRecords`' order, sessions renumbered densely.

    ``session`` may be any integer codes ordered as the session ids (the load's index, or
    codes into a sorted table of ids); renumbering makes the two runs' codes equal."""
    return take_slot_columns(n_slots, [session, reviewer, model, slot, is_self, score])


def take_slot_columns(n_slots: int, columns: list[np.ndarray]) -> SlotRecords:
    """:func:`slot_records` of ``[session, reviewer, model, slot, is_self, score]``; the
    list is emptied at once and each column dropped as soon as it is reordered, so arrays
    only the list held are freed along the way (at 10M records, every column held in both
    orders at once was most of the position section's peak, ADR 0092)."""
    session, reviewer, model, slot, is_self, score = columns
    columns.clear()
    _, dense_session = dense_codes(np.asarray(session, dtype=np.int64))
    del session
    # small codes as int32: a third of these arrays' memory, held through the fit
    table = [
        np.asarray(score, dtype=float),
        np.asarray(is_self, dtype=bool),
        np.asarray(slot).astype(np.int32, copy=False),
        np.asarray(reviewer).astype(np.int32, copy=False),
        np.asarray(model).astype(np.int32, copy=False),
        dense_session.astype(np.int64, copy=False),
    ]
    del score, is_self, slot, reviewer, model, dense_session
    order = _row_order(*table)
    for index in range(len(table)):
        table[index] = table[index][order]
    score_, is_self_, slot_, reviewer_, model_, session_ = table
    return SlotRecords(n_slots, session_, reviewer_, model_, slot_, is_self_, score_)


def _row_order(
    score: np.ndarray,
    is_self: np.ndarray,
    slot: np.ndarray,
    reviewer: np.ndarray,
    model: np.ndarray,
    session: np.ndarray,
) -> np.ndarray:
    """The rows' order by (session, model, reviewer, slot, self, score).

    One sort of an int64 key of (session, model, reviewer), which is a review's identity:
    a third of the time of sorting by all six columns. Where a reviewer scored one answer
    twice (equal keys) or the key would overflow, the six-column sort decides."""
    if session.size == 0:
        return np.zeros(0, dtype=np.intp)
    n_models, n_reviewers = int(model.max()) + 1, int(reviewer.max()) + 1
    if min(int(model.min()), int(reviewer.min())) >= 0 and (
        (int(session.max()) + 1) * n_models * n_reviewers < 2**62
    ):
        key = (session * n_models + model) * n_reviewers + reviewer
        order = np.argsort(key, kind="stable")
        if not _repeats(key, order):
            return order
    return np.lexsort((score, is_self, slot, reviewer, model, session))


def _repeats(key: np.ndarray, order: np.ndarray, block: int = 1 << 20) -> bool:
    """Does ``key`` hold a value twice (``order`` sorts it)? Checked a block at a time,
    never a whole sorted copy of ``key``."""
    for first in range(0, order.size - 1, block):
        ordered = key[order[first : first + block + 1]]
        if bool(np.any(ordered[1:] == ordered[:-1])):
            return True
    return False


def slot_mean_rows(records: SlotRecords) -> list[tuple[int, int, float, float | None]]:
    """(slot, sessions, mean, SD) of the per-session slot means: the descriptive table.

    Each (session, slot)'s mean score, then per slot the mean and the sample SD
    (``ddof = 1``; None below two sessions) of those means over the sessions, in session
    order (numpy, so both runs add in one order; the SQL it replaces added in thread order).
    """
    cell = records.session * records.n_slots + records.slot
    cell_ids, code = dense_codes(cell)
    means = np.bincount(code, weights=records.score) / np.bincount(code)
    cell_slot = cell_ids % records.n_slots
    rows: list[tuple[int, int, float, float | None]] = []
    for slot in np.unique(cell_slot):
        values = means[cell_slot == slot]
        sd = float(values.std(ddof=1)) if values.size >= 2 else None
        rows.append((int(slot), int(values.size), float(values.mean()), sd))
    return rows
