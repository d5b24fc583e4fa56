"""Named numpy arrays as bytes for a sealed summary file, and back, without pickling.

A section's summary (:mod:`~llm_council.bias_audit.report.analyses.incremental_section`)
is JSON metadata plus named arrays. The arrays travel as raw little-endian bytes after the
file's sealed JSON line; the JSON lists each one (name, kind, shape, offset, length) and
the SHA-256 of all the bytes, so the seal covers them. Only a few kinds are accepted
(floats, integers, booleans and UTF-8 strings). A string array travels dictionary-coded:
its distinct strings, sorted, as UTF-8 bytes with their end offsets (an id with a newline
or a NUL survives unchanged), then one code per element, so a session id repeated once per
reviewer is encoded and decoded once, not once per row. A table that recurs (the folded
session ids, in several sections) is encoded once per file and decoded once per read; a
table that is not sorted and distinct, or a code outside it, makes the file unusable.
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
#: the narrower widths an array of a kind may be stored in, narrowest first
STORED_WIDTHS = {
    "i8": ("<i1", "<i2", "<i4"),
    "u8": ("<u1", "<u2", "<u4"),
    "f8": ("<f4",),
}
#: the widest strings encoded as one code-point array (its temporaries are ``width`` bytes a
#: string; a table of longer ones, e.g. a hostile id, is encoded one string at a time)
MAX_ASCII_WIDTH = 256
#: string codes: the unsigned widths, by the largest code they hold
CODE_WIDTHS = ((1, "<u1", 0xFF), (2, "<u2", 0xFFFF), (4, "<u4", 0xFFFFFFFF), (8, "<i8", None))


def _narrowest(values: np.ndarray, kind: str) -> str:
    """The narrowest stored dtype that holds ``values`` exactly (the kind's own if none)."""
    wide = NUMERIC_KINDS[kind]
    if kind not in STORED_WIDTHS or values.size == 0:
        return wide
    if kind == "f8":
        with np.errstate(over="ignore", invalid="ignore"):
            back = values.astype("<f4").astype("<f8")
        same = np.array_equal(back.view("<u8"), np.ascontiguousarray(values, "<f8").view("<u8"))
        return "<f4" if same else wide
    low, high = int(values.min()), int(values.max())
    for stored in STORED_WIDTHS[kind]:
        info = np.iinfo(np.dtype(stored))
        if info.min <= low and high <= info.max:
            return stored
    return wide


def _code_width(distinct: int) -> tuple[int, str]:
    """(bytes a code takes, its dtype) for a table of ``distinct`` strings."""
    for width, dtype, largest in CODE_WIDTHS:
        if largest is None or distinct - 1 <= largest:
            return width, dtype
    raise AssertionError("unreachable")  # pragma: no cover


def _kind_of(values: np.ndarray) -> str:
    """The file kind of ``values`` (integers widen to 64 bits, floats to doubles)."""
    kinds = {"U": STRING_KIND, "O": STRING_KIND, "b": "b1", "f": "f8", "u": "u8", "i": "i8"}
    if values.dtype.kind not in kinds:
        raise ValueError(f"array of dtype {values.dtype} cannot be saved")
    return kinds[values.dtype.kind]


def _sorted_unique(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)``: the same distinct values and codes, but by a
    stable (timsort) argsort, which is linear on a run of sorted blocks (a summary's
    per-review ids are sorted by session within each reviewer: 4x faster at 200k rows than
    ``np.unique``'s quicksort), and in one pass when ``flat`` is already in order."""
    if flat.size < 2:
        return np.unique(flat, return_inverse=True)
    starts = np.empty(flat.size, dtype=bool)
    starts[0] = True
    if bool(np.all(flat[1:] >= flat[:-1])):
        np.not_equal(flat[1:], flat[:-1], out=starts[1:])
        return flat[starts], np.cumsum(starts) - 1
    order = flat.argsort(kind="stable")
    ordered = flat[order]
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    codes = np.empty(flat.size, dtype=np.intp)
    codes[order] = np.cumsum(starts) - 1
    return ordered[starts], codes


def _ascii_table(distinct: np.ndarray) -> tuple[np.ndarray, bytes] | None:
    """(end offsets, text) of a ``<U`` table whose characters are all ASCII, without a
    Python string per entry (numpy keeps a string's inner NULs and drops trailing ones,
    so a string ends after its last non-NUL character); None when one is not ASCII."""
    width = distinct.dtype.itemsize // 4
    if distinct.dtype.kind != "U" or distinct.size == 0 or not 0 < width <= MAX_ASCII_WIDTH:
        return None
    native = np.ascontiguousarray(distinct, dtype=distinct.dtype.newbyteorder("="))
    characters = native.view(np.uint32).reshape(-1, width)
    if int(characters.max()) >= 0x80:
        return None
    used = characters != 0
    lengths = np.where(used.any(axis=1), width - np.argmax(used[:, ::-1], axis=1), 0)
    text = characters[np.arange(width) < lengths[:, None]].astype(np.uint8).tobytes()
    return np.cumsum(lengths, dtype=np.int64), text


def _table_bytes(distinct: np.ndarray) -> bytes:
    """A string table as stored: its end offsets (``<i8``) then its UTF-8 text."""
    ascii_table = _ascii_table(distinct)
    if ascii_table is not None:
        ends, text = ascii_table
    else:
        encoded = [str(value).encode("utf-8") for value in distinct.tolist()]
        ends = np.cumsum([len(item) for item in encoded], dtype=np.int64)
        text = b"".join(encoded)
    return ends.astype("<i8").tobytes() + text


def _string_bytes(
    values: np.ndarray, compact: bool = True, tables: dict[bytes, bytes] | None = None
) -> tuple[bytes, int, int]:
    """(the dictionary-coded bytes of ``values``, how many distinct strings, code bytes);
    ``tables`` caches encoded tables by content (the folded session ids recur in several
    sections)."""
    flat = values.ravel()
    if flat.dtype.kind == "O":
        flat = np.asarray([str(value) for value in flat.tolist()], dtype=str)
    distinct, codes = _sorted_unique(flat)
    key = distinct.dtype.str.encode() + b":" + np.ascontiguousarray(distinct).tobytes()
    cache = {} if tables is None else tables
    table = cache.get(key)
    if table is None:
        table = cache[key] = _table_bytes(distinct)
    width, code_dtype = _code_width(int(distinct.size)) if compact else (8, "<i8")
    raw = table + np.asarray(codes, dtype=code_dtype).reshape(-1).tobytes()
    return raw, int(distinct.size), width


def encode_arrays(
    arrays: Mapping[str, np.ndarray], *, compact: bool = True
) -> tuple[list[dict[str, Any]], bytes]:
    """The arrays' directory (for the JSON) and their concatenated bytes; ``compact=False``
    writes every value at its kind's full width (the layout before ADR 0083, which every
    reader still reads: the benchmark's baseline)."""
    directory, chunks = encode_array_chunks(arrays, compact=compact)
    return directory, b"".join(chunks)


def encode_array_chunks(
    arrays: Mapping[str, np.ndarray], *, compact: bool = True
) -> tuple[list[dict[str, Any]], list[bytes]]:
    """:func:`encode_arrays` with the bytes left in one chunk per array, so a writer joins
    them once, with the file's first line (a 100 MB summary is then copied once, not twice)."""
    directory: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    tables: dict[bytes, bytes] = {}
    offset = 0
    for name in sorted(arrays):
        values = np.asarray(arrays[name])
        kind = _kind_of(values)
        entry: dict[str, Any] = {"name": name, "kind": kind}
        if kind == STRING_KIND:
            raw, entry["distinct"], width = _string_bytes(values, compact, tables)
            if width != 8:
                entry["code_bytes"] = width
        else:
            stored = _narrowest(values, kind) if compact else NUMERIC_KINDS[kind]
            if stored != NUMERIC_KINDS[kind]:
                entry["stored"] = stored
            raw = np.ascontiguousarray(values, dtype=stored).tobytes()
        entry.update(
            {"shape": [int(size) for size in values.shape], "offset": offset, "length": len(raw)}
        )
        directory.append(entry)
        chunks.append(raw)
        offset += len(raw)
    return directory, chunks


def digest(raw: bytes | memoryview | list[bytes]) -> str:
    """``sha256:<hex>`` of the arrays' bytes (bound to the seal through the JSON); a list
    of chunks is hashed as their concatenation."""
    hasher = hashlib.sha256()
    for chunk in raw if isinstance(raw, list) else [raw]:
        hasher.update(chunk)
    return "sha256:" + hasher.hexdigest()


def _string_table(text: bytes, ends: np.ndarray, where: str) -> np.ndarray:
    """The distinct strings of one table (``text`` cut at ``ends``), decoded from UTF-8."""
    try:
        if text.isascii():  # byte offsets are character offsets: slice one decoded str
            whole = text.decode("ascii")
            starts = [0, *ends[:-1].tolist()]
            items = [whole[start:end] for start, end in zip(starts, ends.tolist(), strict=True)]
        else:
            starts = [0, *ends[:-1].tolist()]
            items = [
                text[start:end].decode("utf-8")
                for start, end in zip(starts, ends.tolist(), strict=True)
            ]
    except UnicodeDecodeError:
        raise ValueError(f"{where}: a string is not UTF-8") from None
    return np.asarray(items, dtype=str) if items else np.zeros(0, dtype=str)


def _decode_strings(
    raw: memoryview,
    count: int,
    distinct: Any,
    code_bytes: Any,
    where: str,
    tables: dict[bytes, np.ndarray],
) -> np.ndarray:
    if not isinstance(distinct, int) or isinstance(distinct, bool) or distinct < 0:
        raise ValueError(f"{where}: bad count of distinct strings")
    widths = {width: dtype for width, dtype, _ in CODE_WIDTHS}
    if code_bytes not in widths or isinstance(code_bytes, bool):
        raise ValueError(f"{where}: bad code width {code_bytes!r}")
    code_size = count * code_bytes
    if len(raw) < 8 * distinct + code_size:
        raise ValueError(f"{where}: strings truncated")
    ends = np.frombuffer(raw, dtype="<i8", count=distinct)
    dictionary_end = len(raw) - code_size
    codes = np.frombuffer(raw, dtype=widths[code_bytes], count=count, offset=dictionary_end)
    text_length = dictionary_end - 8 * distinct
    if distinct and (np.any(np.diff(ends) < 0) or ends[0] < 0 or int(ends[-1]) != text_length):
        raise ValueError(f"{where}: string offsets do not match the bytes")
    if not distinct and text_length:
        raise ValueError(f"{where}: string offsets do not match the bytes")
    if count and (distinct == 0 or int(codes.min()) < 0 or int(codes.max()) >= distinct):
        raise ValueError(f"{where}: a string code is out of range")
    if not count:
        return np.zeros(0, dtype=str)
    key = bytes(raw[:dictionary_end])  # the table's ends and text: equal tables decode once
    table = tables.get(key)
    if table is None:
        table = _string_table(key[8 * distinct :], ends, where)
        # the encoder writes np.unique's sorted distinct strings: anything else was not ours
        if table.size > 1 and not bool(np.all(table[1:] > table[:-1])):
            raise ValueError(f"{where}: the string table is not sorted and distinct")
        tables[key] = table
    return table[codes]


def _numeric(
    chunk: memoryview, kind: str, entry: dict[str, Any], count: int, where: str
) -> np.ndarray:
    """One numeric array, widened from how it was stored to its kind's dtype (a copy, so
    it does not hold the file's buffer)."""
    wide = np.dtype(NUMERIC_KINDS[kind])
    stored_name = entry.get("stored", NUMERIC_KINDS[kind])
    if stored_name != NUMERIC_KINDS[kind] and stored_name not in STORED_WIDTHS.get(kind, ()):
        raise ValueError(f"{where}: cannot be stored as {stored_name!r}")
    stored = np.dtype(stored_name)
    if len(chunk) != count * stored.itemsize:
        raise ValueError(f"{where}: {len(chunk)} bytes for {count} values")
    return np.frombuffer(chunk, dtype=stored).astype(wide.newbyteorder("="))


def decode_arrays(directory: Any, raw: bytes | memoryview) -> dict[str, np.ndarray]:
    """The arrays back from :func:`encode_arrays`; ``ValueError`` naming the array when the
    directory does not describe the bytes."""
    if not isinstance(directory, list):
        raise ValueError("arrays: not a list")
    buffer = memoryview(raw)
    tables: dict[bytes, np.ndarray] = {}
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
        if offset + length > len(buffer):
            raise ValueError(f"{where}: past the end of the file")
        chunk = buffer[offset : offset + length]
        if kind == STRING_KIND:
            code_bytes = entry.get("code_bytes", 8)
            values = _decode_strings(chunk, count, entry.get("distinct"), code_bytes, where, tables)
        else:
            values = _numeric(chunk, kind, entry, count, where)
        arrays[name] = values.reshape(shape)
    return arrays
