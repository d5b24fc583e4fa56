"""The summed reviewer-effect history of a JSONL store, kept in ``<store>.adjustments.json``.

The debiased aggregate (ADR 0046) needs each reviewer's effects fitted on the council's
past sessions. Reading the whole store every session costs time linear in its size, so the
store's writer keeps the fit's sufficient statistics
(:class:`~llm_council.stats.reviewer_effect_sums.ReviewerEffectSums`, one per
``council_config_hash``) beside it: :func:`merge_after_append` adds each appended session
under the writers' lock and rewrites the file atomically (a temporary file, then
``os.replace``). The file carries the store's inode, size and mtime it describes, so a
lookup (:func:`read_sidecar`) accepts it only when the store is still in that state;
a store written by another program, truncated, compacted or edited no longer matches, and
the sums are rebuilt from its records
(:mod:`~llm_council.bias_audit.records.adjustment_history`). A damaged file (bad JSON, a
wrong shape, a number that is not finite) is never trusted: it reads as missing.

There is no journal: a crash between the store's write and the file's rewrite leaves the
file describing the state before, which the next lookup sees as stale and rebuilds.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.score_history import history_arrays
from llm_council.stats.reviewer_effect_sums import (
    LENGTH,
    ReviewerEffectSums,
    reviewer_effect_sums,
)
from llm_council.stats.reviewer_effects import MAX_SLOTS

SIDECAR_SUFFIX = ".adjustments.json"
SIDECAR_FORMAT = 1

CouncilSums = dict[str, ReviewerEffectSums]


def sidecar_path(store: Path) -> Path:
    """``<store>.adjustments.json``."""
    return store.with_name(store.name + SIDECAR_SUFFIX)


def sums_by_council(records: Iterable[ReviewRecord]) -> CouncilSums:
    """The sums of whole sessions' records, one per ``council_config_hash``."""
    by_council: dict[str, list[ReviewRecord]] = {}
    for record in records:
        by_council.setdefault(record.council_config_hash, []).append(record)
    sums: CouncilSums = {}
    for council, council_records in by_council.items():
        arrays = history_arrays(council_records)
        if arrays is not None:
            sums[council] = reviewer_effect_sums(
                arrays["answer"],
                arrays["reviewer"],
                arrays["slot"],
                arrays["log2_length"],
                arrays["score"],
                tuple(str(name) for name in arrays["names"]),
            )
    return sums


def merge_councils(base: Mapping[str, ReviewerEffectSums], extra: CouncilSums) -> CouncilSums:
    merged = dict(base)
    for council, sums in extra.items():
        merged[council] = merged[council].merged(sums) if council in merged else sums
    return merged


# ---- the file ---------------------------------------------------------------------------


