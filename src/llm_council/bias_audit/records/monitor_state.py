"""The anytime monitor's state beside a JSONL store: ``<store>.monitor.json``.

The file holds, per reviewer and bias, the running sums of
:class:`~llm_council.stats.monitor.anytime_monitor.MonitorSums`, the number of sessions folded in
and a digest of each one's ``session_id`` (so no session counts twice), the monitor's
settings, and how far into the store it has read: the store's inode, a byte offset and a
SHA-256 of the 4 KiB before it. It is one line of sealed JSON (:mod:`.summary_seal`, kind
``"monitor"``), a newline, and the digests as raw bytes, bound to the seal by their
SHA-256 in the JSON; written 0600 through a temporary file renamed into place under the
store's writer lock (:mod:`.store_lock`), which every reader of the state takes too.

Bringing it up to date (:func:`current_monitor`), under the lock: a state that verifies,
has the requested settings and still matches the store's bytes before its offset reads
only the store's tail past the offset; anything else (missing, unsealed or forged, other
settings, a store replaced, truncated or rewritten) is rebuilt from the first byte. Both
paths fold the same way (:mod:`.monitor_fold`), so a rebuild reproduces the online path
exactly.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import functools
import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from filelock import FileLock, Timeout

from llm_council.bias_audit.records.monitor_append import (
    FINGERPRINT_BYTES,
    AppendedSession,
    fold_appended,
)
from llm_council.bias_audit.records.monitor_body import (
    state_body,
    state_from_body,
    sums_read_back,
)
from llm_council.bias_audit.records.monitor_fold import MonitorState, fold_range
from llm_council.bias_audit.records.monitor_state_file import overwrite_own_file, replace_file
from llm_council.bias_audit.records.store_lock import store_lock_file, store_write_lock
from llm_council.bias_audit.records.summary_seal import sealed_json, summary_key, unsealed_json
from llm_council.errors import RecordError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

SEAL_KIND = "monitor"


class _Unset(enum.Enum):
    """The sealing key not looked up yet (``None`` is a key's absence, so not a default)."""

    KEY = 0


#: the keyword default of ``key``: look the sealing key up (:func:`summary_key`)
LOOK_UP = _Unset.KEY
LOCK_TIMEOUT_S = 30.0


def state_path(store: Path) -> Path:
    """``<store>.monitor.json``."""
    return store.with_name(store.name + ".monitor.json")


@functools.lru_cache(maxsize=64)
def _state_names(store_text: str, cwd: str) -> tuple[Path, str]:
    """The state file's path and its absolute name (the key of :data:`_VERIFIED`), for a
    store named ``store_text`` seen from ``cwd``: path arithmetic done once per store,
    not three times an update."""
    target = state_path(Path(store_text))
    return target, str(Path(cwd) / target)


def _lock_file(store: Path) -> str:
    """The store's writer lock: the same file :mod:`.jsonl_store` locks (named after the
    resolved store, so a symlink to the store and the store share it)."""
    return store_lock_file(store)


def _fingerprint(handle: Any, offset: int) -> str:
    start = max(0, offset - FINGERPRINT_BYTES)
    handle.seek(start)
    return hashlib.sha256(handle.read(offset - start)).hexdigest()


# -- the file ---------------------------------------------------------------------------


#: the last state this process read or wrote, per state file, under the file's identity
#: (device, inode, size, mtime, ctime: ctime cannot be set back by an unprivileged
#: writer) and the sealing key: a file that is still the one verified or written here is
#: not parsed and verified again (about 5 ms a session at 5 members)
_VERIFIED: dict[str, tuple[tuple[Any, ...], MonitorState]] = {}


def _identity(status: os.stat_result, key: bytes | None) -> tuple[Any, ...]:
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
        key,
    )


