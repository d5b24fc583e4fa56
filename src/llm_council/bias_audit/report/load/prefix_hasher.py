"""A JSONL store's prefix SHA-256, fed on a background thread while the report reads on (ADR 0094).

ADR 0081 trusts a saved prefix by hashing every byte of it on every tail run, and places
the next resume point by extending that hash to the new offset; a cold run hashes the
whole store for the same point. At 1M records that is 0.3 s, at 10M about 3 s, spent
while nothing else ran. :class:`PrefixHasher` starts the hash when the load has read what
it needs and hands the state over when the resume point is placed, in the plan. Between
the two the tail is parsed into records and the analysis tables are built, so the hash
costs (almost) no wall time on a machine with a free core.

What is hashed, and what is trusted, is exactly ADR 0081's: the digest of bytes
``[0, start)`` must equal the saved one (a tail load), or there is nothing to check (a
cold load, ``start`` = 0). The thread then goes on to ``stop`` (the end read, minus
:data:`SYNC_MARGIN_BYTES`, below every offset the resume placement can choose) and keeps
the state at ``start`` too, so any offset gets its digest: past ``stop`` by extending the
state at ``stop``, otherwise from the state at ``start``. Nothing that depends on the
prefix leaves the report before :meth:`PrefixHasher.state_at` or :meth:`confirm` has
returned: a changed prefix raises :class:`TailRefused` there, before any file is written,
and the report is computed again from every record.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_council.bias_audit.report.load.resume_point import TailRefused
from llm_council.bias_audit.report.load.source_identity import extend_sha256

#: how far below the end read the background hash stops. The resume offset is placed at
#: most 8 moves of at most 4 MiB before a 4 MiB window (next_resume: 36 MiB); an offset
#: below ``stop`` is still right (extended from ``start``), only slower
SYNC_MARGIN_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class _Hashed:
    at_start: Any  # SHA-256 state over [0, start)
    ahead: Any  # SHA-256 state over [0, stop)
    stop: int


class PrefixHasher:
    """SHA-256 of ``[0, stop)`` of the open file ``descriptor`` (which it owns and closes),
    checked at ``start`` against ``expected`` (``"sha256:<hex>"``; ``None``: no check)."""

    def __init__(self, descriptor: int, *, start: int, end: int, expected: str | None) -> None:
        self.start = start
        self.checks = expected is not None
        stop = max(start, end - SYNC_MARGIN_BYTES)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefix-sha256")
        try:
            self._hashed: Future[_Hashed | str] = pool.submit(
                _hash, descriptor, start, stop, expected
            )
        except BaseException:
            os.close(descriptor)
            raise
        finally:
            pool.shutdown(wait=False)  # the one job runs to its end; the thread then exits

    @classmethod
    def of_path(cls, path: Path, device: int, inode: int, *, end: int) -> PrefixHasher | None:
        """A hasher of the file at ``path`` from byte 0 (a cold load); ``None`` when the
        file there is no longer (``device``, ``inode``): no resume point can be placed."""
        try:
            resolved = os.path.realpath(path)
            descriptor = os.open(resolved, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        status = os.fstat(descriptor)
        if (status.st_dev, status.st_ino) != (device, inode):
            os.close(descriptor)
            return None
        return cls(descriptor, start=0, end=end, expected=None)

    def _result(self) -> _Hashed:
        try:
            hashed = self._hashed.result()
        except OSError as error:
            if not self.checks:
                raise  # a cold load's hash: no resume point, the report is unaffected
            raise TailRefused(f"cannot read the prefix: {error}") from None
        if isinstance(hashed, str):
            raise TailRefused(hashed)
        return hashed

    def confirm(self) -> None:
        """Wait for the check (at once when there is none); :class:`TailRefused` when the
        prefix is not the one saved or cannot be read."""
        if self.checks:
            self._result()

    def state_at(self, descriptor: int, offset: int) -> Any:
        """The SHA-256 state over ``[0, offset)`` of the file (``offset`` >= ``start``; read
        from ``descriptor``, the same file). With a check: :class:`TailRefused` as
        :meth:`confirm`; without: ``OSError`` when the file could not be read."""
        if offset < self.start:
            raise ValueError(f"offset {offset} is before the hashed start {self.start}")
        hashed = self._result()
        base, at = (
            (hashed.ahead, hashed.stop)
            if offset >= hashed.stop
            else (
                hashed.at_start,
                self.start,
            )
        )
        state = base.copy()
        extend_sha256(state, descriptor, at, offset)
        return state


def _hash(descriptor: int, start: int, stop: int, expected: str | None) -> _Hashed | str:
    """The states at ``start`` and ``stop``, or why the prefix is refused (a string)."""
    try:
        digest = hashlib.sha256()
        extend_sha256(digest, descriptor, 0, start)
        if expected is not None and "sha256:" + digest.hexdigest() != expected:
            return "the prefix's bytes changed (SHA-256 differs)"
        at_start = digest.copy()
        extend_sha256(digest, descriptor, start, stop)
        return _Hashed(at_start, digest, stop)
    finally:
        os.close(descriptor)


__all__ = ["SYNC_MARGIN_BYTES", "PrefixHasher"]
