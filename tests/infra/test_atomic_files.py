from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.infra.atomic_files import (
    atomic_writer,
    write_json_atomically,
    write_text_atomically,
)


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


# Issue 37 A.1: an output option replaced whatever was at its path (as root, `--out
# /dev/null` turned the device node into a regular file). The rule is in atomic_files'
# module docstring and ADR 0055.


def test_dev_null_is_streamed_to_and_stays_a_device() -> None:
    import stat

    write_text_atomically("/dev/null", "discarded\n")
    write_json_atomically("/dev/null", {"x": 1})
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)


def test_dash_writes_to_stdout_without_a_temporary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_json_atomically("-", {"kappa": 0.5})
    assert json.loads(capsys.readouterr().out) == {"kappa": 0.5}
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_receives_a_stream_and_stays_a_fifo(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_text_atomically(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_a_symlink_to_a_regular_file_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_atomically(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]


def test_a_dangling_symlink_is_one_line_refusal_and_nothing_is_created(tmp_path: Path) -> None:
    from llm_council.errors import InputError

    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "elsewhere" / "missing.txt")
    with pytest.raises(InputError, match="dangling symlink") as raised:
        write_text_atomically(link, "x")
    assert "\n" not in str(raised.value) and str(link) in str(raised.value)
    assert [p.name for p in tmp_path.iterdir()] == ["link.txt"]


def test_a_symlink_to_a_device_streams_to_the_device(tmp_path: Path) -> None:
    import stat

    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    write_text_atomically(link, "x")
    assert link.is_symlink() and stat.S_ISCHR(link.stat().st_mode)


def test_a_failed_stream_write_is_one_input_error() -> None:
    from llm_council.errors import InputError

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with pytest.raises(InputError, match="/dev/full: cannot write") as raised:
        write_text_atomically("/dev/full", "x" * 10_000)
    assert "\n" not in str(raised.value)


def test_a_path_with_a_nul_is_one_input_error() -> None:
    from llm_council.errors import InputError

    with pytest.raises(InputError, match="the path holds a NUL character"):
        write_text_atomically("report\x00.txt", "x")
