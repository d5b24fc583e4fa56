"""Per-reviewer noise profiles of a JSONL store, kept in sealed summary files beside it.

The sums themselves (what a session contributes, how profiles merge, their JSON form) are
:mod:`~llm_council.bias_audit.records.profile_sums`'; this module keeps them beside the
store. ``<store>.profiles.json`` is the base (written atomically: ``mkstemp``, then
``os.replace``); ``<store>.profiles.log`` has one line per session appended since, written
by the store's writer under its lock (:func:`merge_after_append`). Each carries the store's
inode, size and mtime before and after, and a seal
(:mod:`~llm_council.bias_audit.records.summary_seal`: an HMAC of the kind, the resolved store
path and the body under a key outside the store's directory), so a lookup follows the chain
from the base and accepts it only when every link verifies and it ends at the store's
current state. Anything else (a store written by another program, compacted or edited; a
summary edited, copied from another store, truncated, unsealed, implausible or unparseable)
is rebuilt from the records (complete lines only, live-check reviews and sessions with
out-of-bound scores left out).

Who writes: only :func:`merge_after_append`, called by the store's writer under its lock.
:func:`load_profiles`, :func:`fresh_profiles` and :func:`rebuild_profiles` only read: a
rebuild is kept in this process's memory, and the writer's next append writes it beside
the store. The files are named after the resolved store, so a symlink and its target
share them.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_council.bias_audit.records.profile_sums import (
    PROFILE_FIELDS,
    PROFILE_FORMAT,
    UNKNOWN_SLOT,
    Cell,
    Profiles,
    ReviewerProfile,
    _decode,
    _encode,
    _usable_cell,
    decode_profiles,
    encode_profiles,
    merge_profiles,
    profile_fields,
    records_profiles,
    scores_in_bounds,
    session_profiles,
)
from llm_council.bias_audit.records.store_lock import wait_for_writers
from llm_council.bias_audit.records.store_sniff import STORE_SNIFF_BYTES, holds_records
from llm_council.bias_audit.records.summary_files import (
    SummaryUnverifiable,
    append_summary_line,
    max_cells,
    read_summary,
    rebuilt,
    remember_rebuilt,
    sum_bound,
    summarised_store,
    warn_unverifiable,
    write_summary_atomically,
)
from llm_council.bias_audit.records.summary_seal import sealed_json, unsealed_json
from llm_council.errors import InputError

__all__ = [
    "JOURNAL_COMPACT_BYTES",
    "JOURNAL_SUFFIX",
    "PROFILE_FIELDS",
    "PROFILE_FORMAT",
    "PROFILE_SUFFIX",
    "UNKNOWN_SLOT",
    "Cell",
    "HistoryStoreError",
    "Profiles",
    "ReviewerProfile",
    "decode_profiles",
    "encode_profiles",
    "fresh_profiles",
    "journal_path",
    "load_profiles",
    "merge_after_append",
    "merge_profiles",
    "profile_fields",
    "profile_path",
    "rebuild_profiles",
    "records_profiles",
    "scores_in_bounds",
    "session_profiles",
]

PROFILE_SUFFIX = ".profiles.json"
JOURNAL_SUFFIX = ".profiles.log"
#: the seal's kinds: a base and a journal line cannot stand in for each other
BASE_KIND = "profiles.json"
JOURNAL_KIND = "profiles.log"
#: past this size the journal is folded into the base (a five-member session's line is about
#: 1 KiB: some 30 sessions), so a lookup never parses more than that (~0.3 ms) and the
#: base's ~5 ms rewrite costs an append about 0.2 ms on average
JOURNAL_COMPACT_BYTES = 32 * 1024


class HistoryStoreError(InputError, ValueError):
    """``history=`` names no readable record store (missing, not a regular file, not a
    store). A ``ValueError`` too, so the middleware's "history not read" path catches it."""


def profile_path(store: Path) -> Path:
    """The base summary: ``<resolved store>.profiles.json``."""
    return _base_file(summarised_store(store))


def journal_path(store: Path) -> Path:
    """The journal of sessions appended since the base: ``<resolved store>.profiles.log``."""
    return _journal_file(summarised_store(store))


def _base_file(real: Path) -> Path:
    return real.with_name(real.name + PROFILE_SUFFIX)


def _journal_file(real: Path) -> Path:
    return real.with_name(real.name + JOURNAL_SUFFIX)


def _store_key(status: os.stat_result) -> list[int]:
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _key_of(value: Any) -> list[int]:
    """A store key from a summary: three non-negative integers, else ``ValueError``."""
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError("a store key is not three numbers")
    if not all(type(part) is int and part >= 0 for part in value):
        raise ValueError("a store key is not three non-negative integers")
    return list(value)


def _write_base(
    real: Path, key: list[int], profiles: Mapping[str, ReviewerProfile], *, absorbs: bool
) -> None:
    """Write the sealed base atomically; when it ``absorbs`` the journal (a fold or a new
    base, under the writers' lock), drop the journal. Without a sealing key nothing is
    written (readers rebuild)."""
    body = {"format": PROFILE_FORMAT, "store_key": key, "reviewers": _encode(profiles)}
    document = sealed_json(BASE_KIND, real, body, resolved=True)
    if document is not None:
        write_summary_atomically(_base_file(real), document)
    if absorbs or document is None:
        _journal_file(real).unlink(missing_ok=True)


