"""Dense integer codes for group ids, in O(n) when the ids are small non-negative integers.

The estimators group observations by session, answer and review ids that are small
non-negative integers (or products of them). ``np.unique(ids, return_inverse=True)``
sorts them, O(n log n); a presence table of ``max + 1`` entries numbers them in the same
order in one pass. Other input falls back to ``np.unique``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: a presence table of up to this many entries per value (plus a constant) beats a sort
_TABLE_ENTRIES_PER_VALUE = 4


def dense_codes(ids: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct ids, code of each id)``, as ``np.unique(ids, return_inverse=True)``."""
    values = np.asarray(ids).reshape(-1)
    if values.size == 0 or values.dtype.kind not in "iu":
        uniques, inverse = np.unique(values, return_inverse=True)
        return uniques, np.asarray(inverse).reshape(-1)
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= _TABLE_ENTRIES_PER_VALUE * values.size + 1024:
        uniques, inverse = np.unique(values, return_inverse=True)
        return uniques, np.asarray(inverse).reshape(-1)
    present = np.zeros(high + 1, dtype=bool)
    present[values] = True
    code_of_id = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(values.dtype, copy=False), code_of_id[values]
