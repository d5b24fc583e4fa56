"""Per-reviewer noise profiles of a JSONL store: mergeable sums kept in a sidecar file.

The per-session audit tests a reviewer against its noise; one session gives about one
residual degree of freedom, the reviewer's past sessions give dozens. For each reviewer
the profile holds sums that add across sessions: the sessions seen, the residual sum of
squares :math:`\\sum RSS_r` of the additive model (and, apart, of the model with
display-slot effects where the session's orders identify them), its df share :math:`\\sum d_r`
(:func:`~llm_council.stats.moderated_session_tests.reviewer_residual_variances`) and
Rao's expectation coefficients by reviewer name
(:func:`~llm_council.stats.moderated_session_tests.reviewer_noise_expectation`), from
which the lookup solves each reviewer's variance.

The sums live in ``<store>.profiles.json`` (the base, written atomically: a temporary
file, then ``os.replace``) and ``<store>.profiles.log`` (one line per session appended
since, written by the store's writer under its lock: :func:`merge_after_append`). Each
carries the store's inode, size and mtime before and after, so a lookup
(:func:`load_profiles`) follows the chain from the base and accepts it only when it ends
at the store's current state; a store written by another program, imported, compacted or
edited no longer matches, and the sums are rebuilt from the records (complete lines
only, live-check reviews left out).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.stats.additive_model import AdditiveFit
from llm_council.stats.design_cache import fit_additive_two_way_cached
from llm_council.stats.moderated_session_tests import (
    reviewer_noise_expectation,
    reviewer_residual_variances,
)
from llm_council.stats.slot_adjusted_fit import with_slot_effects

PROFILE_SUFFIX = ".profiles.json"
JOURNAL_SUFFIX = ".profiles.log"
#: 2: each profile may carry its slot-adjusted sums (format 1 sidecars are rebuilt)
PROFILE_FORMAT = 2
#: a cell whose display slot is not recorded
UNKNOWN_SLOT = -1
#: past this size the journal is folded into the base (a five-member session's line is about
#: 1 KiB: some 30 sessions), so a lookup never parses more than that (~0.3 ms) and the
#: base's ~5 ms rewrite costs an append about 0.2 ms on average
JOURNAL_COMPACT_BYTES = 32 * 1024


@dataclass(frozen=True)
class ReviewerProfile:
    r"""One reviewer's summed noise statistics over its past sessions.

    ``expectation[other]`` sums :math:`A_{r,other}` (see
    :func:`~llm_council.stats.moderated_session_tests.reviewer_noise_expectation`): the
    expected residual sum of squares of this reviewer is :math:`\sum_{o} A_{r,o}
    \sigma_o^2`, which the lookup solves for unbiased per-reviewer variances.
    ``slot_adjusted`` holds the same sums from the model with display-slot effects, over
    the sessions whose orders identified them (``None`` before any): the noise the slot
    test compares with, free of a favoured slot. The reviewer and self-preference tests
    keep the two-way sums, the noise of their own model.
    """

    sessions: int
    residual_sum_of_squares: float
    residual_df: float
    expectation: Mapping[str, float] = field(default_factory=dict)
    slot_adjusted: ReviewerProfile | None = None

    def merged(self, other: ReviewerProfile) -> ReviewerProfile:
        expectation = dict(self.expectation)
        for name, value in other.expectation.items():
            expectation[name] = expectation.get(name, 0.0) + value
        slot_adjusted = (
            other.slot_adjusted
            if self.slot_adjusted is None
            else self.slot_adjusted
            if other.slot_adjusted is None
            else self.slot_adjusted.merged(other.slot_adjusted)
        )
        return ReviewerProfile(
            self.sessions + other.sessions,
            self.residual_sum_of_squares + other.residual_sum_of_squares,
            self.residual_df + other.residual_df,
            expectation,
            slot_adjusted,
        )

    @property
    def variance(self) -> float | None:
        r""":math:`\sum RSS_r / \sum d_r` (the pooled variance split by leverage; biased
        toward the other reviewers' noise), or ``None`` without residual information."""
        if self.residual_df <= 0.0:
            return None
        return self.residual_sum_of_squares / self.residual_df


Profiles = dict[str, ReviewerProfile]


def profile_path(store: Path) -> Path:
    """The base summary: ``<store>.profiles.json``."""
    return store.with_name(store.name + PROFILE_SUFFIX)


def journal_path(store: Path) -> Path:
    """The journal of sessions appended since the base: ``<store>.profiles.log``."""
    return store.with_name(store.name + JOURNAL_SUFFIX)


#: one non-self scored cell: reviewer, candidate, score and, when known, its display slot
Cell = tuple[str, str, float] | tuple[str, str, float, int | None]


def session_profiles(cells: Iterable[Cell]) -> Profiles:
    """One session's contribution from its non-self cells ``(reviewer, candidate, score
    [, display slot])``. With every slot known and identified, each profile also carries
    ``slot_adjusted`` sums from the model with slot effects
    (:func:`~llm_council.stats.slot_adjusted_fit.with_slot_effects`), so the slot test's
    noise does not count a judge's favourite slot."""
    reviewers: dict[str, int] = {}
    candidates: dict[str, int] = {}
    entries = []
    for cell in cells:
        reviewer, candidate, score = cell[0], cell[1], cell[2]
        slot = cell[3] if len(cell) > 3 else None
        entries.append(
            (
                reviewers.setdefault(reviewer, len(reviewers)),
                candidates.setdefault(candidate, len(candidates)),
                score,
                UNKNOWN_SLOT if slot is None else slot,
            )
        )
    if len(reviewers) < 2 or len(candidates) < 2:
        return {}
    table = np.full((len(reviewers), len(candidates)), np.nan)
    slot_table = np.full((len(reviewers), len(candidates)), UNKNOWN_SLOT, dtype=np.intp)
    for row, column, score, slot in entries:
        table[row, column] = score
        slot_table[row, column] = slot
    fit = fit_additive_two_way_cached(table)
    if fit is None:
        return {}
    names = list(reviewers)
    plain = _fit_profiles(fit, names)
    slot_fit = with_slot_effects(fit, slot_table[fit.rows, fit.columns])
    if slot_fit is fit:
        return plain
    adjusted = _fit_profiles(slot_fit, names)
    return {
        name: dataclasses.replace(profile, slot_adjusted=adjusted[name])
        for name, profile in plain.items()
    }


def _fit_profiles(fit: AdditiveFit, names: Sequence[str]) -> Profiles:
    """One session's sums from one fit: residual sums of squares, df shares, Rao's A."""
    variances, dfs = reviewer_residual_variances(fit)
    sums = np.where(dfs > 0.0, np.nan_to_num(variances) * dfs, 0.0)
    expectation = reviewer_noise_expectation(fit).tolist()
    return {
        name: ReviewerProfile(
            1,
            float(sums[index]),
            float(dfs[index]),
            {
                other: value
                for other, value in zip(names, expectation[index], strict=True)
                if value != 0.0
            },
        )
        for index, name in enumerate(names)
    }


def merge_profiles(
    base: Mapping[str, ReviewerProfile], extra: Mapping[str, ReviewerProfile]
) -> Profiles:
    merged = dict(base)
    for name, profile in extra.items():
        merged[name] = merged[name].merged(profile) if name in merged else profile
    return merged


def _usable_cell(record: Mapping[str, Any]) -> Cell | None:
    """The record's non-self scored cell of the review that counts (with its display slot
    when recorded as a non-negative integer), else ``None``."""
    score = record.get("score_value")
    if record.get("check_kind") is not None or record.get("is_self_review") or score is None:
        return None
    if not isinstance(score, int | float) or score != score:
        return None
    position = record.get("position")
    slot = position if isinstance(position, int) and not isinstance(position, bool) else None
    if slot is not None and slot < 0:
        slot = None
    return str(record["reviewer_id"]), str(record["model_id"]), float(score), slot


#: the record fields the profiles read (a stored line's keys, or a ReviewRecord's attributes)
PROFILE_FIELDS = (
    "score_value",
    "check_kind",
    "is_self_review",
    "reviewer_id",
    "model_id",
    "position",
)


def profile_fields(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The fields :func:`records_profiles` reads, from in-memory records (the append path
    of both stores; a rebuild reads them straight from the stored lines)."""
    return [{name: getattr(record, name) for name in PROFILE_FIELDS} for record in records]


def records_profiles(records: Sequence[Mapping[str, Any]]) -> Profiles:
    """Profiles of one session's records (the append path)."""
    cells = [cell for record in records if (cell := _usable_cell(record)) is not None]
    return session_profiles(cells)


def _store_key(status: os.stat_result) -> list[int]:
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _encode_one(profile: ReviewerProfile) -> list[Any]:
    encoded: list[Any] = [
        profile.sessions,
        profile.residual_sum_of_squares,
        profile.residual_df,
        dict(profile.expectation),
    ]
    if profile.slot_adjusted is not None:
        encoded.append(_encode_one(profile.slot_adjusted))
    return encoded


def _encode(profiles: Mapping[str, ReviewerProfile]) -> dict[str, list[Any]]:
    return {name: _encode_one(profile) for name, profile in sorted(profiles.items())}


def _decode_one(name: str, values: Sequence[Any], *, nested: bool = False) -> ReviewerProfile:
    sums = [float(values[1]), float(values[2])]
    expectation = {str(other): float(a) for other, a in values[3].items()}
    numbers = [*sums, *expectation.values()]
    if int(values[0]) < 0 or not all(math.isfinite(x) for x in numbers) or min(sums) < 0:
        raise ValueError(f"reviewer profile {name!r}: a sum is negative or not finite")
    if len(values) > 5 or (nested and len(values) > 4):
        raise ValueError(f"reviewer profile {name!r}: unexpected fields")
    slot_adjusted = _decode_one(name, values[4], nested=True) if len(values) == 5 else None
    return ReviewerProfile(int(values[0]), sums[0], sums[1], expectation, slot_adjusted)


def _decode(encoded: Mapping[str, Any]) -> Profiles:
    """Profiles from their JSON form; a count, sum or df that is negative or not finite
    (a damaged or hand-edited file) raises ``ValueError``, so the file is not used."""
    return {str(name): _decode_one(str(name), values) for name, values in encoded.items()}


def _write_base(
    store: Path, key: list[int], profiles: Mapping[str, ReviewerProfile], *, absorbs: bool
) -> None:
    """Write the base summary atomically (a temporary file, then ``os.replace``); when it
    ``absorbs`` the journal (compaction, under the writers' lock), drop the journal."""
    target = profile_path(store)
    payload = {"format": PROFILE_FORMAT, "store_key": key, "reviewers": _encode(profiles)}
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temporary, target)
    if absorbs:
        journal_path(store).unlink(missing_ok=True)


def _read_base(store: Path) -> tuple[list[int], Profiles] | None:
    try:
        payload = json.loads(profile_path(store).read_text(encoding="utf-8"))
        if payload.get("format") != PROFILE_FORMAT:
            return None
        return [int(part) for part in payload["store_key"]], _decode(payload["reviewers"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # missing or damaged: rebuilt from the records


@dataclass(frozen=True)
class _ChainRead:
    """What :func:`_chained` last read of one store in this process: the base file's and
    the journal's identity, how far into the journal, and the result there."""

    base_key: tuple[int, int, int]
    journal_inode: int
    offset: int
    key: list[int]
    profiles: Profiles


#: per store path: the last chain read, so a lookup parses only the journal's new lines
_CHAIN_READS: dict[str, _ChainRead] = {}


def _file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


def _chained(store: Path) -> tuple[list[int], Profiles, int] | None:
    """The base plus every journal entry that continues it: the store key the result
    describes, the profiles, and the journal's size in bytes. ``None`` without a base.

    Reads only the journal lines appended since this process last looked, when the base
    file is unchanged and the journal is the same file (a fold replaces both)."""
    base_key = _file_key(profile_path(store))
    journal_key = _file_key(journal_path(store))
    previous = _CHAIN_READS.get(str(store))
    if (
        previous is not None
        and previous.base_key == base_key
        and journal_key is not None
        and previous.journal_inode == journal_key[0]
        and journal_key[1] >= previous.offset
    ):
        key, profiles, offset = previous.key, previous.profiles, previous.offset
    else:
        base = _read_base(store)
        if base is None or base_key is None:
            return None
        (key, profiles), offset = base, 0
    try:
        with journal_path(store).open("rb") as handle:
            handle.seek(offset)
            tail = handle.read()
    except FileNotFoundError:
        return key, profiles, 0
    complete = tail[: tail.rfind(b"\n") + 1]  # a line still being written is not read
    for raw_line in complete.split(b"\n")[:-1]:
        try:
            entry = json.loads(raw_line)
            if [int(part) for part in entry["before"]] != key:
                continue  # an entry for another state of the store (before a rebuild)
            profiles = merge_profiles(profiles, _decode(entry["reviewers"]))
            key = [int(part) for part in entry["after"]]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            continue
    if journal_key is not None and base_key is not None:
        _CHAIN_READS[str(store)] = _ChainRead(
            base_key, journal_key[0], offset + len(complete), key, profiles
        )
    return key, profiles, offset + len(complete)


def merge_after_append(
    store: Path, before: os.stat_result, records: Sequence[Mapping[str, Any]]
) -> None:
    """Record one appended session's sums; called under the store's writer lock.

    One line appended to ``<store>.profiles.log`` with the store's key before and after
    the append (an append costs no rewrite: rewriting a file costs ~5 ms on ext4, which
    flushes a replaced file's data). A first session creates the base; a journal past
    :data:`JOURNAL_COMPACT_BYTES` is folded into the base when it chains. Entries that do
    not continue the base are ignored by readers, and a base that no longer matches the
    store is rebuilt by :func:`load_profiles`, outside the writers' lock.
    """
    after = _store_key(os.stat(store))
    contribution = records_profiles(records)
    if before.st_size == 0 and _read_base(store) is None:
        _write_base(store, after, contribution, absorbs=True)  # a new store's first session
        return
    entry = {"before": _store_key(before), "after": after, "reviewers": _encode(contribution)}
    descriptor = os.open(
        journal_path(store), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
    )
    try:
        line = (json.dumps(entry) + "\n").encode("utf-8")
        written = os.write(descriptor, line)
        size = os.fstat(descriptor).st_size
    finally:
        os.close(descriptor)
    if written != len(line) or size > JOURNAL_COMPACT_BYTES:
        chained = _chained(store)
        if chained is not None and chained[0] == after:
            _write_base(store, after, chained[1], absorbs=True)
        else:
            journal_path(store).unlink(missing_ok=True)  # stale: the next lookup rebuilds


def rebuild_profiles(store: Path) -> Profiles:
    """Profiles from every complete session of the store, written as a new base.

    Streams the store line by line up to its size at the start (memory bounded by one
    session, not the store). A session's lines are contiguous (one write per session);
    one whose ``session_n_records`` disagrees with the lines found (a crash mid-write) is
    left out, as the readers leave it out. Malformed lines are skipped.
    """
    status = os.stat(store)
    profiles: Profiles = {}
    current: str | None = None
    cells: list[Cell] = []
    found, expected = 0, None

    def finish() -> None:
        nonlocal profiles
        if current is not None and (expected is None or expected == found):
            profiles = merge_profiles(profiles, session_profiles(cells))

    remaining = status.st_size
    with store.open("rb") as handle:
        for raw_line in handle:
            remaining -= len(raw_line)
            if remaining < 0 or not raw_line.endswith(b"\n"):
                break  # written after we started, or a torn last line
            try:
                record = json.loads(raw_line)
                session = str(record["session_id"])
                cell = _usable_cell(record)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # malformed lines are the readers' business, not the profiles'
            if session != current:
                finish()
                current, cells, found = session, [], 0
                expected = record.get("session_n_records")
            found += 1
            if cell is not None:
                cells.append(cell)
    finish()
    # the journal stays: a writer may have chained a session onto this state meanwhile
    _write_base(store, _store_key(status), profiles, absorbs=False)
    return profiles


def fresh_profiles(store: Path) -> Profiles | None:
    """The profiles when base plus journal reach the store's current state (a stat and
    the journal's new lines: cheap enough for the event loop), ``{}`` for a missing
    store, else ``None`` (:func:`load_profiles` then waits or rebuilds)."""
    try:
        status = os.stat(store)
    except FileNotFoundError:
        return {}
    chained = _chained(store)
    if chained is not None and chained[0] == _store_key(status):
        return chained[1]
    return None


def load_profiles(store: Path) -> Profiles:
    """The store's reviewer profiles: base plus journal when they reach the store's
    current state, else rebuilt from the records. A missing store has no history.

    A lookup that races a writer (the store appended, its journal line not yet) looks
    again under the writers' lock before rebuilding.
    """
    for locked in (False, True):
        try:
            status = os.stat(store)
        except FileNotFoundError:
            return {}
        chained = _chained(store)
        if chained is not None and chained[0] == _store_key(status):
            return chained[1]
        if locked or chained is None:
            break
        if not _settled_under_lock(store):
            break
    return rebuild_profiles(store)


def _settled_under_lock(store: Path) -> bool:
    """Wait for any writer in its locked section to finish (take and release the lock)."""
    from llm_council.bias_audit.records.store_lock import store_write_lock

    lock_file = str(store.absolute()) + ".lock"
    if not os.path.exists(lock_file):
        return False

    def no_fallback() -> AbstractContextManager[object]:
        return nullcontext()

    try:
        with store_write_lock(lock_file, 10.0, no_fallback):
            return True
    except Exception:  # a lock we cannot take: rebuild rather than fail the session
        return False


def encode_profiles(profiles: Mapping[str, ReviewerProfile]) -> dict[str, list[Any]]:
    """Profiles in the sidecar's JSON form (``{reviewer: [sessions, rss, df, {A}, ...]}``),
    for another store's summary (the PostgreSQL store's profile tables)."""
    return _encode(profiles)


def decode_profiles(encoded: Mapping[str, Any]) -> Profiles:
    """Profiles from :func:`encode_profiles`' form; a damaged entry raises ``ValueError``
    (or ``KeyError``/``TypeError``/``IndexError`` for a wrong shape)."""
    return _decode(encoded)
