"""The JSONL store's writer lock, taken with one ``flock`` call instead of through filelock.

Writers and readers of a store exclude each other with an exclusive ``flock`` on
``<store>.lock``. :class:`filelock.FileLock` takes exactly that lock on Unix (its
``UnixFileLock`` flocks the lock file, which stays in place on release), but its
bookkeeping (fork tracking, singletons, path normalisation, soft-lock probes) cost about
0.1 ms per append, as much as serialising a session's records. :func:`store_write_lock`
opens the same file and flocks it directly, so it excludes and is excluded by every
``FileLock`` on the same path, in this process or another (``flock`` locks belong to open
file descriptions, so two opens in one process exclude each other too). Where ``flock`` is
unavailable (no ``fcntl``, or a file system without it), it falls back to the
``FileLock`` itself, which then uses its soft lock.

The lock file is named after the *resolved* store (:func:`store_lock_file`), so writers
reaching one store through a symlink and through its target take the same lock.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from filelock import Timeout

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: a file system without flock answers with one of these
_NO_FLOCK = {errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOLCK}
#: how long a waiting writer sleeps between attempts (filelock's default poll interval)
POLL_INTERVAL_S = 0.05


def store_lock_file(store: str | Path) -> str:
    """``<resolved store>.lock``: one lock per store file, whatever path reaches it."""
    return os.path.realpath(store) + ".lock"


def _no_fallback() -> AbstractContextManager[object]:
    return nullcontext()


def wait_for_writers(store: str | Path, timeout_s: float = 10.0) -> bool:
    """Wait for a writer inside its locked section to leave (take and release the lock);
    ``False`` when no lock file exists or it cannot be taken (read-only, stuck writer)."""
    lock_file = store_lock_file(store)
    if not os.path.exists(lock_file):
        return False
    try:
        with store_write_lock(lock_file, timeout_s, _no_fallback):
            return True
    except Exception:  # noqa: BLE001 - a lock we cannot take: the caller rebuilds
        return False


@contextmanager
def store_write_lock(
    lock_file: str, timeout_s: float, fallback: Callable[[], AbstractContextManager[object]]
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created when missing) for the block.

    Waits up to ``timeout_s`` seconds, then raises :class:`filelock.Timeout`, as
    ``FileLock(lock_file, timeout=timeout_s)`` does; ``fallback()`` is that FileLock, used
    when ``flock`` is unavailable. Closing the descriptor releases the lock, also when the
    process dies.
    """
    if fcntl is None:  # pragma: no cover - Windows
        with fallback():
            yield
        return
    descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Timeout(lock_file) from None
                time.sleep(POLL_INTERVAL_S)
            except OSError as error:
                if error.errno not in _NO_FLOCK:
                    raise
                os.close(descriptor)
                descriptor = -1
                break
        if descriptor == -1:
            with fallback():
                yield
            return
        yield
    finally:
        if descriptor != -1:
            os.close(descriptor)
