"""Rows of a foreign judgment log, numbered for error messages: JSONL, CSV, Parquet, Arrow.

Every reader yields ``(number, row)`` where ``row`` maps column names to values and
``number`` is what an error message names: the 1-based LINE of a JSONL or CSV file (the
line a CSV record starts on), the 1-based ROW of a Parquet file or of a Hugging Face
``datasets`` directory (``save_to_disk``: Arrow stream files listed in ``state.json``).
Parquet is read with duckdb (already a dependency); Arrow needs ``pyarrow`` (the
``arrow`` extra), imported only when such a directory is given. No reader
ever touches the network.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from llm_council.errors import InputError, MissingDependencyError
from llm_council.infra.input_files import read_input_text
from llm_council.infra.install_hints import extra_install_hint

Row = Mapping[str, Any]

TABLE_KINDS = ("jsonl", "csv", "parquet", "hf-dataset")


def table_kind(path: Path) -> str:
    """The reader for ``path``: a directory is a saved ``datasets`` dataset, else by suffix."""
    if path.is_dir():
        return "hf-dataset"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(
        f"unknown table suffix {path.suffix!r} (expected .jsonl, .csv, .tsv, .parquet"
        " or a datasets directory)",
        path=str(path),
    )


def read_rows(path: Path) -> Iterator[tuple[int, Row]]:
    """Yield ``(line or row number, row)`` from ``path`` whatever its kind."""
    if not path.exists():
        raise InputError("file not found", path=str(path))
    kind = table_kind(path)
    if kind == "jsonl":
        return _jsonl_rows(path)
    if kind == "csv":
        return _csv_rows(path)
    if kind == "parquet":
        return _parquet_rows(path)
    return _dataset_rows(path)


def _read_text(path: Path) -> str:
    # regular, bounded, UTF-8 (issue 37 A.10); a spreadsheet's BOM is not a column name
    return read_input_text(path, encoding="utf-8-sig")


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Row]]:
    # split on "\n" only: U+2028 is legal inside JSON strings (see pairs.read_pairs)
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"invalid JSON: {error.msg} (column {error.colno})", path=str(path), line=number
            ) from None
        except RecursionError:
            raise InputError(
                "invalid JSON: nested too deeply", path=str(path), line=number
            ) from None
        if not isinstance(row, dict):
            raise InputError(
                f"expected a JSON object, got {type(row).__name__}", path=str(path), line=number
            )
        yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, Row]]:
    text = _read_text(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    # newline="": split records on \n, \r, \r\n only (never U+2028), quoted newlines kept
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        raise InputError(f"invalid CSV header: {error}", path=str(path), line=1) from None
    if len(set(header)) != len(header):
        duplicated = sorted({name for name in header if header.count(name) > 1})
        raise InputError(f"duplicate CSV column(s) {duplicated}", path=str(path), line=1)
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputError(f"invalid CSV: {error}", path=str(path), line=start) from None
        if cells:
            if len(cells) != len(header):
                raise InputError(
                    f"expected {len(header)} CSV fields, got {len(cells)}",
                    path=str(path),
                    line=start,
                )
            yield start, dict(zip(header, cells, strict=True))
        start = reader.line_num + 1


def _parquet_rows(path: Path) -> Iterator[tuple[int, Row]]:
    import duckdb

    try:
        relation = duckdb.read_parquet(str(path))
        columns = list(relation.columns)
        records = relation.fetchall()
    except duckdb.Error as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"cannot read Parquet: {message}", path=str(path)) from None
    for number, values in enumerate(records, start=1):
        yield number, dict(zip(columns, values, strict=True))


def _dataset_rows(directory: Path) -> Iterator[tuple[int, Row]]:
    """A ``Dataset.save_to_disk`` directory: its Arrow stream files in ``state.json`` order."""
    state_path = directory / "state.json"
    if not state_path.is_file():
        if (directory / "dataset_dict.json").is_file():
            raise InputError(
                "this is a DatasetDict; give one split's directory (e.g. .../train)",
                path=str(directory),
            )
        raise InputError("not a saved datasets directory (no state.json)", path=str(directory))
    try:
        state = json.loads(_read_text(state_path))
        names = [entry["filename"] for entry in state["_data_files"]]
        if not all(isinstance(name, str) for name in names):
            raise TypeError
    except (json.JSONDecodeError, RecursionError, KeyError, TypeError):
        raise InputError("field '_data_files' missing or malformed", path=str(state_path)) from None
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingDependencyError(
            "reading a datasets directory needs pyarrow: " + extra_install_hint("arrow")
        ) from None
    number = 0
    for name in names:
        file_path = directory / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not file_path.is_file():
            raise InputError(f"data file {name!r} not found", path=str(state_path))
        table = _arrow_table(pa, file_path)
        for row in table.to_pylist():
            number += 1
            yield number, row


def _arrow_table(pa: Any, file_path: Path) -> Any:
    """``datasets`` writes the Arrow streaming format; the random-access file format also reads."""
    try:
        with pa.memory_map(str(file_path)) as source:
            return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        pass
    try:
        with pa.memory_map(str(file_path)) as source:
            return pa.ipc.open_file(source).read_all()
    except pa.ArrowInvalid as error:
        message = str(error).splitlines()[0] if str(error) else "not an Arrow file"
        raise InputError(f"cannot read Arrow: {message}", path=str(file_path)) from None
