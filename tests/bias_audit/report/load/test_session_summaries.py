"""The incremental report's summary file: sealed, verified on its bytes, never through a
symlink, written 0600, and nothing written where the store's directory is read-only."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.summary_files import SummaryUnverifiable
from llm_council.bias_audit.records.summary_seal import sealed_json, unsealed_json
from llm_council.bias_audit.report.load.session_summaries import (
    SEAL_KIND,
    SavedSection,
    SessionSummaries,
    decode_summaries,
    encode_summaries,
    read_summaries,
    summaries_path,
    write_summaries,
)
from llm_council.bias_audit.report.load.summary_payload import (
    decode_arrays,
    digest,
    encode_arrays,
)

HOSTILE_IDS = ["s\n1", "s\x002", "s\u202e3", "é", "", "s'; DROP TABLE records; --"]


def _summaries() -> SessionSummaries:
    ids = np.asarray(sorted(HOSTILE_IDS), dtype=str)
    records = np.column_stack([np.arange(1, ids.size + 1), np.arange(ids.size) * 7]).astype(
        np.uint64
    )
    section = SavedSection(
        3,
        {"shared_order": True, "note": "x"},
        {
            "session_id": ids,
            "value": np.asarray([0.1, -np.inf, np.nan, 1e308, -0.0, 5.0]),
            "flag": np.asarray([True, False, True, False, True, False]),
            "cell": np.asarray([["a", "b"], ["c", "d"]], dtype=str),
            "empty": np.zeros(0),
        },
    )
    return SessionSummaries(
        {"kind": "jsonl", "size": 10}, {"seed": 0}, ids, records, {"length": section}
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    return path


def test_arrays_round_trip_bit_for_bit_with_hostile_strings() -> None:
    arrays = _summaries().sections["length"].arrays
    directory, raw = encode_arrays(arrays)
    back = decode_arrays(directory, raw)
    assert back.keys() == arrays.keys()
    for name, values in arrays.items():
        assert back[name].shape == values.shape
        if values.dtype.kind == "f":
            assert back[name].tobytes() == values.tobytes()  # NaN, -0.0 and infinities kept
        else:
            assert back[name].tolist() == values.tolist()


def test_the_file_round_trips_and_is_written_0600(store: Path) -> None:
    assert write_summaries(store, _summaries())
    path = summaries_path(store)
    assert path.name == "store.jsonl.report-sessions"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    back = read_summaries(store)
    assert back is not None
    assert back.session_ids.tolist() == sorted(HOSTILE_IDS)
    assert back.session_records.tolist() == _summaries().session_records.tolist()
    section = back.sections["length"]
    assert (section.version, section.meta) == (3, {"shared_order": True, "note": "x"})
    assert section.arrays["cell"].tolist() == [["a", "b"], ["c", "d"]]


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-1],  # truncated arrays
        lambda raw: raw[: raw.index(b"\n")],  # only the JSON line
        lambda raw: raw.replace(b'"seed":0', b'"seed":1'),  # an edited setting
        lambda raw: raw[:-8] + b"\x00" * 8,  # edited array bytes
        lambda raw: b"",
        lambda raw: b"not json at all",
    ],
    ids=["truncated", "json-only", "edited-json", "edited-arrays", "empty", "garbage"],
)
def test_a_damaged_file_does_not_verify(store: Path, damage: object) -> None:
    assert write_summaries(store, _summaries())
    path = summaries_path(store)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert read_summaries(store) is None
    with pytest.raises(SummaryUnverifiable):
        decode_summaries(store, path.read_bytes())


def test_another_stores_file_does_not_verify(tmp_path: Path, store: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n", encoding="utf-8")
    assert write_summaries(other, _summaries())
    summaries_path(store).write_bytes(summaries_path(other).read_bytes())
    assert read_summaries(store) is None


def test_a_symlinked_file_is_not_read_and_its_target_never_written(
    tmp_path: Path, store: Path
) -> None:
    target = tmp_path / "elsewhere"
    content = encode_summaries(store, _summaries())
    assert content is not None
    target.write_bytes(content)
    summaries_path(store).symlink_to(target)
    assert read_summaries(store) is None  # a valid file, but behind a symlink
    assert write_summaries(store, _summaries())
    assert not summaries_path(store).is_symlink()
    assert target.read_bytes() == content  # the link was replaced, its target untouched


def test_a_store_reached_through_a_symlink_shares_the_file(tmp_path: Path, store: Path) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(store)
    assert summaries_path(link) == summaries_path(store)
    assert write_summaries(link, _summaries())
    assert read_summaries(store) is not None


def test_without_a_key_nothing_is_written(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("llm_council.bias_audit.records.summary_seal.summary_key", lambda: None)
    assert not write_summaries(store, _summaries())
    assert not summaries_path(store).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_gets_nothing_written(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    store = directory / "store.jsonl"
    store.write_text("{}\n", encoding="utf-8")
    directory.chmod(0o555)
    try:
        assert not write_summaries(store, _summaries())
        assert sorted(os.listdir(directory)) == ["store.jsonl"]
    finally:
        directory.chmod(0o755)


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "x", "kind": "pickle", "shape": [1], "offset": 0, "length": 8},
        {"name": "x", "kind": "f8", "shape": [2], "offset": 0, "length": 8},
        {"name": "x", "kind": "f8", "shape": [1], "offset": 4, "length": 8},
        {"name": "x", "kind": "f8", "shape": [-1], "offset": 0, "length": 8},
        {"name": "x", "kind": "f8", "shape": [1 << 40], "offset": 0, "length": 8},
        {"name": "x", "kind": "str", "shape": [2], "offset": 0, "length": 8},
        "not an object",
    ],
)
def test_a_directory_that_does_not_describe_the_bytes_is_refused(entry: object) -> None:
    with pytest.raises(ValueError, match="array|entry"):
        decode_arrays([entry], b"\x00" * 8)


def test_a_read_only_file_system_gets_nothing_written(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root a chmod does not stop a write; a read-only mount answers EROFS."""
    import errno
    import tempfile

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert not write_summaries(store, _summaries())
    assert not summaries_path(store).exists()


