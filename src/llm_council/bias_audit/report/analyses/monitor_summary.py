"""The monitor's folded state as an entry of the report's summary file (ADR 0087).

The anytime monitor is a sequential fold in written order, so it is no
:class:`~.incremental_section.IncrementalSection` (an order-free merge of session sets):
the entry is the fold's state itself, the same sealed body as ``<store>.monitor.json``
(:mod:`~llm_council.bias_audit.records.monitor_body`) with the session digests as one
``uint64`` array, bound to the store by the state's own inode, offset and fingerprint.
It is used only from a summary file the report merged with (every summarized session's
content unchanged) and only while it still matches the store; the fold then continues
from its offset, exactly as the middleware's does from its file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import structlog

from llm_council.bias_audit.records.monitor_body import state_body, state_from_body, sums_read_back
from llm_council.bias_audit.records.monitor_fold import DIGEST_BYTES, MonitorState
from llm_council.bias_audit.report.load.session_summaries import SavedSection

log = structlog.get_logger("llm_council.bias_audit")

#: the entry's name in the summary file (no section has it) and its format version
MONITOR_ENTRY = "monitor"
MONITOR_ENTRY_VERSION = 1
_DIGESTS = "session_digests"


def monitor_entry(state: MonitorState | None) -> dict[str, SavedSection]:
    """``{MONITOR_ENTRY: the state}`` to save with the summaries; empty when there is no
    state or it would not read back (non-finite sums: the next run refolds)."""
    if state is None or not sums_read_back(state):
        return {}
    digests = np.frombuffer(state.digest_log, dtype="<u8").astype(np.uint64)
    meta = {"state": state_body(state)}
    return {MONITOR_ENTRY: SavedSection(MONITOR_ENTRY_VERSION, meta, {_DIGESTS: digests})}


def saved_monitor_state(sections: dict[str, SavedSection] | None) -> MonitorState | None:
    """The state saved in a verified summary file's ``sections`` (``None``: none, another
    version, or malformed: logged, and the monitor refolds)."""
    entry = (sections or {}).get(MONITOR_ENTRY)
    if entry is None:
        return None
    state = None
    if entry.version == MONITOR_ENTRY_VERSION:
        state = _decoded(entry.meta, entry.arrays)
    if state is None:
        log.warning("report_monitor_state_unusable", reason="malformed or another version")
    return state


def _decoded(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> MonitorState | None:
    body, digests = meta.get("state"), arrays.get(_DIGESTS)
    if not isinstance(body, dict) or not isinstance(digests, np.ndarray):
        return None
    if digests.ndim != 1 or digests.dtype.kind not in "iu":
        return None
    raw = np.ascontiguousarray(digests, dtype="<u8").tobytes()
    if len(raw) != DIGEST_BYTES * digests.size:
        return None
    try:
        return state_from_body(body, raw)
    except (KeyError, TypeError, ValueError):
        return None


__all__ = ["MONITOR_ENTRY", "monitor_entry", "saved_monitor_state"]
