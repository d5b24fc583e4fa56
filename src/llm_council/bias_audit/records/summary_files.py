"""The file side of the summaries beside a JSONL store: read, write, bound, forget.

The summaries (``<store>.profiles.json`` and ``.profiles.log``, ``<store>.adjustments.json``)
are caches of the records, sealed by :mod:`~llm_council.bias_audit.records.summary_seal`.
This module holds what both kinds need so that neither can be fooled by the file system:

- they are named after the *resolved* store (:func:`summarised_store`), so a symlink and
  its target share one set of summaries and one writer lock;
- reads never follow a symlink, never block on a FIFO and never load more than
  :data:`MAX_SUMMARY_BYTES` (:func:`read_summary`); the bytes are verified against their
  seal before any JSON is parsed
  (:func:`~llm_council.bias_audit.records.summary_seal.unsealed_json`), so hostile JSON
  (deep nesting that raised ``RecursionError``, ``NaN``) never reaches the parser;
- writes create files 0600 through ``mkstemp`` (``O_EXCL``: a pre-made symlink is never
  followed) and ``os.replace``, or append with ``O_NOFOLLOW``
  (:func:`write_summary_atomically`, :func:`append_summary_line`);
- sums are bounded by what the store's size allows (:func:`sum_bound`);
- a reader that rebuilt a summary keeps it in memory (:func:`remember_rebuilt`), since only
  the store's writer writes beside the store; the writer promotes it at its next append.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("llm_council.bias_audit")

#: the largest score magnitude a summary counts; a session with a larger (or non-finite)
#: score is left out of the summaries. Equal to the report's
#: ``report.load.raw_records.MAX_ABS_SCORE`` (the records layer sits below the report and
#: cannot import it; a test checks the two agree)
SCORE_BOUND = 1e6
#: the shortest line a summary counts as a scored cell (numbers as ids, no spaces): each
#: such cell costs the store at least this many bytes, which bounds counts and sums
SHORTEST_CELL_LINE = b'{"session_id":0,"reviewer_id":0,"model_id":0,"score_value":0}\n'
#: a summary file larger than this is not read (a 9-member council's sums are ~400 KiB)
MAX_SUMMARY_BYTES = 64 * 1024 * 1024
#: a temporary file of ours older than this is a crashed writer's, not a live one's
STALE_TEMPORARY_S = 60.0


class SummaryUnverifiable(ValueError):
    """A summary file exists but cannot be trusted (unreadable, unparseable, unsealed,
    implausible); the caller rebuilds it from the records."""


def summarised_store(store: str | Path) -> Path:
    """The store the summaries describe: its resolved path (a link and its target agree)."""
    return Path(os.path.realpath(store))


def max_cells(store_size: int) -> int:
    """How many scored cells a store of ``store_size`` bytes can hold at most."""
    return store_size // len(SHORTEST_CELL_LINE)


def sum_bound(store_size: int) -> float:
    r"""The largest magnitude any summed statistic of the store can honestly reach.

    Every summed quantity is a sum over the store's cells of a term no larger than
    :math:`(2B)^2` with :math:`B` = :data:`SCORE_BOUND`: a residual sum of squares is at
    most the cells' total sum of squares about their mean (:math:`\le n (2B)^2`, the
    additive model contains the mean); a df share or Rao's :math:`A_{r,o}` at most the
    trace of a projection (:math:`\le n`); the adjustment sums' cross-products of centred
    scores, slot indicators and log2 lengths (:math:`< 64`) at most :math:`(2B)^2` each.
    So :math:`4 B^2 n` with :math:`n` = :func:`max_cells` bounds them all.
    """
    return 4.0 * SCORE_BOUND**2 * max(max_cells(store_size), 1)


def read_summary(
    path: Path, max_bytes: int = MAX_SUMMARY_BYTES, *, offset: int = 0
) -> bytes | None:
    """The file's bytes from ``offset``; ``None`` when it does not exist. A symlink, a FIFO
    or anything but a regular file, or more than ``max_bytes`` to read, is
    :class:`SummaryUnverifiable`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:  # ELOOP: a symlink; EACCES; ...
        raise SummaryUnverifiable(f"cannot open: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise SummaryUnverifiable("not a regular file")
        if status.st_size - offset > max_bytes:
            raise SummaryUnverifiable(f"larger than {max_bytes} bytes")
        os.lseek(descriptor, offset, os.SEEK_SET)
        # one read of the expected size (no copy through a list of chunks), then chunks
        # only if the file grew or a read came back short
        first = os.read(descriptor, min(max(status.st_size - offset, 0) + 1, max_bytes + 1))
        chunks = [first]
        remaining = max_bytes + 1 - len(first)
        while remaining > 0 and first:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(descriptor)
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(raw) > max_bytes:
        raise SummaryUnverifiable(f"larger than {max_bytes} bytes")
    return raw


def temporary_prefix(path: Path) -> str:
    """Our temporary files for ``path`` are ``.<name>.<random>.tmp`` beside it."""
    return f".{path.name}."


def write_summary_atomically(path: Path, content: bytes) -> None:
    """Replace ``path`` with ``content``: a new 0600 file from ``mkstemp`` (``O_EXCL``, so a
    symlink planted at a predictable name is never followed), then ``os.replace`` (which
    replaces a symlink at ``path`` itself, never its target). Not fsynced: a summary is
    a cache checked against its store."""
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=temporary_prefix(path), suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def append_summary_line(path: Path, line: bytes) -> tuple[int, int]:
    """Append one line with one ``write`` (created 0600; ``O_NOFOLLOW``: a symlink at
    ``path`` raises instead of appending into its target); return (bytes written, size)."""
    descriptor = os.open(
        path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
    )
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path.name}: not a regular file")
        written = os.write(descriptor, line)
        return written, os.fstat(descriptor).st_size
    finally:
        os.close(descriptor)


