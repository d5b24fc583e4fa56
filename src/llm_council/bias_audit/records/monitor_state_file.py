"""Writing the monitor state's bytes: over the writer's own file in place, or as a new file.

The state (:mod:`.monitor_state`) is written after every session under the store's writer
lock. Both ways leave a file that verifies only if every byte is the new state's: the
sealed JSON is checked by its HMAC and the digests after it by their SHA-256, so a write
cut short is rebuilt from the records (ADR 0053, second and fourth amendments).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def overwrite_own_file(target: Path, payload: bytes) -> os.stat_result | None:
    """``payload`` written over ``target`` in place, its status after; ``None`` (nothing
    written) unless ``target`` is a regular file with one link, owned by this user, mode
    0600: what :func:`replace_file` creates.

    In place, not a new file renamed over the old one: ext4 flushes a file renamed
    *over* another, and the unlink + rename that avoids it is six system calls (about 20
    us hot, a fifth of the write; ADR 0053, fourth amendment). A write cut short (a
    crash, a full disk) leaves bytes of two states, which fail the seal or the digests'
    SHA-256 and are rebuilt, as a torn new file would be. ``O_NOFOLLOW``: a symlink is
    never followed; ``O_NONBLOCK``: a FIFO planted there fails to open instead of blocking."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(target, flags)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if (
            not stat.S_ISREG(status.st_mode)
            or status.st_nlink != 1
            or status.st_uid != os.geteuid()
            or stat.S_IMODE(status.st_mode) != 0o600
        ):
            return None
        view = memoryview(payload)
        written = 0
        while written < len(payload):
            written += os.pwrite(descriptor, view[written:], written)
        if status.st_size > len(payload):
            os.ftruncate(descriptor, len(payload))
        return os.fstat(descriptor)
    finally:
        os.close(descriptor)


def replace_file(target: Path, temporary: Path, payload: bytes) -> os.stat_result:
    """``payload`` as a new 0600 file at ``target`` (a temporary file renamed into place);
    whatever was there (an older writer's file, a symlink, a FIFO) is removed, never
    followed or written through."""
    temporary.unlink(missing_ok=True)  # a killed writer's, or a symlink: never followed
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o600)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)
        # unlink, then rename: ext4 flushes a file renamed *over* another (about 4 ms a
        # session here, 0.03 ms this way). Every reader of the state holds the writer lock
        # that the caller holds, so none sees the moment without a file; a crash in it
        # leaves no state, which is rebuilt. A symlink there is removed, never followed.
        target.unlink(missing_ok=True)
        os.rename(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return os.stat(target, follow_symlinks=False)


__all__ = ["overwrite_own_file", "replace_file"]
