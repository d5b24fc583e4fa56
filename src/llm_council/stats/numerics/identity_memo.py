"""A small memo of results keyed by the identity of the objects they were computed from.

The session audit asks for the same derived arrays of one fit several times (the slot
fit three times, each fit's per-reviewer residual variances about nine times, ADR 0075):
once for the history path and again for ADR 0071's session-only path. Fits hold numpy
arrays and are not hashable, and hashing their bytes would cost what it saves, so this
memo keys on ``id()`` and keeps a strong reference to each key object: an object in the
memo cannot be collected, so its id cannot be reused by another object while the entry
lives. It holds the last ``size`` entries only. Values must not be modified by callers
(the memo's users return read-only arrays or frozen objects).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class IdentityMemo(Generic[Value]):
    """The last ``size`` results of ``compute``, keyed by the identity of ``objects`` and a
    hashable ``extra`` key (e.g. an array's bytes); thread-safe."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an identity memo needs size >= 1, got {size}")
        self._size = size
        self._entries: dict[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], Value]]
        self._entries = {}
        self._lock = threading.Lock()

    def get(
        self, objects: tuple[object, ...], extra: Hashable, compute: Callable[[], Value]
    ) -> Value:
        """The memoized value for ``objects`` (by identity) and ``extra``, computed once."""
        key = (tuple(map(id, objects)), extra)
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and all(
            kept is given for kept, given in zip(entry[0], objects, strict=True)
        ):
            return entry[1]
        value = compute()
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (objects, value)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return value

    def clear(self) -> None:
        """Forget every entry (and release the objects kept)."""
        with self._lock:
            self._entries.clear()
