"""The session ids already in a JSONL record store, so an outside caller cannot reuse one.

A reused ``session_id`` made every session sharing it incomplete to the report (its
record count no longer matches ``session_n_records``), so they were all dropped with
"no usable bias-audit records" while each call had reported success (issue 37 A.7).

Cost: a set per store path and process, built by one scan of the store and then updated
by reading only the bytes appended since (by this process or another); a store that
shrank or was replaced (another inode) is scanned again. The scan reads the ``session_id``
field with a byte pattern, not a JSON parse: 0.26 CPU seconds for a 100 MB store (about
11,000 four-member sessions), a tail of one session under 30 ms, 8 MB read at a time
(``benchmarks/session_id_scan.py``). Two processes writing the same new id at the same
moment both pass; the id check is a guard against a caller's mistake, not a lock.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

#: ``"session_id":"..."`` as our writer (pydantic's compact JSON) and the reference
#: importer write it; a space after the colon is accepted for hand-written stores
_SESSION_ID = re.compile(rb'"session_id":\s*"([^"\\]*(?:\\.[^"\\]*)*)"')
_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass
class _SeenIds:
    """What one scan of a store found, and how far it read."""

    inode: int
    offset: int = 0
    ids: set[str] = field(default_factory=set)


_seen: dict[Path, _SeenIds] = {}
_lock = threading.Lock()


def _decoded(raw: bytes) -> str:
    """A JSON string's body as text (escapes only decoded when there are any)."""
    if b"\\" not in raw:
        return raw.decode("utf-8", errors="replace")
    try:
        return str(json.loads(b'"' + raw + b'"'))
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _scan(path: Path, seen: _SeenIds, end: int) -> None:
    """Add the ids of the complete lines between ``seen.offset`` and ``end``."""
    with path.open("rb") as handle:
        handle.seek(seen.offset)
        carry = b""
        while seen.offset + len(carry) < end:
            chunk = handle.read(min(_CHUNK_BYTES, end - seen.offset - len(carry)))
            if not chunk:
                break
            block = carry + chunk
            cut = block.rfind(b"\n") + 1  # a torn last line is read when it is complete
            # one session's records are consecutive lines: decode each distinct id once
            raw_ids = {m.group(1) for m in _SESSION_ID.finditer(block, 0, cut)}
            seen.ids.update(_decoded(raw) for raw in raw_ids)
            seen.offset += cut
            carry = block[cut:]


def store_has_session(path: Path, session_id: str) -> bool:
    """Whether the JSONL store at ``path`` already holds records of ``session_id``.

    A store that is missing, not a regular file (a directory, a FIFO: never opened here)
    or unreadable holds nothing as far as this check goes: the store's writer refuses it
    with its own error, and the session's result still comes back.
    """
    resolved = path.expanduser().resolve()
    try:
        status = os.stat(resolved)
    except OSError:
        return False
    if not stat.S_ISREG(status.st_mode):
        return False
    with _lock:
        seen = _seen.get(resolved)
        if seen is None or seen.inode != status.st_ino or status.st_size < seen.offset:
            seen = _seen[resolved] = _SeenIds(inode=status.st_ino)
        if status.st_size > seen.offset:
            try:
                _scan(resolved, seen, status.st_size)
            except OSError:
                return False
        return session_id in seen.ids