def read_state(
    store: Path, *, resolved: str | None = None, key: bytes | None | _Unset = LOOK_UP
) -> MonitorState | None:
    """The state file's content when it is a regular file (not a symlink) whose seal
    verifies for this store; ``None`` otherwise. A file this process verified or wrote,
    unchanged since (one ``lstat``), is not read again. ``resolved`` and ``key``: the
    store's resolved path and the sealing key when the caller has them (an update looks
    each up once)."""
    target, cache_key = _state_names(os.fspath(store), os.getcwd())
    if key is LOOK_UP:
        key = summary_key()
    cached = _VERIFIED.get(cache_key)
    if cached is not None:
        try:
            if cached[0] == _identity(os.stat(target, follow_symlinks=False), key):
                return cached[1]
        except OSError:
            return None
    try:
        # O_NONBLOCK: a FIFO planted at the path would block the open until a writer came
        descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            raw = handle.read()
    except OSError:
        return None
    finally:
        os.close(descriptor)
    sealed, newline, digests_raw = raw.partition(b"\n")  # JSON text holds no raw newline
    store_name = resolved if resolved is not None else os.path.realpath(store)
    body = unsealed_json(SEAL_KIND, store_name, sealed, resolved=True)
    state = None if body is None or not newline else state_from_body(body, digests_raw)
    if state is not None:
        _VERIFIED[cache_key] = (_identity(status, key), state)
    return state


def temporary_path(store: Path) -> Path:
    """``<store>.monitor.json.tmp``: one fixed name, written only under the writer lock, so
    a file a killed writer left there is replaced by the next write, never accumulated."""
    target = state_path(store)
    return target.with_name(target.name + ".tmp")


def write_state(
    store: Path,
    state: MonitorState,
    *,
    resolved: str | None = None,
    key: bytes | None | _Unset = LOOK_UP,
) -> bool:
    """Write the sealed state 0600 (call under the store's writer lock); ``False`` when no
    sealing key is available (nothing is written: an unsealed file would not verify) or
    the sums are not finite (they would not read back). ``resolved`` and ``key``: as for
    :func:`read_state`.

    The file this process's kind of writer left (regular, one link, ours, 0600) is
    overwritten in place; anything else at the path is replaced by a new file
    (:mod:`.monitor_state_file`). No ``fsync``: the state is a cache of the records, checked by
    its seal and the store's fingerprint on every read, so a state lost or torn by a crash
    is rebuilt (ADR 0053, amendments). The body is encoded once
    (:func:`sealed_json`)."""
    if not sums_read_back(state):
        return False  # it would not read back: the next look rebuilds from the records
    if key is LOOK_UP:
        key = summary_key()
    store_name = resolved if resolved is not None else os.path.realpath(store)
    sealed = sealed_json(SEAL_KIND, store_name, state_body(state), resolved=True)
    if sealed is None:
        return False
    payload = sealed + b"\n" + state.digest_log
    target, cache_key = _state_names(os.fspath(store), os.getcwd())
    _VERIFIED.pop(cache_key, None)  # whatever happens below, the old identity is stale
    status = overwrite_own_file(target, payload)
    if status is None:
        status = replace_file(target, temporary_path(store), payload)
    _VERIFIED[cache_key] = (_identity(status, key), state)
    return True


# -- bringing it up to date -------------------------------------------------------------


class MonitorRebuilding(RecordError):
    """The state has to be rebuilt from more of the store than the caller allows now."""


def _usable(state: MonitorState | None, settings: MonitorSettings, handle: Any) -> bool:
    if state is None or state.settings != settings:
        return False
    status = os.fstat(handle.fileno())
    if state.inode != status.st_ino or state.offset > status.st_size:
        return False
    return _fingerprint(handle, state.offset) == state.fingerprint


