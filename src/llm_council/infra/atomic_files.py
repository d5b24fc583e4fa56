"""Write an output whole or not at all, without ever replacing what is not a regular file.

Every output the tools write (reports, exports, simulated stores) goes through here, so a
crash or a bad input never leaves a half-written file where a complete one was expected,
and ``--out /dev/stdout``, ``--out /dev/null``, a FIFO or ``-`` receive a stream instead
of being replaced by a regular file (issue 37 A.1, ADR 0055).

The output-path rule (:func:`output_kind`):

* ``-``: standard output, streamed (no temporary file).
* a character device, a FIFO or a socket (after following symlinks, so ``/dev/stdout``
  counts): opened and streamed; atomicity means nothing for a stream.
* a directory: one-line error.
* a path under ``/dev/`` or ``/proc/`` (``/dev/stdout`` redirected to a file, ``/dev/fd/3``):
  streamed, so the shell's open file receives the output instead of a new inode.
* a symlink to a regular file: written through: the file it points at is replaced
  atomically (temporary file beside *that* file) and the link is kept.
* a dangling symlink: one-line error (we do not create a file somewhere the user did not
  name).
* a regular file or nothing: temporary file beside it, fsync, rename over it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TextIO

from llm_council.errors import InputError

STDOUT_NAME = "-"
"""The output path that means standard output."""

OutputKind = Literal["stdout", "stream", "file"]


def output_kind(path: str | Path) -> tuple[OutputKind, Path]:
    """How ``path`` is written and the path actually written, per the module's rule.

    Raises ``InputError`` (one line naming the path) for a directory or a dangling symlink.
    """
    if str(path) == STDOUT_NAME:
        return "stdout", Path(STDOUT_NAME)
    target = Path(path)
    try:
        followed = os.stat(target)
    except FileNotFoundError:
        if target.is_symlink():
            raise InputError(
                f"refusing to write through a dangling symlink (to {os.readlink(target)!r})",
                path=str(path),
            ) from None
        return "file", target
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", path=str(path)) from None
    except ValueError:  # a NUL in the path: no file can have that name
        raise InputError(
            "cannot write: the path holds a NUL character", path=repr(str(path))
        ) from None
    mode = followed.st_mode
    if stat.S_ISDIR(mode):
        raise InputError("cannot write: Is a directory", path=str(path))
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "stream", target
    if not stat.S_ISREG(mode):  # a block device: never ours to write
        raise InputError(
            "refusing to write: not a regular file, character device or FIFO", path=str(path)
        )
    if target.absolute().parts[1:2] in (("dev",), ("proc",)):
        return "stream", target
    if target.is_symlink():
        return "file", target.resolve()
    return "file", target


@contextmanager
def atomic_writer(path: str | Path, *, mode: int = 0o644) -> Iterator[TextIO]:
    """Yield a text stream for ``path`` written by the module's output-path rule.

    A regular file (or a new one) is written to a temporary file beside it, fsynced and
    renamed over it on success, deleted on failure; a stream target is written directly.
    """
    kind, target = output_kind(path)
    if kind == "stdout":
        yield sys.stdout
        sys.stdout.flush()
        return
    if kind == "stream":
        with open(target, "w", encoding="utf-8") as stream:
            yield stream
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_name, mode)  # mkstemp creates 0600; outputs are ordinary files
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def writes_to_stdout(path: str | Path | None) -> bool:
    """Whether ``path`` is ``-`` (standard output), so a command prints its summary to stderr."""
    return path is not None and str(path) == STDOUT_NAME


def write_text_atomically(path: str | Path, text: str) -> None:
    """``text`` to ``path``, whole or not at all; an unwritable path is one ``InputError``."""
    with _one_line_errors(path), atomic_writer(path) as stream:
        stream.write(text)


def write_json_atomically(path: str | Path, document: Any) -> None:
    """Indented JSON with a final newline; NaN and infinity are refused (not JSON)."""
    text = json.dumps(document, indent=2, allow_nan=False) + "\n"  # refused before any write
    with _one_line_errors(path), atomic_writer(path) as stream:
        stream.write(text)


@contextmanager
def _one_line_errors(path: str | Path) -> Iterator[None]:
    """A directory, a full disk or no permission: one line naming the path (nothing was
    replaced), instead of a traceback from every command that writes an output."""
    try:
        yield
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", path=str(path)) from None
