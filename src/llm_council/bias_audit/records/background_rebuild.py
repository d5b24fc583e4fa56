"""One background rebuild per store per process, in a daemon thread.

A summary beside a large store (reviewer profiles, summed adjustments; JSONL or
PostgreSQL) is rebuilt off the session while that session goes on without it. A second
session asking for the same store while the first rebuild runs starts nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_RUNNING: set[str] = set()
_GUARD = threading.Lock()


def rebuild_once_in_background(
    key: str,
    rebuild: Callable[[], object],
    on_error: Callable[[Exception], None],
    *,
    thread_name: str,
) -> bool:
    """Start ``rebuild`` in a daemon thread unless one for ``key`` is running; return
    whether one was started. A failure goes to ``on_error`` (the summary stays stale and
    the next lookup tries again); it never reaches the session."""
    with _GUARD:
        if key in _RUNNING:
            return False
        _RUNNING.add(key)

    def run() -> None:
        try:
            rebuild()
        except Exception as error:  # noqa: BLE001 - left stale, reported by the caller's log
            on_error(error)
        finally:
            with _GUARD:
                _RUNNING.discard(key)

    threading.Thread(target=run, name=thread_name, daemon=True).start()
    return True


def running() -> frozenset[str]:
    """The keys whose rebuild is running now (for tests and shutdown waits)."""
    with _GUARD:
        return frozenset(_RUNNING)