def _read_base(real: Path, bound: float) -> tuple[list[int], Profiles] | None:
    """The sealed base's store key and profiles; ``None`` when there is no base;
    :class:`SummaryUnverifiable` when there is one that cannot be trusted."""
    raw = read_summary(_base_file(real))
    if raw is None:
        return None
    body = unsealed_json(BASE_KIND, real, raw, resolved=True)
    if body is None:
        raise SummaryUnverifiable("the base's seal does not verify")
    if body.get("format") != PROFILE_FORMAT:
        raise SummaryUnverifiable(f"the base's format is not {PROFILE_FORMAT}")
    try:
        return _key_of(body["store_key"]), _decode(body["reviewers"], bound)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise SummaryUnverifiable(f"the base is implausible: {error}") from None


@dataclass(frozen=True)
class _ChainRead:
    """What :func:`_chained` last read of one store in this process: the base file's and
    the journal's identity, how far into the journal, and the result there."""

    base_key: tuple[int, int, int]
    journal_inode: int
    offset: int
    key: list[int]
    profiles: Profiles


@dataclass(frozen=True)
class _Chain:
    """Base plus journal: the store key they reach, the profiles there, and how many
    journal lines could not be trusted (a forged or copied line: the chain stops there)."""

    key: list[int]
    profiles: Profiles
    distrusted_lines: int


#: per resolved store: the last chain read, so a lookup verifies only the journal's new lines
_CHAIN_READS: dict[str, _ChainRead] = {}


def _file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


def _chained(real: Path, store_size: int) -> _Chain | None:
    """The sealed base plus every sealed journal entry that continues it; ``None`` without
    a base; :class:`SummaryUnverifiable` for a base that cannot be trusted.

    Verifies only the journal lines appended since this process last looked, when the base
    file is unchanged and the journal is the same file (a fold replaces both)."""
    bound = sum_bound(store_size)
    base_key = _file_key(_base_file(real))
    journal_key = _file_key(_journal_file(real))
    previous = _CHAIN_READS.get(str(real))
    if (
        previous is not None
        and previous.base_key == base_key
        and journal_key is not None
        and previous.journal_inode == journal_key[0]
        and journal_key[1] >= previous.offset
    ):
        key, profiles, offset = previous.key, previous.profiles, previous.offset
    else:
        base = _read_base(real, bound)
        if base is None or base_key is None:
            return None
        (key, profiles), offset = base, 0
    tail = read_summary(_journal_file(real), offset=offset)
    if tail is None:
        return _Chain(key, profiles, 0)
    complete = tail[: tail.rfind(b"\n") + 1]  # a line still being written is not read
    distrusted = 0
    for raw_line in complete.split(b"\n")[:-1]:
        try:
            body = unsealed_json(JOURNAL_KIND, real, raw_line, resolved=True)
            if body is None:
                distrusted += 1
                continue
            if _key_of(body["before"]) != key:
                continue  # an entry for another state of the store (before a rebuild)
            contribution = _decode(body["reviewers"], bound)
            after = _key_of(body["after"])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            distrusted += 1
            continue
        profiles, key = merge_profiles(profiles, contribution), after
    if journal_key is not None and base_key is not None and not distrusted:
        _CHAIN_READS[str(real)] = _ChainRead(
            base_key, journal_key[0], offset + len(complete), key, profiles
        )
    return _Chain(key, profiles, distrusted)


def _plausible(profiles: Profiles, store_size: int) -> bool:
    """No reviewer counts more sessions than the store has room for scored cells."""
    most = max_cells(store_size)
    return all(profile.sessions <= most for profile in profiles.values())


def _verified_chain(real: Path, status: os.stat_result) -> tuple[_Chain | None, bool]:
    """The chain when it can be trusted (``None`` otherwise, with a warning once), and
    whether a base exists at all."""
    try:
        chain = _chained(real, status.st_size)
    except SummaryUnverifiable as error:
        warn_unverifiable("profiles", real, str(error))
        return None, True
    if chain is None:
        return None, False
    if chain.distrusted_lines:
        warn_unverifiable("profiles", real, f"{chain.distrusted_lines} journal line(s) unsealed")
    if not _plausible(chain.profiles, status.st_size):
        warn_unverifiable("profiles", real, "more sessions than the store can hold")
        return None, True
    return chain, True


def _current(real: Path, status: os.stat_result) -> tuple[Profiles | None, bool]:
    """The profiles describing the store at ``status`` (the verified chain, else this
    process's rebuild at that state), and whether a summary exists beside the store."""
    chain, exists = _verified_chain(real, status)
    if chain is not None and chain.key == _store_key(status):
        return chain.profiles, exists
    return rebuilt("profiles", real, _store_key(status)), exists


