"""Write a file whole or not at all: a temporary file beside the target, then a rename.

Every output the tools write (reports, exports, simulated stores) goes through here, so a
crash or a bad input never leaves a half-written file where a complete one was expected.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from llm_council.errors import InputError


@contextmanager
def atomic_writer(path: str | Path, *, mode: int = 0o644) -> Iterator[TextIO]:
    """Yield a text stream; on success fsync it and rename it over ``path``, else delete it."""
    target = Path(path)
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


def write_text_atomically(path: str | Path, text: str) -> None:
    """``text`` to ``path``, whole or not at all; an unwritable path is one ``InputError``."""
    with _one_line_errors(path), atomic_writer(path) as stream:
        stream.write(text)


def write_json_atomically(path: str | Path, document: Any) -> None:
    """Indented JSON with a final newline; NaN and infinity are refused (not JSON)."""
    with _one_line_errors(path), atomic_writer(path) as stream:
        json.dump(document, stream, indent=2, allow_nan=False)
        stream.write("\n")


@contextmanager
def _one_line_errors(path: str | Path) -> Iterator[None]:
    """A directory, a full disk or no permission: one line naming the path (nothing was
    replaced), instead of a traceback from every command that writes an output."""
    try:
        yield
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", path=str(path)) from None
