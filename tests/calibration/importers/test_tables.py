"""Row readers: line numbers that match an editor's, spreadsheet quirks, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.calibration.importers.tables import read_rows
from llm_council.errors import InputError


def test_csv_with_bom_crlf_and_unicode_line_separator(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_bytes('\ufeffid,text\r\n1,"a\u2028b"\r\n2,plain\r\n'.encode())
    assert list(read_rows(path)) == [
        (2, {"id": "1", "text": "a\u2028b"}),
        (3, {"id": "2", "text": "plain"}),
    ]


def test_tsv_and_ragged_rows(tmp_path: Path) -> None:
    path = tmp_path / "log.tsv"
    path.write_text("id\twinner\n1\ta\n\n2\n")
    rows = read_rows(path)
    assert next(rows) == (2, {"id": "1", "winner": "a"})
    with pytest.raises(InputError, match=r"log.tsv:4: expected 2 CSV fields, got 1$"):
        next(rows)


def test_duplicate_csv_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("id,winner,winner\n1,a,b\n")
    with pytest.raises(InputError, match=r"log.csv:1: duplicate CSV column\(s\) \['winner'\]"):
        list(read_rows(path))


@pytest.mark.parametrize(
    ("line", "message"),
    [("[1, 2]", "expected a JSON object, got list"), ('{"a": ', "invalid JSON: Expecting value")],
)
def test_jsonl_line_that_is_not_an_object(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"id": 1}\n\n' + line + "\n")
    with pytest.raises(InputError, match=rf"log.jsonl:3: {message}"):
        list(read_rows(path))


def test_not_parquet_and_not_utf8(tmp_path: Path) -> None:
    fake = tmp_path / "log.parquet"
    fake.write_text("not parquet")
    with pytest.raises(InputError, match=r"log.parquet: cannot read Parquet"):
        list(read_rows(fake))
    latin = tmp_path / "log.csv"
    latin.write_bytes("id\n\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"log.csv:2: not UTF-8 text"):
        list(read_rows(latin))