def merge_after_append(
    store: Path, before: os.stat_result, records: Sequence[Mapping[str, Any]]
) -> None:
    """Record one appended session's sums; the only function here that writes, called by
    the store's writer under its lock.

    When the summary describes the store as it was ``before`` the append, one sealed line
    goes to ``<store>.profiles.log`` (no rewrite: rewriting a file costs ~5 ms on ext4,
    which flushes a replaced file's data); a journal past :data:`JOURNAL_COMPACT_BYTES` is
    folded into the base. When only this process's rebuild describes it (a reader rebuilt a
    stale summary), a new base is written from it. A new store's first session starts the
    base. Otherwise the summary stays stale and nothing is written.
    """
    real = summarised_store(store)
    after = _store_key(os.stat(real))
    contribution = records_profiles(records)
    if before.st_size == 0:
        _write_base(real, after, contribution, absorbs=True)  # a new store's first session
        return
    chain, _ = _verified_chain(real, before)
    if chain is None or chain.key != _store_key(before):
        promoted = rebuilt("profiles", real, _store_key(before))
        if promoted is not None:
            _write_base(real, after, merge_profiles(promoted, contribution), absorbs=True)
        return
    body = {"before": _store_key(before), "after": after, "reviewers": _encode(contribution)}
    document = sealed_json(JOURNAL_KIND, real, body, resolved=True)
    if document is None:
        return
    line = document + b"\n"
    written, size = append_summary_line(_journal_file(real), line)
    if written != len(line) or size > JOURNAL_COMPACT_BYTES:
        _write_base(real, after, merge_profiles(chain.profiles, contribution), absorbs=True)


def rebuild_profiles(store: Path) -> Profiles:
    """Profiles from every complete session of the store, kept in memory (never written
    beside the store: that is the writer's, at its next append).

    Streams the store line by line up to its size at the start (memory bounded by one
    session, not the store). A session's lines are contiguous (one write per session);
    one whose ``session_n_records`` disagrees with the lines found (a crash mid-write) is
    left out, as the readers leave it out, and so is one with a score that is not finite
    or beyond the score bound. Malformed lines are skipped.
    """
    real = summarised_store(store)
    status = os.stat(real)
    profiles: Profiles = {}
    current: str | None = None
    cells: list[Cell] = []
    found, expected = 0, None

    def finish() -> None:
        nonlocal profiles
        if current is not None and (expected is None or expected == found):
            profiles = merge_profiles(profiles, session_profiles(cells))

    remaining = status.st_size
    with real.open("rb") as handle:
        for raw_line in handle:
            remaining -= len(raw_line)
            if remaining < 0 or not raw_line.endswith(b"\n"):
                break  # written after we started, or a torn last line
            try:
                record = json.loads(raw_line)
                session = str(record["session_id"])
                cell = _usable_cell(record)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue  # malformed lines are the readers' business, not the profiles'
            if session != current:
                finish()
                current, cells, found = session, [], 0
                expected = record.get("session_n_records")
            found += 1
            if cell is not None:
                cells.append(cell)
    finish()
    remember_rebuilt("profiles", real, _store_key(status), profiles)
    return profiles


def fresh_profiles(store: Path) -> Profiles | None:
    """The profiles when the sealed base plus journal (or this process's rebuild) describe
    the store's current state (a stat and the journal's new lines: cheap enough for the
    event loop), ``{}`` for a missing store, else ``None`` (:func:`load_profiles` then
    waits or rebuilds). Reads only."""
    real = summarised_store(store)
    try:
        status = os.stat(real)
    except FileNotFoundError:
        return {}
    return _current(real, status)[0]


def _history_status(store: Path, real: Path) -> os.stat_result:
    """The store's status; :class:`HistoryStoreError` when there is no regular file."""
    try:
        status = os.stat(real)
    except FileNotFoundError:
        raise HistoryStoreError("history store does not exist", path=str(store)) from None
    except OSError as error:
        raise HistoryStoreError(f"cannot read history: {error.strerror}", path=str(store)) from None
    if not stat.S_ISREG(status.st_mode):
        raise HistoryStoreError(
            "history is not a regular file (a JSONL record store)", path=str(store)
        )
    return status


def load_profiles(store: Path) -> Profiles:
    """The store's reviewer profiles: the sealed base plus journal when they reach the
    store's current state, else rebuilt from the records (in memory: a reader never writes
    beside the store). Reads only.

    Raises :class:`HistoryStoreError` for a path that does not exist, is not a regular file,
    or holds no record in its first 64 KiB (someone's notes: reading them would silently
    mean no history). A lookup that races a writer (the store appended, its journal line
    not yet) looks again under the writers' lock before rebuilding.
    """
    real = summarised_store(store)
    for locked in (False, True):
        status = _history_status(store, real)
        profiles, exists = _current(real, status)
        if profiles is not None:
            return profiles
        if locked or not exists or not wait_for_writers(real):
            break
    try:
        is_store = holds_records(real)
    except OSError as error:
        raise HistoryStoreError(f"cannot read history: {error.strerror}", path=str(store)) from None
    if not is_store:
        raise HistoryStoreError(
            f"history is not a bias-audit record store (no line of its first "
            f"{STORE_SNIFF_BYTES // 1024} KiB is a record)",
            path=str(store),
        )
    return rebuild_profiles(real)
