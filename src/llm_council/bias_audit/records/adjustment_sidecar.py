"""The summed reviewer-effect history of a JSONL store, kept in ``<store>.adjustments.json``.

The debiased aggregate (ADR 0046) needs each reviewer's effects fitted on the council's
past sessions. Reading the whole store every session costs time linear in its size, so the
store's writer keeps the fit's sufficient statistics
(:class:`~llm_council.stats.reviewers.reviewer_effect_sums.ReviewerEffectSums`, one per
``council_config_hash``) beside it: :func:`merge_after_append` adds each appended session
under the writers' lock and rewrites the file atomically (``mkstemp``, 0600, then
``os.replace``). The file carries the store's inode, size and mtime it describes and a seal
(:mod:`~llm_council.bias_audit.records.summary_seal`: an HMAC of the kind, the resolved store
path and the body under a key outside the store's directory), so a lookup
(:func:`read_sidecar`) accepts it only when the seal verifies and the store is still in
that state; a store written by another program, truncated, compacted or edited no longer
matches, and the sums are rebuilt from its records
(:mod:`~llm_council.bias_audit.records.adjustment_history`). A file that cannot be trusted
(unsealed, forged, bad JSON, a wrong shape, a number that is not finite or beyond what the
store's size allows) is never used: it reads as missing, with a warning once.

Who writes: only :func:`merge_after_append` (the store's writer, under its lock). A reader's
rebuild is kept in memory, and the writer's next append writes it here.

There is no journal: a crash between the store's write and the file's rewrite leaves the
file describing the state before, which the next lookup sees as stale and rebuilds.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.score_history import history_arrays
from llm_council.bias_audit.records.summary_files import (
    SummaryUnverifiable,
    max_cells,
    read_summary,
    rebuilt,
    sum_bound,
    summarised_store,
    warn_unverifiable,
    write_summary_atomically,
)
from llm_council.bias_audit.records.summary_seal import sealed_json, unsealed_json
from llm_council.stats.reviewers.reviewer_effect_sums import (
    LENGTH,
    ReviewerEffectSums,
    reviewer_effect_sums,
)
from llm_council.stats.reviewers.reviewer_effects import MAX_SLOTS

SIDECAR_SUFFIX = ".adjustments.json"
SIDECAR_FORMAT = 1
#: the seal's kind (and the in-memory rebuild's)
SIDECAR_KIND = "adjustments.json"

CouncilSums = dict[str, ReviewerEffectSums]


def sidecar_path(store: Path) -> Path:
    """``<resolved store>.adjustments.json`` (a symlink and its target share it)."""
    return _sidecar_file(summarised_store(store))


def _sidecar_file(real: Path) -> Path:
    return real.with_name(real.name + SIDECAR_SUFFIX)


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


def _unpack(text: Any, size: int, bound: float) -> np.ndarray:
    if not isinstance(text, str):
        raise ValueError("packed numbers are not a string")
    raw = base64.b64decode(text, validate=True)
    if len(raw) != 8 * size:
        raise ValueError(f"expected {size} numbers, got {len(raw) / 8:g}")
    values = np.frombuffer(raw, dtype="<f8")
    if not np.all(np.isfinite(values)) or np.any(np.abs(values) > bound):
        raise ValueError(f"a number is not finite or beyond {bound:g}")
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


def _decode(encoded: Mapping[str, Any], bound: float, most: int) -> ReviewerEffectSums:
    """The sums from their JSON form; anything inconsistent, a sum beyond ``bound`` or a
    count beyond ``most`` (what the store's size allows) raises ``ValueError``."""
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
    if n_scores.size != len(reviewers) or (n_scores < 0).any() or not 0 <= n_answers <= most:
        raise ValueError("bad counts")
    if int(n_scores.sum()) > most:
        raise ValueError("more scores than the store can hold")
    if not 0 <= n_slots <= MAX_SLOTS:
        raise ValueError(f"bad slot count {n_slots}")
    size = len(columns) + 1
    upper = np.triu_indices(size)
    packed = _unpack(encoded["cross"], len(reviewers) * upper[0].size, bound)
    cross = np.zeros((len(reviewers), size, size))
    cross[:, upper[0], upper[1]] = packed.reshape(len(reviewers), -1)
    cross[:, upper[1], upper[0]] = packed.reshape(len(reviewers), -1)
    gram_diagonal = _unpack(encoded["gram_diagonal"], len(columns), bound)
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
        _unpack(encoded["gram_length"], len(columns), bound),
    )


