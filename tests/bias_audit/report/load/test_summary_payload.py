"""The summary file's arrays stored in their narrowest exact width and read back as saved."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.bias_audit.report.load.summary_payload import decode_arrays, encode_arrays


def _round_trip(arrays: dict[str, np.ndarray]) -> tuple[list[dict], dict[str, np.ndarray]]:
    directory, raw = encode_arrays(arrays)
    return directory, decode_arrays(directory, raw)


def _stored(directory: list[dict]) -> dict[str, str | int | None]:
    return {e["name"]: e.get("stored", e.get("code_bytes")) for e in directory}


def test_integers_take_the_narrowest_width_and_come_back_as_int64() -> None:
    arrays = {
        "small": np.asarray([0, 1, 255], dtype=np.int64),
        "negative": np.asarray([-128, 127], dtype=np.int64),
        "wide": np.asarray([-(2**40), 2**40], dtype=np.int64),
        "extremes": np.asarray([np.iinfo(np.int64).min, np.iinfo(np.int64).max]),
        "unsigned": np.asarray([0, 70_000], dtype=np.uint64),
        "top": np.asarray([np.iinfo(np.uint64).max], dtype=np.uint64),
        "int32 input": np.asarray([5, -6], dtype=np.int32),
    }
    directory, back = _round_trip(arrays)
    assert _stored(directory) == {
        "extremes": None,
        "int32 input": "<i1",
        "negative": "<i1",
        "small": "<i2",  # 255 does not fit int8
        "top": None,
        "unsigned": "<u4",
        "wide": None,
    }
    for name, values in arrays.items():
        assert back[name].dtype == (np.uint64 if values.dtype.kind == "u" else np.int64)
        assert back[name].tolist() == values.tolist()


def test_floats_go_to_single_precision_only_when_every_bit_survives() -> None:
    exact = np.asarray([1.0, -0.0, np.inf, -np.inf, np.nan, 7.5, 2.0**100, 0.25])
    inexact = [
        np.asarray([0.1]),
        np.asarray([1e300]),
        np.asarray([2.0**-150]),
        np.asarray([1 + 2.0**-30]),
    ]
    directory, back = _round_trip({"exact": exact, **{f"x{i}": a for i, a in enumerate(inexact)}})
    stored = _stored(directory)
    assert stored["exact"] == "<f4" and all(stored[f"x{i}"] is None for i in range(4))
    assert back["exact"].dtype == np.float64
    assert back["exact"].tobytes() == exact.tobytes()  # -0.0, infinities and NaN bit for bit
    for i, values in enumerate(inexact):
        assert back[f"x{i}"].tobytes() == values.tobytes()


def test_string_codes_narrow_and_a_shared_table_decodes_to_equal_arrays() -> None:
    ids = np.asarray([f"session-{i:05d}" for i in range(70_000)], dtype=str)
    hostile = np.asarray(["é\n", "\x00", "", "é\n", "\u202e"], dtype=str)
    arrays = {"a/ids": ids, "b/ids": ids[::-1].copy(), "few": hostile, "same": ids.copy()}
    directory, back = _round_trip(arrays)
    assert _stored(directory) == {"a/ids": 4, "b/ids": 4, "few": 1, "same": 4}
    for name, values in arrays.items():
        assert back[name].tolist() == values.tolist()
    back["a/ids"][0] = "changed"  # a decoded array is its own, not a view of a shared table
    assert back["same"][0] == "session-00000"


def test_a_file_from_before_the_narrow_widths_still_reads() -> None:
    # the layout every earlier release wrote: 8-byte codes and values, no width fields
    values = np.asarray([3, 4], dtype="<i8")
    ends = np.asarray([1, 2], dtype="<i8")
    codes = np.asarray([1, 0, 1], dtype="<i8")
    strings = ends.tobytes() + b"ab" + codes.tobytes()
    directory = [
        {"name": "n", "kind": "i8", "shape": [2], "offset": 0, "length": 16},
        {
            "name": "s",
            "kind": "str",
            "distinct": 2,
            "shape": [3],
            "offset": 16,
            "length": len(strings),
        },
    ]
    back = decode_arrays(directory, values.tobytes() + strings)
    assert back["n"].tolist() == [3, 4] and back["s"].tolist() == ["b", "a", "b"]


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "x", "kind": "i8", "stored": "<f4", "shape": [2], "offset": 0, "length": 8},
        {"name": "x", "kind": "i8", "stored": "<i4", "shape": [1], "offset": 0, "length": 8},
        {"name": "x", "kind": "f8", "stored": "<f2", "shape": [4], "offset": 0, "length": 8},
        {
            "name": "x",
            "kind": "str",
            "distinct": 1,
            "code_bytes": 3,
            "shape": [1],
            "offset": 0,
            "length": 8,
        },
        {
            "name": "x",
            "kind": "str",
            "distinct": 1,
            "code_bytes": True,
            "shape": [1],
            "offset": 0,
            "length": 8,
        },
    ],
)
def test_a_stored_width_that_does_not_fit_its_kind_or_bytes_is_refused(entry: dict) -> None:
    with pytest.raises(ValueError, match="array 'x'"):
        decode_arrays([entry], b"\x00" * 8)


@pytest.mark.parametrize(
    "values",
    [
        ["a", "a", "b", "c", "c", "c"],  # in order: the one-pass path
        ["c", "a", "b", "a"],  # not in order: a stable argsort
        ["a", "c", "b", "d", "a", "c"],  # sorted blocks
        ["é", "é\n", "z"],
        ["only"],
        [],
    ],
)
def test_string_coding_is_numpys_unique_whatever_the_order(values: list[str]) -> None:
    from llm_council.bias_audit.report.load.summary_payload import _sorted_unique

    flat = np.asarray(values, dtype=str)
    distinct, codes = _sorted_unique(flat)
    expected_distinct, expected_codes = np.unique(flat, return_inverse=True)
    assert distinct.tolist() == expected_distinct.tolist()
    assert codes.tolist() == expected_codes.tolist()


def _reference_string_bytes(values: np.ndarray) -> bytes:
    """The string layout as the format defines it, written the plain way (np.unique, one
    UTF-8 encode per distinct string): what the faster encoder must reproduce byte for byte."""
    distinct, codes = np.unique(values.ravel(), return_inverse=True)
    encoded = [str(value).encode("utf-8") for value in distinct.tolist()]
    ends = np.cumsum([len(item) for item in encoded], dtype=np.int64)
    largest = max(int(distinct.size) - 1, 0)
    code_dtype = "<u1" if largest <= 0xFF else "<u2" if largest <= 0xFFFF else "<u4"
    return (
        ends.astype("<i8").tobytes()
        + b"".join(encoded)
        + np.asarray(codes, dtype=code_dtype).reshape(-1).tobytes()
    )


_IDS = np.asarray([f"session-{i:05d}" for i in range(300)], dtype=str)


@pytest.mark.parametrize(
    "values",
    [
        np.tile(_IDS, 5),  # sorted blocks, one per reviewer: the stable-sort path
        np.random.default_rng(3).permutation(np.tile(_IDS, 3)),  # no order at all
        np.asarray(["a\x00b", "a", "ab", "a\x00b", "\x7f"], dtype=str),  # inner NUL kept
        np.asarray(["é", "e", "é\n", "\u202e", "z"], dtype=str),  # not ASCII: per string
        np.asarray([["c", "a"], ["b", "a"]], dtype=str),  # 2-D
        np.asarray([""] * 4, dtype=str),  # only the empty string
        np.asarray(["x"], dtype=str),
        np.zeros(0, dtype=str),
        np.asarray(["b", "a", "b"], dtype=">U1"),  # big-endian code points
        np.asarray(["x" * 300, "a", "x" * 300], dtype=str),  # past MAX_ASCII_WIDTH
    ],
)
def test_string_bytes_are_the_plain_encoders_byte_for_byte(values: np.ndarray) -> None:
    directory, raw = encode_arrays({"s": values})
    assert raw == _reference_string_bytes(values)
    assert decode_arrays(directory, raw)["s"].tolist() == values.tolist()


def test_a_recurring_table_is_encoded_once_and_each_array_gets_its_own_codes() -> None:
    arrays = {"a": _IDS, "b": _IDS[::-1].copy(), "c": np.tile(_IDS, 2)}
    directory, raw = encode_arrays(arrays)
    for entry in directory:
        chunk = raw[entry["offset"] : entry["offset"] + entry["length"]]
        assert chunk == _reference_string_bytes(arrays[entry["name"]])
    back = decode_arrays(directory, raw)
    assert {name: back[name].tolist() for name in arrays} == {
        name: values.tolist() for name, values in arrays.items()
    }


def test_chunks_join_to_the_arrays_bytes_and_hash_as_them() -> None:
    from llm_council.bias_audit.report.load.summary_payload import digest, encode_array_chunks

    arrays = {"ids": _IDS, "x": np.arange(5.0), "empty": np.zeros(0)}
    directory, chunks = encode_array_chunks(arrays)
    assert (directory, b"".join(chunks)) == encode_arrays(arrays)
    assert digest(chunks) == digest(b"".join(chunks))
    # sha256 of no bytes (FIPS 180-4's empty-message value)
    assert (
        digest([])
        == digest(b"")
        == ("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    )
