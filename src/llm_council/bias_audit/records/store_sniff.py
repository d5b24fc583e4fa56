"""Recognise a bias-audit record store by its first lines (before appending to it or
reading history from it), so someone's notes are never taken for a store."""

from __future__ import annotations

import json
from pathlib import Path

#: how much of an existing file :func:`holds_records` reads to recognise a store
STORE_SNIFF_BYTES = 1 << 16


def holds_records(path: Path) -> bool:
    """Whether ``path`` is empty or a complete line near its start is a record (a JSON
    object with ``schema_version``). Raises ``OSError`` when it cannot be read."""
    with path.open("rb") as handle:
        head = handle.read(STORE_SNIFF_BYTES)
    if not head.strip():
        return True
    lines = head.split(b"\n")
    complete = lines[:-1] if len(head) == STORE_SNIFF_BYTES else lines
    for line in complete:
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, dict) and "schema_version" in parsed:
            return True
    # a lone line without its newline (a session torn mid-write, nothing else yet)
    return not any(line.strip() for line in complete[:-1]) and head.lstrip().startswith(b"{")