#: per sidecar path: the file's (inode, size, mtime) and what it held once verified, so an
#: unchanged file is not parsed again
_READS: dict[str, tuple[tuple[int, int, int], list[int], CouncilSums]] = {}


def _file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def _key_of(value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) != 3 or any(type(p) is not int for p in value):
        raise ValueError("a store key is not three integers")
    return list(value)


def _verified(real: Path, raw: bytes, store_size: int) -> tuple[list[int], CouncilSums]:
    """The sealed file's store key and sums; :class:`SummaryUnverifiable` otherwise."""
    body = unsealed_json(SIDECAR_KIND, real, raw, resolved=True)
    if body is None:
        raise SummaryUnverifiable("the seal does not verify")
    if body.get("format") != SIDECAR_FORMAT:
        raise SummaryUnverifiable(f"the format is not {SIDECAR_FORMAT}")
    bound, most = sum_bound(store_size), max_cells(store_size)
    try:
        key = _key_of(body["store_key"])
        councils = {
            str(name): _decode(value, bound, most) for name, value in body["councils"].items()
        }
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise SummaryUnverifiable(f"implausible: {error}") from None
    return key, councils


def read_sidecar(
    store: Path, store_size: int | None = None
) -> tuple[list[int], CouncilSums] | None:
    """The store key and sums the file holds, or None when it is missing or cannot be
    trusted (with a warning once). ``store_size`` (else the store's current size) bounds
    what the sums may plausibly hold."""
    return _read_real(summarised_store(store), store_size)


def _read_real(real: Path, store_size: int | None) -> tuple[list[int], CouncilSums] | None:
    path = _sidecar_file(real)
    file_key = _file_key(path)
    cached = _READS.get(str(path))
    if file_key is not None and cached is not None and cached[0] == file_key:
        return cached[1], cached[2]
    try:
        raw = read_summary(path)
        if raw is None:
            return None
        if store_size is None:
            store_size = os.stat(real).st_size
        key, councils = _verified(real, raw, store_size)
    except SummaryUnverifiable as error:
        warn_unverifiable("adjustments", real, str(error))
        return None
    except OSError:
        return None
    if file_key is not None:
        _READS[str(path)] = (file_key, key, councils)
    return key, councils


def write_sidecar(store: Path, key: list[int], councils: CouncilSums) -> None:
    """Replace the sealed file atomically (``mkstemp``, 0600, then ``os.replace``); the
    writer's, under the store's lock. Without a sealing key nothing is written.

    Not fsynced (an fsync costs an append several milliseconds): the file is a cache
    checked against the store, so one that a power loss leaves empty or torn reads as
    damaged, and one left at an older state reads as stale; both are rebuilt.
    """
    _write_real(summarised_store(store), key, councils)


def _write_real(real: Path, key: list[int], councils: CouncilSums) -> None:
    path = _sidecar_file(real)
    body = {
        "format": SIDECAR_FORMAT,
        "store_key": key,
        "councils": {name: _encode(sums) for name, sums in sorted(councils.items())},
    }
    document = sealed_json(SIDECAR_KIND, real, body, resolved=True)
    if document is None:
        return
    write_summary_atomically(path, document)
    file_key = _file_key(path)
    if file_key is not None:
        _READS[str(path)] = (file_key, key, councils)


# ---- the writer's side ------------------------------------------------------------------


def merge_after_append(
    store: Path, before: os.stat_result, records: Sequence[ReviewRecord]
) -> None:
    """Add one append's sessions to the sums; called under the store's writer lock.

    The sums describing the store as it was ``before`` come from the sealed file, else
    from this process's in-memory rebuild (a reader rebuilt a stale file); a new store's
    first append starts from nothing. Without them the file is left stale. The records are
    already in the store, so nothing here fails the append: a failure leaves the file
    stale (logged), and the next lookup rebuilds it.
    """
    try:
        real = summarised_store(store)
        after = store_key(os.stat(real))
        if before.st_size == 0:
            current: CouncilSums | None = {}
        else:
            read = _read_real(real, before.st_size)
            current = read[1] if read is not None and read[0] == store_key(before) else None
            if current is None:
                current = rebuilt(SIDECAR_KIND, real, store_key(before))
        if current is None:
            return
        _write_real(real, after, merge_councils(current, sums_by_council(records)))
    except Exception as error:  # noqa: BLE001 - left stale, never the append failed
        import structlog  # here: reading a store does not need it

        structlog.get_logger("llm_council.bias_audit").warning(
            "adjustment_sums_not_updated", error=type(error).__name__
        )
