"""Read a user-named input file safely: a regular file, of bounded size, as UTF-8 text.

Every file a user names on the command line (pairs, labels, label orders, judgment logs,
call caches) is read through here, so a directory, ``/dev/zero``, a FIFO, a file larger
than memory or 100,000 nested ``[`` is one line naming the file (and the line), never a
traceback, a hang or a machine out of memory (issue 37 A.10).

The file is opened without blocking and checked on the open descriptor, so a FIFO swapped
in after a check cannot hang the read. The size bound is :data:`DEFAULT_MAX_INPUT_BYTES`,
overridable with ``LLM_COUNCIL_MAX_INPUT_BYTES`` (bytes).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from llm_council.errors import ConfigError, InputError

MAX_INPUT_BYTES_VARIABLE = "LLM_COUNCIL_MAX_INPUT_BYTES"
#: 256 MiB: about a million judged pairs of a few hundred words each, far beyond any
#: labelling or calibration run, and a size Python reads into memory without trouble
DEFAULT_MAX_INPUT_BYTES = 256 * 1024 * 1024


def max_input_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The size bound: ``LLM_COUNCIL_MAX_INPUT_BYTES`` when set, else the default."""
    env = os.environ if environ is None else environ
    raw = env.get(MAX_INPUT_BYTES_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{MAX_INPUT_BYTES_VARIABLE} must be a positive integer, got {raw!r:.40}")
    return value


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def require_regular_file(path: str | Path) -> None:
    """One ``InputError`` unless ``path`` is a regular file (or a symlink to one), for a
    reader that streams a file of any size itself (``bias-import``): a FIFO would hang it,
    ``/dev/zero`` feed it one endless line."""
    _open_regular(path).close()


def read_input_bytes(path: str | Path) -> bytes:
    """The bytes of the regular file ``path``, at most the size bound; else one ``InputError``."""
    where = str(path)
    with _open_regular(path) as handle:
        status = os.fstat(handle.fileno())
        limit = max_input_bytes()
        if status.st_size > limit:
            raise InputError(
                f"is {status.st_size} bytes, over the {limit}-byte input limit "
                f"(raise it with {MAX_INPUT_BYTES_VARIABLE})",
                path=where,
            )
        try:
            content = handle.read(limit + 1)  # a file growing while read is bounded too
        except OSError as error:
            raise InputError(f"cannot read: {error.strerror or error}", path=where) from None
    if len(content) > limit:
        raise InputError(f"grew past the {limit}-byte input limit while read", path=where)
    return content


def _open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading without blocking, once its descriptor is a regular file."""
    where = str(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file not found", path=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=where) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", path=where) from None
    except ValueError:  # a NUL in the path: no file can have that name
        raise InputError("cannot read: the path holds a NUL character", path=repr(where)) from None
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise InputError("is a directory, not a file", path=where)
        raise InputError(f"is {_kind(status.st_mode)}, not a regular file", path=where)
    return os.fdopen(descriptor, "rb")


def decode_input(content: bytes, path: str | Path, encoding: str = "utf-8") -> str:
    """``content`` as text; invalid UTF-8 is one ``InputError`` naming the line."""
    try:
        return content.decode(encoding)
    except UnicodeDecodeError as error:
        line = content.count(b"\n", 0, error.start) + 1
        raise InputError(f"not UTF-8 text ({error.reason})", path=str(path), line=line) from None


def read_input_text(path: str | Path, encoding: str = "utf-8") -> str:
    """A user-named file's text: regular, bounded, UTF-8 (``utf-8-sig`` drops a BOM)."""
    return decode_input(read_input_bytes(path), path, encoding)


def parse_input_json(text: str, path: str | Path, line: int | None = None) -> Any:
    """``json.loads(text)``; malformed or too deeply nested JSON is one ``InputError``.

    ``line``: the line ``text`` came from (a JSONL line); for a whole document the error's
    own line is used.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON: {error.msg} (column {error.colno})",
            path=str(path),
            line=line if line is not None else error.lineno,
        ) from None
    except RecursionError:  # 100,000 "[" in a row
        raise InputError("invalid JSON: nested too deeply", path=str(path), line=line) from None


def load_input_json(path: str | Path) -> Any:
    """A user-named JSON document, read by :func:`read_input_text`."""
    return parse_input_json(read_input_text(path), path)