def test_a_directory_at_the_summary_path_is_neither_read_nor_written(store: Path) -> None:
    summaries_path(store).mkdir()
    assert read_summaries(store) is None
    assert write_summaries(store, _summaries()) is False
    assert summaries_path(store).is_dir() and not any(summaries_path(store).iterdir())
    # nothing half-written beside it
    assert [p.name for p in store.parent.iterdir() if p.name.endswith(".tmp")] == []


def _tampered_file(store: Path, compact: bool, patch: Callable[[bytearray], None]) -> bytes:
    """A correctly sealed file whose ``length/ids`` string array (ids a, b, c) is patched:
    what a hostile writer holding the key could make; the reader must refuse it cleanly."""
    ids = np.asarray(["s-a", "s-b", "s-c"], dtype=str)
    records = np.ones((3, 2), dtype=np.uint64)
    section = SavedSection(1, {}, {"ids": ids})
    content = encode_summaries(
        store,
        SessionSummaries({"kind": "jsonl"}, {}, ids, records, {"length": section}),
        compact=compact,
    )
    newline = content.index(b"\n")
    body = unsealed_json(SEAL_KIND, str(store.resolve()), content[:newline], resolved=True)
    raw = bytearray(content[newline + 1 :])
    entry = next(item for item in body["arrays"] if item["name"] == "length/ids")
    chunk = bytearray(raw[entry["offset"] : entry["offset"] + entry["length"]])
    patch(chunk)
    raw[entry["offset"] : entry["offset"] + entry["length"]] = chunk
    body["arrays_digest"] = digest(bytes(raw))
    sealed = sealed_json(SEAL_KIND, str(store.resolve()), body, resolved=True)
    return sealed + b"\n" + bytes(raw)


def _set(position: int, value: bytes) -> Callable[[bytearray], None]:
    def patch(chunk: bytearray) -> None:
        start = position if position >= 0 else len(chunk) + position
        chunk[start : start + len(value)] = value

    return patch


# the chunk: 3 end offsets (<i8: 3, 6, 9), the text "s-as-bs-c" (bytes 24-32), the codes
@pytest.mark.parametrize(
    ("compact", "patch", "reason"),
    [
        (True, _set(-1, b"\x03"), "out of range"),  # a code past the table
        (True, _set(-1, b"\xff"), "out of range"),
        (False, _set(-8, (-1).to_bytes(8, "little", signed=True)), "out of range"),  # negative
        (True, _set(24 + 3 * 2 + 2, b"b"), "not sorted and distinct"),  # table a, b, b
        (True, _set(24, b"s-cs-bs-a"), "not sorted and distinct"),  # table c, b, a
        (True, _set(0, (7).to_bytes(8, "little")), "offsets"),  # ends 7, 6, 9
    ],
)
def test_a_sealed_file_with_a_hostile_string_table_is_unusable_not_an_index_error(
    store: Path, compact: bool, patch: Callable[[bytearray], None], reason: str
) -> None:
    content = _tampered_file(store, compact, patch)
    with pytest.raises(SummaryUnverifiable, match=f"malformed: array 'length/ids'.*{reason}"):
        decode_summaries(store, content)
    summaries_path(store).write_bytes(content)
    assert read_summaries(store) is None  # the caller then rebuilds the file


def test_the_helper_file_without_a_patch_reads(store: Path) -> None:
    # the control for the test above: its hand-built file is valid until patched
    content = _tampered_file(store, True, lambda chunk: None)
    back = decode_summaries(store, content)
    assert back.sections["length"].arrays["ids"].tolist() == ["s-a", "s-b", "s-c"]


def test_the_file_is_its_sealed_line_then_the_arrays_bytes(store: Path) -> None:
    content = encode_summaries(store, _summaries())
    newline = content.index(b"\n")
    body = unsealed_json(SEAL_KIND, str(store.resolve()), content[:newline], resolved=True)
    arrays = {"folded/session_id": _summaries().session_ids}
    arrays["folded/n_records"] = _summaries().session_records
    for name, values in _summaries().sections["length"].arrays.items():
        arrays[f"length/{name}"] = values
    directory, raw = encode_arrays(arrays)
    assert content[newline + 1 :] == raw and body["arrays"] == directory
    assert body["arrays_digest"] == digest(raw)
