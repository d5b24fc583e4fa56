"""Are display-slot effects identified next to row and column effects? A rank check.

The same check as :func:`llm_council.stats.slots.position_tests.slot_effects_identified`
(one SVD rank routine for every estimator), taking integer codes instead of a design.

In the model ``score = mean + row + column + slot + error`` the slot effects can be
estimated only if the slot indicators add ``n_slots - 1`` dimensions to the span of the
row and column indicators. When every row saw the same order of the same columns, each
slot *is* a column and nothing separates them: no estimate and no test of the slots
means anything, and the caller must say "not identified" instead of computing one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.slots.position_tests import (
    slot_effects_identified as position_slot_effects_identified,
)


def _indicators(codes: np.ndarray) -> np.ndarray:
    _, dense = np.unique(codes, return_inverse=True)
    return (dense[:, None] == np.arange(int(dense.max()) + 1)[None, :]).astype(float)


def slot_effects_identified(
    row_codes: ArrayLike, column_codes: ArrayLike, slot_codes: ArrayLike
) -> bool:
    r"""True when the slot effects are estimable in the additive model with rows and columns.

    With R, C, S the indicator matrices of rows, columns and slots of the scored cells,
    the slot contrasts are estimable iff

    .. math:: \operatorname{rank}[R\ C\ S] - \operatorname{rank}[R\ C] = n_S - 1

    (Searle 1987, *Linear Models for Unbalanced Data*, sec. 5.4: a linear function of
    the parameters is estimable iff it lies in the row space of the design matrix).
    Fewer than two slots: False.

    Parameters
    ----------
    row_codes, column_codes, slot_codes : array_like of int, shape (n,)
        Each scored cell's row (reviewer), column (answer) and slot.

    Returns
    -------
    bool
        True when the slot contrasts are estimable.
    """
    rows = np.asarray(row_codes)
    columns = np.asarray(column_codes)
    slots = np.asarray(slot_codes)
    if rows.size == 0 or not rows.shape == columns.shape == slots.shape:
        return False
    slot_matrix = _indicators(slots)
    if slot_matrix.shape[1] < 2:
        return False
    base = np.hstack([_indicators(rows), _indicators(columns)])
    # the first slot is the baseline: the other n_S - 1 indicator columns must add full rank
    return position_slot_effects_identified(base, slot_matrix[:, 1:])
