"""Which folded summaries a report keeps in memory for the summary file, and when it stops.

A section's folded summary is kept from the moment the section finishes until the file is
written at the end of the report. A summary that grows with the store (the leaderboard's
comparisons, the decisions' votes) makes that retention large: at 10M records of a
5-member council the six summaries of ADRs 0073/0074 hold about 1.2 GB, over the largest
file the reader accepts (:data:`~llm_council.bias_audit.report.load.session_summaries.
MAX_FILE_BYTES`), so such a file was written on every run and refused on every read. The
keeper counts each summary's bytes as it arrives and, once the total would pass the limit,
drops everything it kept and keeps nothing more: the report then saves no file (and says
so once), and the memory is freed while the other sections still run. A report that saves
no file at all (no coverage: PostgreSQL, ``--since``, ``session_summaries=False``) keeps
nothing from the start.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_section import IncrementalSection

log = structlog.get_logger("llm_council.bias_audit")


def payload_bytes(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> int:
    """About how many bytes a section's payload takes in the file: its arrays' bytes (the
    file stores integers as 8 bytes, strings as their UTF-8 plus an 8-byte code each) and
    its JSON metadata."""
    total = len(json.dumps(meta, default=str).encode("utf-8"))
    for values in arrays.values():
        if values.dtype.kind in "iu":
            total += 8 * values.size
        elif values.dtype.kind in "UO":
            # one join, not a Python loop over the distinct strings (400,000 at 1M records)
            distinct = "".join(map(str, np.unique(values).tolist()))
            total += 8 * values.size + len(distinct.encode("utf-8"))
        else:
            total += values.nbytes
    return total


class SummaryKeeper:
    """The folded summaries' payloads to save, by section name, up to ``limit`` bytes in all.

    ``keep`` is called from the section workers (thread-safe). Once the total passes
    ``limit`` every kept summary is dropped and ``too_large`` is set for good.
    """

    def __init__(self, limit: int, *, saving: bool) -> None:
        self.limit = limit
        self.saving = saving
        self.total = 0
        self.too_large = False
        self._kept: dict[str, Any] = {}
        self._lock = threading.Lock()

    def keep(self, section: IncrementalSection[Any, Any], folded: Any) -> None:
        """Keep ``folded``'s payload (``None``: the section has nothing to save) while it
        fits; the payload is what the file needs, so it is made once, here."""
        if not self.saving:
            return
        payload = None if folded is None else section.to_payload(folded)
        size = 0 if payload is None else payload_bytes(*payload)
        with self._lock:
            if self.too_large:
                return
            self.total += size
            if self.total > self.limit:
                self.too_large = True
                self._kept.clear()
                log.info(
                    "report_sessions_not_saved",
                    reason=f"the summaries pass {self.limit // 2**20} MiB, "
                    "the largest summary file read back",
                )
                return
            if payload is not None:
                self._kept[section.name] = payload

    def kept(self, name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The kept payload (meta, arrays) of section ``name`` (``None``: none kept)."""
        with self._lock:
            return self._kept.get(name)
