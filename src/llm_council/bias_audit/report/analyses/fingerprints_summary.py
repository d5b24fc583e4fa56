"""The fingerprint history (ADR 0062) as an incremental section (ADRs 0073, 0086).

A reviewer's history reduces to one row per (reviewer, session): the session's id, its
first time, the reviewer's fingerprint there and the count and sum of its paired
deviations. Segments are not collapsed in the summary: a session appended later may be
earlier in time and split any segment, so :meth:`FingerprintSection.finish` sorts every
row as the full run's query does (reviewer, time with no time last, session id) and cuts
the segments from them with the full run's own code (:func:`history_from_rows`). The
merge is a concatenation, so the finished section equals a full recompute bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.fingerprints import (
    SESSION_ROWS_SQL,
    FingerprintHistory,
    SessionRow,
    canonical_fingerprints,
    history_from_rows,
)

#: a row without a valid fingerprint ("null" in the full run)
_NO_FINGERPRINT = -1


@dataclass(frozen=True)
class FingerprintSummary:
    """One row per (reviewer, session), and the store's fingerprints.

    ``reviewer`` indexes ``reviewers`` and ``fingerprint`` indexes ``fingerprints`` (the
    canonical texts; -1: none valid); ``time`` is the text the full run prints (``""``
    without a time) and ``time_us`` its order key (microseconds since the epoch; read only
    where ``has_time``); ``n`` and ``total`` the paired deviations and their sum.
    ``invalid_keys`` are the distinct keys of stored fingerprints that failed validation;
    ``stored`` whether any fingerprint was stored (else the section is ``None``).
    """

    reviewers: np.ndarray  # str
    fingerprints: np.ndarray  # str
    reviewer: np.ndarray  # int32
    session_id: np.ndarray  # str
    time: np.ndarray  # str
    has_time: np.ndarray  # bool
    time_us: np.ndarray  # int64
    fingerprint: np.ndarray  # int32
    n: np.ndarray  # int64
    total: np.ndarray  # float64
    invalid_keys: np.ndarray  # uint64
    stored: bool


_ROW_FIELDS = ("reviewer", "session_id", "time", "has_time", "time_us", "fingerprint", "n")
_ARRAY_FIELDS = ("reviewers", "fingerprints", *_ROW_FIELDS, "total", "invalid_keys")


def _strings(values: list[Any]) -> np.ndarray:
    return np.asarray(values, dtype=str) if values else np.zeros(0, dtype=str)


def _summarize(connection: duckdb.DuckDBPyConnection) -> FingerprintSummary:
    canonical, invalid = canonical_fingerprints(connection)
    rows = connection.execute(SESSION_ROWS_SQL).fetchall() if canonical or invalid else []
    reviewers = sorted({str(row[0]) for row in rows})
    texts = sorted(set(canonical.values()))
    reviewer_index = {name: i for i, name in enumerate(reviewers)}
    text_index = {text: i for i, text in enumerate(texts)}
    identity = [
        _NO_FINGERPRINT
        if row[4] is None or int(row[4]) not in canonical
        # a stored key's canonical text
        else text_index[canonical[int(row[4])]]
        for row in rows
    ]
    return FingerprintSummary(
        reviewers=_strings(reviewers),
        fingerprints=_strings(texts),
        reviewer=np.asarray([reviewer_index[str(row[0])] for row in rows], dtype=np.int32),
        session_id=_strings([str(row[2]) for row in rows]),
        time=_strings(["" if row[3] is None else str(row[3]) for row in rows]),
        has_time=np.asarray([row[3] is not None for row in rows], dtype=bool),
        time_us=np.asarray([0 if row[7] is None else int(row[7]) for row in rows], np.int64),
        fingerprint=np.asarray(identity, dtype=np.int32),
        n=np.asarray([int(row[5]) for row in rows], dtype=np.int64),
        total=np.asarray([float(row[6]) for row in rows], dtype=np.float64),
        invalid_keys=np.unique(np.asarray(invalid, dtype=np.uint64)),
        stored=bool(canonical or invalid),
    )


def _reindexed(names: np.ndarray, union: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``index`` into ``names`` as indices into ``union`` (a sorted superset); -1 stays."""
    if names.size == 0:
        return index.astype(np.int32)
    mapped = np.searchsorted(union, names).astype(np.int32)
    return np.where(index < 0, index, mapped[np.maximum(index, 0)]).astype(np.int32)


