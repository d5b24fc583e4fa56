"""Design rows of self-reviews in the additive model with display-slot effects.

A self-review is predicted from the other scores and compared with the score given
(:func:`~llm_council.stats.sessions.session_tests.self_preference_tests`). When reviewers favour a
display slot, the two-way prediction :math:`\\mu + \\alpha_r + \\beta_c` misses the slot the
self-review was shown at, so a favoured slot reads as self-preference. In the model with
slot effects (:func:`~llm_council.stats.slots.slot_adjusted_fit.with_slot_effects`) the
prediction is :math:`x_0^T \\hat b` with

.. math:: x_0 = (1, e_r, e_c, e_s)

(treatment coding: reviewer 0, answer 0 and the first present slot are the base), so the
prediction error :math:`y_0 - x_0^T\\hat b` has mean 0 whatever the slot effects
(Searle 1987, *Linear Models for Unbalanced Data*, ch. 6; Seber & Lee 2003, sec. 5.3 for
the prediction error). Pure function.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.additive_model import AdditiveFit


def slot_adjusted_cell_rows(
    two_way_fit: AdditiveFit,
    slot_fit: AdditiveFit,
    fit_slots: ArrayLike,
    cells: Sequence[tuple[int, int]],
    cell_slots: Sequence[int],
) -> np.ndarray | None:
    """The rows :math:`x_0` of ``cells`` (reviewer, answer: the fit's indexes) shown at
    ``cell_slots``, in ``slot_fit``'s columns, or ``None`` when a cell's slot is not among
    the slots of the fitted cells (``fit_slots``), whose effect is then not estimated, or
    ``slot_fit`` has no column per slot (the slots were not identified).

    ``slot_fit`` must be ``with_slot_effects(two_way_fit, fit_slots)``: its slot columns
    follow the two-way ones, one per present slot after the first, in ascending order.

    Parameters
    ----------
    two_way_fit : AdditiveFit
        The two-way fit.
    slot_fit : AdditiveFit
        ``with_slot_effects(two_way_fit, fit_slots)``, p columns.
    fit_slots : array_like of int, shape (n,)
        The slots of the fitted cells.
    cells : sequence of (int, int), length m
        (reviewer, answer) indexes of the cells to predict.
    cell_slots : sequence of int, length m
        The slot each was shown at.

    Returns
    -------
    ndarray, shape (m, p), or None
        The design rows.
    """
    present = np.unique(np.asarray(fit_slots, dtype=np.intp)).tolist()
    if slot_fit.design.shape[1] != two_way_fit.design.shape[1] + len(present) - 1:
        return None  # not the model with these slots (e.g. with_slot_effects kept the fit)
    column_of_slot = {slot: position for position, slot in enumerate(present)}
    first_slot_column = two_way_fit.design.shape[1] - 1
    rows = np.zeros((len(cells), slot_fit.design.shape[1]))
    for index, ((reviewer, candidate), slot) in enumerate(zip(cells, cell_slots, strict=True)):
        code = column_of_slot.get(int(slot))
        if code is None:
            return None
        rows[index, : two_way_fit.design.shape[1]] = two_way_fit.cell_vector(reviewer, candidate)
        if code > 0:
            rows[index, first_slot_column + code] = 1.0
    return rows
