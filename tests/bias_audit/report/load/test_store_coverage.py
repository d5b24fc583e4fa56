"""A saved summary's coverage: an appended store extends it; a replaced, shrunk or
rewritten one (or a Parquet store that lost a file) does not."""

from __future__ import annotations

import os
from pathlib import Path

from llm_council.bias_audit.report.load.store_coverage import TAIL_BYTES, extends, store_coverage


def _jsonl(tmp_path: Path, text: str = '{"a": 1}\n' * 100) -> Path:
    path = tmp_path / "store.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_appended_jsonl_store_extends_its_coverage(tmp_path: Path) -> None:
    path = _jsonl(tmp_path)
    saved = store_coverage(path)
    assert saved is not None and saved["size"] == path.stat().st_size
    with path.open("a", encoding="utf-8") as stream:
        stream.write('{"b": 2}\n')
    assert extends(saved, path)


def test_a_shrunk_or_rewritten_or_replaced_jsonl_store_does_not(tmp_path: Path) -> None:
    path = _jsonl(tmp_path)
    saved = store_coverage(path)
    with path.open("r+b") as stream:  # shrunk
        stream.truncate(path.stat().st_size - 1)
    assert not extends(saved, path)
    path = _jsonl(tmp_path)
    saved = store_coverage(path)
    with path.open("r+b") as stream:  # one byte of the covered tail rewritten in place
        stream.seek(path.stat().st_size - 3)
        stream.write(b"2")
    assert not extends(saved, path)
    path = _jsonl(tmp_path)
    saved = store_coverage(path)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(path.read_bytes())
    os.replace(replacement, path)  # the same bytes in another file
    assert not extends(saved, path)


def test_only_the_covered_tail_is_hashed(tmp_path: Path) -> None:
    # an edit before the last 64 KiB is left to the per-session content digests
    path = _jsonl(tmp_path, "x" * (TAIL_BYTES + 10) + "\n")
    saved = store_coverage(path)
    with path.open("r+b") as stream:
        stream.write(b"y")
    assert extends(saved, path)


def test_a_parquet_store_extends_while_every_file_is_there(tmp_path: Path) -> None:
    root = tmp_path / "store"
    for day in ("2026-01-01", "2026-01-02"):
        (root / f"date={day}").mkdir(parents=True)
        (root / f"date={day}" / "part-0.parquet").write_bytes(b"PAR1")
    saved = store_coverage(root)
    assert saved == {
        "kind": "parquet",
        "files": ["date=2026-01-01/part-0.parquet", "date=2026-01-02/part-0.parquet"],
    }
    (root / "date=2026-01-02" / "part-0.parquet").write_bytes(b"PAR1 rewritten with more")
    (root / "date=2026-01-03").mkdir()
    (root / "date=2026-01-03" / "part-0.parquet").write_bytes(b"PAR1")
    assert extends(saved, root)
    (root / "date=2026-01-01" / "part-0.parquet").unlink()
    assert not extends(saved, root)


def test_malformed_or_mismatched_coverage_never_extends(tmp_path: Path) -> None:
    path = _jsonl(tmp_path)
    for saved in (None, [], {"kind": "jsonl"}, {"kind": "jsonl", "size": -1},
                  {"kind": "jsonl", "size": True}, {"kind": "parquet", "files": "x"},
                  {"kind": "parquet", "files": [1]}, {"kind": "spark"}):  # fmt: skip
        assert not extends(saved, path)
    assert not extends(store_coverage(path), tmp_path / "missing.jsonl")
    assert store_coverage(tmp_path / "missing.jsonl") is None
    assert store_coverage("postgresql://user:pw@host/db") is None
