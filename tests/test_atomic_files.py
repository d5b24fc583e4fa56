from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.atomic_files import atomic_writer, write_json_atomically, write_text_atomically


def test_writes_whole_file_with_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.json"
    write_json_atomically(target, {"kappa": 0.5})
    assert json.loads(target.read_text()) == {"kappa": 0.5}
    assert target.stat().st_mode & 0o777 == 0o644
    write_text_atomically(target, "replaced\n")
    assert target.read_text() == "replaced\n"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


def test_failure_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(target) as stream:
        stream.write("half")
        raise RuntimeError("crash mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_nan_is_refused_before_anything_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    with pytest.raises(ValueError):
        write_json_atomically(target, {"r": float("nan")})
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("write", [write_text_atomically, write_json_atomically])
def test_an_unwritable_target_is_one_input_error_and_leaves_nothing(write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # review finding: `calibrate --html DIR` / `--output DIR` ended in a traceback
    from llm_council.errors import InputError

    target = tmp_path / "a-directory"
    target.mkdir()
    with pytest.raises(InputError, match="cannot write: Is a directory") as raised:
        write(target, {"x": 1} if write is write_json_atomically else "text")
    assert "\n" not in str(raised.value)
    assert list(target.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "a-directory"
    ]