#: the summaries whose temporary files are ours, by suffix after the store's name
_SUMMARY_SUFFIXES = (".profiles.json", ".adjustments.json")
_LAST_SWEEP: dict[str, float] = {}


def remove_stale_temporaries(store: Path, *, now: float | None = None) -> int:
    """Delete our temporary files beside ``store`` older than :data:`STALE_TEMPORARY_S`
    (left by a writer killed between ``mkstemp`` and ``os.replace``); call under the
    store's lock. Looks at most once a minute per store and process. Returns how many."""
    now = time.time() if now is None else now
    key = str(store)
    if now - _LAST_SWEEP.get(key, -STALE_TEMPORARY_S) < STALE_TEMPORARY_S:
        return 0
    _LAST_SWEEP[key] = now
    prefixes = tuple(f".{store.name}{suffix}." for suffix in _SUMMARY_SUFFIXES)
    # before mkstemp, the profiles base went through "<name>.profiles.json.<pid>.tmp"
    legacy = f"{store.name}.profiles.json."
    removed = 0
    try:
        entries = list(os.scandir(store.parent))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not name.endswith(".tmp") or not (name.startswith(prefixes) or name.startswith(legacy)):
            continue
        try:
            status = entry.stat(follow_symlinks=False)
            if now - status.st_mtime >= STALE_TEMPORARY_S:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    if removed:
        log.info("stale_summary_temporaries_removed", store=str(store), removed=removed)
    return removed


_WARNED: set[tuple[str, str]] = set()
_WARNED_GUARD = threading.Lock()


def warn_unverifiable(kind: str, store: Path, reason: str) -> None:
    """Log once per process and (kind, store) that a summary was not trusted and why."""
    with _WARNED_GUARD:
        if (kind, str(store)) in _WARNED:
            return
        _WARNED.add((kind, str(store)))
    log.warning("summary_unverifiable_rebuilt", kind=kind, store=str(store), reason=reason)


#: per (kind, resolved store): the store key a reader's rebuild describes, and its result
_REBUILT: dict[tuple[str, str], tuple[list[int], Any]] = {}


def remember_rebuilt(kind: str, store: Path, key: list[int], value: Any) -> None:
    """Keep a reader's rebuilt summary in memory (never beside the store: a reader does
    not write there), for later lookups and for the writer's next append."""
    _REBUILT[(kind, str(store))] = (list(key), value)


def rebuilt(kind: str, store: Path, key: list[int]) -> Any | None:
    """The summary rebuilt in this process for ``store`` at exactly ``key``, else None."""
    found = _REBUILT.get((kind, str(store)))
    if found is None or found[0] != list(key):
        return None
    return found[1]


def forget_rebuilt() -> None:
    """Drop every in-memory rebuild (tests; the tamper benchmark's cold lookups)."""
    _REBUILT.clear()
    with _WARNED_GUARD:
        _WARNED.clear()