def _open_store(store: Path) -> Any:
    try:
        handle = store.open("rb")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RecordError(f"{store}: cannot read the record store: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise RecordError(f"{store}: the record store must be a regular file")
    return handle


class MonitorUpdate(NamedTuple):
    """A state brought up to date, whether it differs from the file's, and how: ``"memory"``
    (the appended session folded from memory), ``"unchanged"``, ``"read"`` (the tail read
    and parsed) or ``"rebuilt"`` (from the first byte)."""

    state: MonitorState
    changed: bool
    path: str


def updated_state(
    store: Path,
    settings: MonitorSettings,
    *,
    max_read_bytes: int | None = None,
    appended: AppendedSession | None = None,
) -> tuple[MonitorState, bool]:
    """The state brought up to the store's current end, and whether it differs from the
    file's (rebuilt from the first byte, or moved on). Call under the writer lock. Raises
    :class:`MonitorRebuilding` when more than ``max_read_bytes`` would have to be read.
    ``appended``: the session this process just appended, folded from memory when the
    tail is exactly its lines (:mod:`.monitor_append`)."""
    update = _update(store, settings, max_read_bytes, appended)
    return update.state, update.changed


def _update(
    store: Path,
    settings: MonitorSettings,
    max_read_bytes: int | None,
    appended: AppendedSession | None,
    resolved: str | None = None,
    key: bytes | None | _Unset = LOOK_UP,
) -> MonitorUpdate:
    handle = _open_store(store)
    if handle is None:
        return MonitorUpdate(MonitorState(settings=settings), False, "unchanged")
    with handle:
        end = os.fstat(handle.fileno()).st_size
        state = read_state(store, resolved=resolved, key=key)
        rebuilt = not _usable(state, settings, handle)
        if not rebuilt and state is not None and appended is not None:
            folded = fold_appended(state, handle, end, appended)
            if folded is not None:
                moved = folded is not state
                return MonitorUpdate(folded, moved, "memory" if moved else "unchanged")
        if rebuilt or state is None:
            state = MonitorState(settings=settings, inode=os.fstat(handle.fileno()).st_ino)
        if max_read_bytes is not None and end - state.offset > max_read_bytes:
            raise MonitorRebuilding(
                f"{store}: the monitor needs {end - state.offset} bytes of the store read "
                "(rebuilding in the background)"
            )
        start = state.offset
        if end > start:
            state, offset = fold_range(state, handle, start, end)
            state = replace(state, offset=offset, fingerprint=_fingerprint(handle, offset))
        elif rebuilt:
            state = replace(state, fingerprint=_fingerprint(handle, state.offset))
    changed = rebuilt or state.offset != start
    how = "rebuilt" if rebuilt else "read" if changed else "unchanged"
    return MonitorUpdate(state, changed, how)


def current_monitor(
    store: Path,
    settings: MonitorSettings | None = None,
    *,
    save: bool = True,
    max_read_bytes: int | None = None,
) -> MonitorState:
    """The monitor of ``store`` up to its last complete session, under the store's writer
    lock; written back when it moved and ``save`` (a state for settings other than the
    saved one's is computed with ``save=False`` by callers that must not replace it).

    The file is a cache: when it cannot be written (a full disk, a read-only directory)
    the state computed is still returned, and the next call rebuilds. A store whose lock
    cannot even be created (a read-only directory) is read without it and nothing is saved.
    """
    return update_monitor(store, settings, save=save, max_read_bytes=max_read_bytes).state


def update_monitor(
    store: Path,
    settings: MonitorSettings | None = None,
    *,
    save: bool = True,
    max_read_bytes: int | None = None,
    appended: AppendedSession | None = None,
) -> MonitorUpdate:
    """:func:`current_monitor` after this process appended ``appended`` (folded from memory
    when the tail is exactly its lines, else read), with how the state was brought up."""
    wanted = settings or MonitorSettings()
    key = summary_key()  # once an update (it reads the environment and a key file)
    lock_file = _lock_file(store)
    # the resolved store the lock is named after (``<resolved>.lock``): the seal binds
    # the state to it, and resolving it once saves two ``realpath`` calls an update
    resolved = lock_file.removesuffix(".lock")
    try:
        with store_write_lock(lock_file, LOCK_TIMEOUT_S, lambda: FileLock(lock_file)):
            update = _update(store, wanted, max_read_bytes, appended, resolved, key)
            if save and update.changed:
                with contextlib.suppress(OSError):  # left stale or missing: rebuilt next time
                    write_state(store, update.state, resolved=resolved, key=key)
    except Timeout as error:
        raise RecordError(
            f"{store}: could not lock the record store within {LOCK_TIMEOUT_S:g} s"
        ) from error
    except (PermissionError, OSError) as error:
        if not _read_only(error) or not os.path.exists(store):
            raise RecordError(f"{store}: monitor state: {error.strerror or error}") from error
        update = _update(store, wanted, max_read_bytes, appended, resolved, key)
    return update


def _read_only(error: OSError) -> bool:
    """The lock file could not be created where the store is: read without it."""
    return error.errno in (errno.EACCES, errno.EPERM, errno.EROFS)


__all__ = [
    "MonitorRebuilding",
    "MonitorState",
    "MonitorUpdate",
    "current_monitor",
    "read_state",
    "state_body",
    "state_path",
    "update_monitor",
    "updated_state",
    "write_state",
]
