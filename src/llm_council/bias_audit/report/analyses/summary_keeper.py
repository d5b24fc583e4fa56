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
    return _compacted(meta, arrays)[0]


#: a string array as kept: its distinct values (sorted, the original dtype), the code of
#: each element into them, and the original shape
_Strings = tuple[np.ndarray, np.ndarray, tuple[int, ...]]


def _compacted(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> tuple[int, dict[str, np.ndarray | _Strings]]:
    """(:func:`payload_bytes`, the arrays with each string array as its distinct values and
    int32 codes). Kept that way, a payload's per-row session ids take 4 bytes a row instead
    of numpy's 4 bytes a character (64 for a 16-character id): at 10M records the summaries
    held for the file until it is written, or until they pass the file's cap, were the
    report's peak (ADR 0092). :func:`_restored` gives the arrays back, equal and of the
    same dtype."""
    total = len(json.dumps(meta, default=str).encode("utf-8"))
    stored: dict[str, np.ndarray | _Strings] = {}
    for name, values in arrays.items():
        if values.dtype.kind in "iu":
            total += 8 * values.size
        elif values.dtype.kind in "UO":
            # one join, not a Python loop over the distinct strings (400,000 at 1M records)
            distinct, codes = np.unique(values.ravel(), return_inverse=True)
            total += 8 * values.size + len("".join(map(str, distinct.tolist())).encode("utf-8"))
            code_type = np.int32 if distinct.size < 2**31 else np.int64
            stored[name] = (distinct, codes.astype(code_type), values.shape)
            continue
        else:
            total += values.nbytes
        stored[name] = values
    return total, stored


def _restored(stored: Mapping[str, np.ndarray | _Strings]) -> dict[str, np.ndarray]:
    """The arrays :func:`_compacted` kept, as the section gave them."""
    arrays: dict[str, np.ndarray] = {}
    for name, value in stored.items():
        if isinstance(value, tuple):
            distinct, codes, shape = value
            arrays[name] = distinct[codes].reshape(shape)
        else:
            arrays[name] = value
    return arrays


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
        size, stored = (0, None) if payload is None else _compacted(*payload)
        kept = None if payload is None else (payload[0], stored)
        del payload  # the wide string arrays: only their compact form is held
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
            if kept is not None:
                self._kept[section.name] = kept

    def kept(self, name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The kept payload (meta, arrays) of section ``name`` (``None``: none kept)."""
        with self._lock:
            kept = self._kept.get(name)
        return None if kept is None else (kept[0], _restored(kept[1]))