def _merge(saved: FingerprintSummary, new: FingerprintSummary) -> FingerprintSummary:
    reviewers = np.union1d(saved.reviewers, new.reviewers).astype(str)
    texts = np.union1d(saved.fingerprints, new.fingerprints).astype(str)

    def rows(field: str) -> np.ndarray:
        return np.concatenate([getattr(saved, field), getattr(new, field)])

    return FingerprintSummary(
        reviewers=reviewers,
        fingerprints=texts,
        reviewer=np.concatenate(
            [
                _reindexed(saved.reviewers, reviewers, saved.reviewer),
                _reindexed(new.reviewers, reviewers, new.reviewer),
            ]
        ),
        session_id=rows("session_id").astype(str),
        time=rows("time").astype(str),
        has_time=rows("has_time"),
        time_us=rows("time_us"),
        fingerprint=np.concatenate(
            [
                _reindexed(saved.fingerprints, texts, saved.fingerprint),
                _reindexed(new.fingerprints, texts, new.fingerprint),
            ]
        ),
        n=rows("n"),
        total=rows("total"),
        invalid_keys=np.union1d(saved.invalid_keys, new.invalid_keys).astype(np.uint64),
        stored=saved.stored or new.stored,
    )


def _finish(summary: FingerprintSummary) -> FingerprintHistory | None:
    """The full run's order (reviewer, time with no time last, session id), then its cut."""
    if not summary.stored:
        return None
    names = summary.reviewers[summary.reviewer]
    order = np.lexsort((summary.session_id, summary.time_us, ~summary.has_time, names))
    by_reviewer: dict[str, list[SessionRow]] = {}
    for i in order.tolist():
        code = int(summary.fingerprint[i])
        identity = "null" if code == _NO_FINGERPRINT else str(summary.fingerprints[code])
        time = str(summary.time[i]) if summary.has_time[i] else None
        by_reviewer.setdefault(str(names[i]), []).append(
            (0, str(summary.session_id[i]), time, identity, int(summary.n[i]), summary.total[i])
        )
    return history_from_rows(by_reviewer, int(summary.invalid_keys.size))


def _checked(summary: FingerprintSummary) -> FingerprintSummary:
    """``summary`` if its arrays fit together, else ``ValueError`` naming the field."""
    rows = summary.session_id.shape
    for field in _ROW_FIELDS + ("total",):
        if getattr(summary, field).shape != rows:
            raise ValueError(
                f"fingerprints summary: arrays {field!r} and 'session_id' of different lengths"
            )
    for field, names in (("reviewer", summary.reviewers), ("fingerprint", summary.fingerprints)):
        codes = getattr(summary, field)
        if codes.size and (int(codes.max()) >= names.size or int(codes.min()) < -1):
            raise ValueError(f"fingerprints summary: array {field!r} out of range")
    if summary.reviewer.size and int(summary.reviewer.min()) < 0:
        raise ValueError("fingerprints summary: array 'reviewer' out of range")
    if not np.all(np.isfinite(summary.total)):
        raise ValueError("fingerprints summary: array 'total' not finite")
    return summary


class FingerprintSection:
    """:func:`~.fingerprints.fingerprint_history` as an incremental section (ADR 0086)."""

    name = "fingerprints"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> FingerprintSummary:
        return _summarize(connection)

    def merge(self, saved: FingerprintSummary, new: FingerprintSummary) -> FingerprintSummary:
        return _merge(saved, new)

    def finish(self, summary: FingerprintSummary) -> FingerprintHistory | None:
        return _finish(summary)

    def to_payload(
        self, summary: FingerprintSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"stored": summary.stored}, {f: getattr(summary, f) for f in _ARRAY_FIELDS}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> FingerprintSummary:
        missing = sorted(set(_ARRAY_FIELDS) - set(arrays))
        if missing:
            raise ValueError(f"fingerprints summary: no array {missing[0]!r}")
        if not isinstance(meta.get("stored"), bool):
            raise ValueError("fingerprints summary: meta 'stored' is not a boolean")
        kinds = {"reviewers": "U", "fingerprints": "U", "session_id": "U", "time": "U"}
        kinds |= {"has_time": "b", "total": "f", "invalid_keys": "u"}
        for field in _ARRAY_FIELDS:
            array = np.asarray(arrays[field])
            want = kinds.get(field, "i")
            if array.ndim != 1 or (array.size and array.dtype.kind != want):
                raise ValueError(f"fingerprints summary: array {field!r} of the wrong type")
        return _checked(
            FingerprintSummary(
                **{field: np.asarray(arrays[field]) for field in _ARRAY_FIELDS},
                stored=meta["stored"],
            )
        )


FINGERPRINTS = FingerprintSection()
