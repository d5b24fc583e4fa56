"""Per-reviewer noise profiles of a JSONL store: mergeable sums kept in a sidecar file.

The per-session audit tests a reviewer against its noise; one session gives about one
residual degree of freedom, the reviewer's past sessions give dozens. For each reviewer
the profile holds sums that add across sessions: the sessions seen, the residual sum of
squares :math:`\\sum RSS_r` of the additive model and its df :math:`\\sum d_r`
(:func:`~llm_council.stats.moderated_session_tests.reviewer_residual_variances`), so
:math:`s_r^2 = \\sum RSS_r / \\sum d_r` with :math:`\\sum d_r` df.

The sums live in ``<store>.profiles.json``, written atomically (a temporary file, then
``os.replace``). The writer updates it under the store's lock right after an append
(:func:`merge_after_append`); the file records the store's inode, size and mtime it
describes, so a store written by another program, imported, compacted or edited no
longer matches and :func:`load_profiles` rebuilds the sums from the records (complete
lines only, live-check reviews left out).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.stats.design_cache import fit_additive_two_way_cached
from llm_council.stats.moderated_session_tests import reviewer_residual_variances

PROFILE_SUFFIX = ".profiles.json"
PROFILE_FORMAT = 1


@dataclass(frozen=True)
class ReviewerProfile:
    """One reviewer's summed noise statistics over its past sessions."""

    sessions: int
    residual_sum_of_squares: float
    residual_df: float

    def merged(self, other: ReviewerProfile) -> ReviewerProfile:
        return ReviewerProfile(
            self.sessions + other.sessions,
            self.residual_sum_of_squares + other.residual_sum_of_squares,
            self.residual_df + other.residual_df,
        )

    @property
    def variance(self) -> float | None:
        """:math:`\\sum RSS_r / \\sum d_r`, or ``None`` without residual information."""
        if self.residual_df <= 0.0:
            return None
        return self.residual_sum_of_squares / self.residual_df


Profiles = dict[str, ReviewerProfile]


def profile_path(store: Path) -> Path:
    return store.with_name(store.name + PROFILE_SUFFIX)


def session_profiles(cells: Iterable[tuple[str, str, float]]) -> Profiles:
    """One session's contribution from its ``(reviewer, candidate, score)`` non-self cells."""
    reviewers: dict[str, int] = {}
    candidates: dict[str, int] = {}
    entries = []
    for reviewer, candidate, score in cells:
        entries.append(
            (
                reviewers.setdefault(reviewer, len(reviewers)),
                candidates.setdefault(candidate, len(candidates)),
                score,
            )
        )
    if len(reviewers) < 2 or len(candidates) < 2:
        return {}
    table = np.full((len(reviewers), len(candidates)), np.nan)
    for row, column, score in entries:
        table[row, column] = score
    fit = fit_additive_two_way_cached(table)
    if fit is None:
        return {}
    variances, dfs = reviewer_residual_variances(fit)
    sums = np.where(dfs > 0.0, np.nan_to_num(variances) * dfs, 0.0)
    return {
        name: ReviewerProfile(1, float(sums[index]), float(dfs[index]))
        for name, index in reviewers.items()
    }


def merge_profiles(
    base: Mapping[str, ReviewerProfile], extra: Mapping[str, ReviewerProfile]
) -> Profiles:
    merged = dict(base)
    for name, profile in extra.items():
        merged[name] = merged[name].merged(profile) if name in merged else profile
    return merged


def _usable_cell(record: Mapping[str, Any]) -> tuple[str, str, float] | None:
    """The record's non-self scored cell of the review that counts, else ``None``."""
    score = record.get("score_value")
    if record.get("check_kind") is not None or record.get("is_self_review") or score is None:
        return None
    if not isinstance(score, int | float) or score != score:
        return None
    return str(record["reviewer_id"]), str(record["model_id"]), float(score)


def records_profiles(records: Sequence[Mapping[str, Any]]) -> Profiles:
    """Profiles of one session's records (the append path)."""
    cells = [cell for record in records if (cell := _usable_cell(record)) is not None]
    return session_profiles(cells)


def _store_key(status: os.stat_result) -> list[int]:
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _write_sidecar(store: Path, key: list[int], profiles: Mapping[str, ReviewerProfile]) -> None:
    """Write the sidecar atomically: readers see the old file or the new one, never half."""
    target = profile_path(store)
    payload = {
        "format": PROFILE_FORMAT,
        "store_key": key,
        "reviewers": {
            name: [p.sessions, p.residual_sum_of_squares, p.residual_df]
            for name, p in sorted(profiles.items())
        },
    }
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temporary, target)


def _read_sidecar(store: Path) -> tuple[list[int], Profiles] | None:
    try:
        payload = json.loads(profile_path(store).read_text(encoding="utf-8"))
        if payload.get("format") != PROFILE_FORMAT:
            return None
        profiles = {
            str(name): ReviewerProfile(int(values[0]), float(values[1]), float(values[2]))
            for name, values in payload["reviewers"].items()
        }
        return [int(part) for part in payload["store_key"]], profiles
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # missing or damaged: rebuilt from the records


def merge_after_append(
    store: Path, before: os.stat_result | None, records: Sequence[Mapping[str, Any]]
) -> None:
    """Add one appended session to the sidecar; called under the store's writer lock.

    ``before`` is the store's status just before the append. The sidecar is updated only
    when it described exactly that store; otherwise it is already stale and
    :func:`load_profiles` rebuilds it (a full rebuild inside the writers' lock would hold
    every other writer up).
    """
    current = _read_sidecar(store)
    base: Profiles | None = None
    if current is not None and before is not None and current[0] == _store_key(before):
        base = current[1]
    elif current is None and (before is None or before.st_size == 0):
        base = {}  # a new store: its first session starts the profiles
    if base is None:
        return
    _write_sidecar(
        store, _store_key(os.stat(store)), merge_profiles(base, records_profiles(records))
    )


def rebuild_profiles(store: Path) -> Profiles:
    """Profiles from every complete session of the store, written to the sidecar."""
    status = os.stat(store)
    sessions: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    with store.open("rb") as handle:
        data = handle.read(status.st_size)
    for raw_line in data.split(b"\n")[:-1]:  # the part after the last newline is torn
        try:
            record = json.loads(raw_line)
            cell = _usable_cell(record)
        except (ValueError, KeyError, TypeError):
            continue  # malformed lines are the readers' business, not the profiles'
        if cell is not None:
            sessions[str(record.get("session_id"))].append(cell)
    profiles: Profiles = {}
    for cells in sessions.values():
        profiles = merge_profiles(profiles, session_profiles(cells))
    _write_sidecar(store, _store_key(status), profiles)
    return profiles


def load_profiles(store: Path) -> Profiles:
    """The store's reviewer profiles: the sidecar when it matches the store, else rebuilt.

    A missing store has no history (empty profiles).
    """
    try:
        status = os.stat(store)
    except FileNotFoundError:
        return {}
    current = _read_sidecar(store)
    if current is not None and current[0] == _store_key(status):
        return current[1]
    return rebuild_profiles(store)