def store_key(status: os.stat_result) -> list[int]:
    """What a sidecar describes: the store's inode, size and mtime."""
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _pack(values: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f8").tobytes()).decode("ascii")


def _unpack(text: Any, size: int) -> np.ndarray:
    values = np.frombuffer(base64.b64decode(str(text), validate=True), dtype="<f8")
    if values.size != size or not np.all(np.isfinite(values)):
        raise ValueError(f"expected {size} finite numbers, got {values.size}")
    return values.astype(float)


def _encode(sums: ReviewerEffectSums) -> dict[str, Any]:
    upper = np.triu_indices(len(sums.columns) + 1)
    return {
        "reviewers": list(sums.reviewers),
        "columns": [list(column) for column in sums.columns],
        "n_scores": [int(n) for n in sums.n_scores],
        "n_answers": sums.n_answers,
        "n_slots": sums.n_slots,
        "gram_diagonal": _pack(sums.gram_diagonal),
        "gram_length": _pack(sums.gram_length),
        "cross": _pack(sums.cross[:, upper[0], upper[1]]),
    }


def _decode(encoded: Mapping[str, Any]) -> ReviewerEffectSums:
    """The sums from their JSON form; anything inconsistent raises ``ValueError``."""
    reviewers = tuple(encoded["reviewers"])
    if not all(isinstance(name, str) for name in reviewers) or len(set(reviewers)) != len(
        reviewers
    ):
        raise ValueError(f"bad reviewer names {reviewers!r:.80}")
    columns = tuple((int(r), int(s)) for r, s in encoded["columns"])
    if len(set(columns)) != len(columns) or not all(
        0 <= r < len(reviewers) and (s == LENGTH or 0 <= s < MAX_SLOTS) for r, s in columns
    ):
        raise ValueError("bad columns")
    n_scores = np.array([int(n) for n in encoded["n_scores"]], dtype=np.int64)
    n_answers, n_slots = int(encoded["n_answers"]), int(encoded["n_slots"])
    if n_scores.size != len(reviewers) or (n_scores < 0).any() or n_answers < 0:
        raise ValueError("bad counts")
    if not 0 <= n_slots <= MAX_SLOTS:
        raise ValueError(f"bad slot count {n_slots}")
    size = len(columns) + 1
    upper = np.triu_indices(size)
    packed = _unpack(encoded["cross"], len(reviewers) * upper[0].size)
    cross = np.zeros((len(reviewers), size, size))
    cross[:, upper[0], upper[1]] = packed.reshape(len(reviewers), -1)
    cross[:, upper[1], upper[0]] = packed.reshape(len(reviewers), -1)
    gram_diagonal = _unpack(encoded["gram_diagonal"], len(columns))
    if (gram_diagonal < 0).any():
        raise ValueError("a negative sum of squares")
    return ReviewerEffectSums(
        reviewers,
        columns,
        n_scores,
        n_answers,
        n_slots,
        cross,
        gram_diagonal,
        _unpack(encoded["gram_length"], len(columns)),
    )


#: per sidecar path: the file's (inode, size, mtime) and what it held, so an unchanged file
#: is not parsed again
_READS: dict[str, tuple[tuple[int, int, int], list[int], CouncilSums]] = {}


def _file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def read_sidecar(store: Path) -> tuple[list[int], CouncilSums] | None:
    """The store key and sums the file holds, or None when it is missing or damaged."""
    path = sidecar_path(store)
    file_key = _file_key(path)
    cached = _READS.get(str(path))
    if file_key is not None and cached is not None and cached[0] == file_key:
        return cached[1], cached[2]
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.get("format") != SIDECAR_FORMAT:
            return None
        key = [int(part) for part in payload["store_key"]]
        councils = {str(name): _decode(value) for name, value in payload["councils"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # missing or damaged: rebuilt from the records
    if file_key is not None:
        _READS[str(path)] = (file_key, key, councils)
    return key, councils


def write_sidecar(store: Path, key: list[int], councils: CouncilSums) -> None:
    """Replace the sidecar atomically: a temporary file beside it, then ``os.replace``.

    Not fsynced (an fsync costs an append several milliseconds): the file is a cache
    checked against the store, so one that a power loss leaves empty or torn reads as
    damaged, and one left at an older state reads as stale; both are rebuilt.
    """
    path = sidecar_path(store)
    payload = {
        "format": SIDECAR_FORMAT,
        "store_key": key,
        "councils": {name: _encode(sums) for name, sums in sorted(councils.items())},
    }
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            json.dump(payload, stream, allow_nan=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    file_key = _file_key(path)
    if file_key is not None:
        _READS[str(path)] = (file_key, key, councils)


# ---- the writer's side ------------------------------------------------------------------


def merge_after_append(
    store: Path, before: os.stat_result, records: Sequence[ReviewRecord]
) -> None:
    """Add one append's sessions to the sums; called under the store's writer lock.

    The records are already in the store, so nothing here fails the append: a file that
    was stale before (or cannot be written now) is left stale, and the next lookup
    rebuilds it. A new store's first append starts the file.
    """
    try:
        after = store_key(os.stat(store))
        if before.st_size == 0:
            current: CouncilSums = {}
        else:
            read = read_sidecar(store)
            if read is None or read[0] != store_key(before):
                return
            current = read[1]
        write_sidecar(store, after, merge_councils(current, sums_by_council(records)))
    except Exception:  # noqa: BLE001 - any failure leaves the file stale, never the append failed
        return
