"""Named numpy arrays as bytes for a sealed summary file, and back, without pickling.

A section's summary (:mod:`~llm_council.bias_audit.report.analyses.incremental_section`)
is JSON metadata plus named arrays. The arrays travel as raw little-endian bytes after the
file's sealed JSON line; the JSON lists each one (name, kind, shape, offset, length) and
the SHA-256 of all the bytes, so the seal covers them. Only a few kinds are accepted
(floats, integers, booleans and UTF-8 strings). A string array travels dictionary-coded:
its distinct strings as UTF-8 bytes with their end offsets (an id with a newline or a NUL
survives unchanged), then one code per element, so a session id repeated once per
reviewer is encoded and decoded once, not once per row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

#: the numeric kinds a payload may hold, by their name in the file
NUMERIC_KINDS = {"f8": "<f8", "i8": "<i8", "u8": "<u8", "b1": "|b1"}
STRING_KIND = "str"
#: the most elements one array may declare (a bound on what a hostile file can make us allocate)
MAX_ELEMENTS = 1 << 28


def _kind_of(values: np.ndarray) -> str:
    """The file kind of ``values`` (integers widen to 64 bits, floats to doubles)."""
    kinds = {"U": STRING_KIND, "O": STRING_KIND, "b": "b1", "f": "f8", "u": "u8", "i": "i8"}
    if values.dtype.kind not in kinds:
        raise ValueError(f"array of dtype {values.dtype} cannot be saved")
    return kinds[values.dtype.kind]


def _string_bytes(values: np.ndarray) -> tuple[bytes, int]:
    """(the dictionary-coded bytes of ``values``, how many distinct strings)."""
    flat = values.ravel()
    if flat.dtype.kind == "O":
        flat = np.asarray([str(value) for value in flat.tolist()], dtype=str)
    distinct, codes = np.unique(flat, return_inverse=True)
    encoded = [str(value).encode("utf-8") for value in distinct.tolist()]
    ends = np.cumsum([len(item) for item in encoded], dtype=np.int64)
    raw = (
        ends.astype("<i8").tobytes()
        + b"".join(encoded)
        + np.asarray(codes, dtype="<i8").reshape(-1).tobytes()
    )
    return raw, int(distinct.size)


def encode_arrays(arrays: Mapping[str, np.ndarray]) -> tuple[list[dict[str, Any]], bytes]:
    """The arrays' directory (for the JSON) and their concatenated bytes."""
    directory: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(arrays):
        values = np.asarray(arrays[name])
        kind = _kind_of(values)
        entry: dict[str, Any] = {"name": name, "kind": kind}
        if kind == STRING_KIND:
            raw, entry["distinct"] = _string_bytes(values)
        else:
            raw = np.ascontiguousarray(values, dtype=NUMERIC_KINDS[kind]).tobytes()
        entry.update(
            {"shape": [int(size) for size in values.shape], "offset": offset, "length": len(raw)}
        )
        directory.append(entry)
        chunks.append(raw)
        offset += len(raw)
    return directory, b"".join(chunks)


def digest(raw: bytes) -> str:
    """``sha256:<hex>`` of the arrays' bytes (bound to the seal through the JSON)."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _decode_strings(raw: bytes, count: int, distinct: Any, where: str) -> np.ndarray:
    if not isinstance(distinct, int) or isinstance(distinct, bool) or distinct < 0:
        raise ValueError(f"{where}: bad count of distinct strings")
    if len(raw) < 8 * (distinct + count):
        raise ValueError(f"{where}: strings truncated")
    ends = np.frombuffer(raw, dtype="<i8", count=distinct)
    text = raw[8 * distinct : len(raw) - 8 * count]
    codes = np.frombuffer(raw, dtype="<i8", count=count, offset=len(raw) - 8 * count)
    if distinct and (np.any(np.diff(ends) < 0) or ends[0] < 0 or int(ends[-1]) != len(text)):
        raise ValueError(f"{where}: string offsets do not match the bytes")
    if not distinct and text:
        raise ValueError(f"{where}: string offsets do not match the bytes")
    if count and (distinct == 0 or codes.min() < 0 or codes.max() >= distinct):
        raise ValueError(f"{where}: a string code is out of range")
    starts = np.r_[0, ends[:-1]] if distinct else ends
    try:
        items = [
            text[int(start) : int(end)].decode("utf-8")
            for start, end in zip(starts, ends, strict=True)
        ]
    except UnicodeDecodeError:
        raise ValueError(f"{where}: a string is not UTF-8") from None
    table = np.asarray(items, dtype=str) if items else np.zeros(0, dtype=str)
    return table[codes] if count else np.zeros(0, dtype=str)


def decode_arrays(directory: Any, raw: bytes) -> dict[str, np.ndarray]:
    """The arrays back from :func:`encode_arrays`; ``ValueError`` naming the array when the
    directory does not describe the bytes."""
    if not isinstance(directory, list):
        raise ValueError("arrays: not a list")
    arrays: dict[str, np.ndarray] = {}
    for entry in directory:
        if not isinstance(entry, dict):
            raise ValueError("arrays: an entry is not an object")
        name, kind, shape = entry.get("name"), entry.get("kind"), entry.get("shape")
        offset, length = entry.get("offset"), entry.get("length")
        where = f"array {name!r}"
        if not isinstance(name, str) or kind not in (*NUMERIC_KINDS, STRING_KIND):
            raise ValueError(f"{where}: unknown kind {kind!r}")
        if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
            raise ValueError(f"{where}: bad shape")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count > MAX_ELEMENTS:
            raise ValueError(f"{where}: {count} elements is more than a summary holds")
        if not (isinstance(offset, int) and isinstance(length, int)) or offset < 0 or length < 0:
            raise ValueError(f"{where}: bad offset or length")
        if offset + length > len(raw):
            raise ValueError(f"{where}: past the end of the file")
        chunk = raw[offset : offset + length]
        if kind == STRING_KIND:
            values = _decode_strings(chunk, count, entry.get("distinct"), where)
        else:
            dtype = np.dtype(NUMERIC_KINDS[kind])
            if length != count * dtype.itemsize:
                raise ValueError(f"{where}: {length} bytes for {count} values")
            values = np.frombuffer(chunk, dtype=dtype).astype(dtype.newbyteorder("="))
        arrays[name] = values.reshape(shape)
    return arrays
