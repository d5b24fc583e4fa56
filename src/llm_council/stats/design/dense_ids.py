"""Dense integer codes for the ids the analyses group by, without a sort."""

from __future__ import annotations

import numpy as np

# dense_codes counts with a table of max + 1 entries; beyond this many per value, sort instead
_DENSE_TABLE_PER_VALUE = 4


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for integer ids, in O(n) without a sort.

    The ids the analyses group by (session, reviewer and model indices, and products of
    them) are small non-negative integers, so a presence table numbers them in order: the
    same (sorted ids, dense codes) as ``np.unique``, which sorts (O(n log n), a second per
    million records over a report's dozen calls). Other input falls back to ``np.unique``.

    Parameters
    ----------
    values : ndarray, shape (n,)
        Ids to number.

    Returns
    -------
    unique : ndarray, shape (u,)
        The distinct ids, ascending.
    codes : ndarray of int, shape (n,)
        Each value's position in ``unique``.
    """
    ids = np.asarray(values)
    if ids.size == 0 or ids.dtype.kind not in "iu":
        uniques, inverse = np.unique(ids, return_inverse=True)
        return uniques, inverse.reshape(-1)
    flat = ids.reshape(-1)
    low, high = int(flat.min()), int(flat.max())
    if low < 0 or high >= _DENSE_TABLE_PER_VALUE * flat.size + 1024:
        uniques, inverse = np.unique(flat, return_inverse=True)
        return uniques, inverse
    present = np.zeros(high + 1, dtype=bool)
    present[flat] = True
    code_of_id = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(ids.dtype, copy=False), code_of_id[flat]
