"""Issue 37 A.10: hostile input files are one line naming the file, never a traceback or a hang.

A directory was an IsADirectoryError traceback, ``/dev/zero`` read until memory ran out,
a FIFO hung, 100,000 ``[`` was a RecursionError: for ``label-ui --order``,
``label-plan``, ``calibrate`` and ``convert`` (pairs, labels, orders, judgment logs),
all now read through :mod:`llm_council.infra.input_files`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_council.calibration.call_cache import CallCache
from llm_council.calibration.label_store import LabelStore
from llm_council.calibration.pairs import Pair
from llm_council.cli.command_group import app, run
from llm_council.errors import ConfigError, InputError
from llm_council.infra.input_files import (
    DEFAULT_MAX_INPUT_BYTES,
    MAX_INPUT_BYTES_VARIABLE,
    load_input_json,
    max_input_bytes,
    read_input_text,
)

SRC = Path(__file__).resolve().parents[2] / "src"
GOOD_PAIR = {"id": "p1", "prompt": "q", "response_a": "x", "response_b": "y"}


def _good_pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(GOOD_PAIR) + "\n", encoding="utf-8")
    return path


def _hostile(kind: str, tmp_path: Path) -> Path:
    if kind == "directory":
        path = tmp_path / "a-directory"
        path.mkdir()
        return path
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "a-fifo"
        os.mkfifo(path)
        return path
    if kind == "deep":
        path = tmp_path / "deep.json"
        path.write_text("[" * 100_000 + "\n", encoding="utf-8")
        return path
    if kind == "not-utf8":
        path = tmp_path / "latin1.jsonl"
        path.write_bytes(json.dumps(GOOD_PAIR).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
        return path
    raise AssertionError(kind)


EXPECTED = {
    "directory": "is a directory, not a file",
    "dev-zero": "is a device, not a regular file",
    "fifo": "is a FIFO, not a regular file",
    "deep": "invalid JSON: nested too deeply",
    "not-utf8": "not UTF-8 text",
}


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The real command in a child process, with a timeout: a FIFO used to hang forever."""
    code = "import sys; from llm_council.cli.app import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.parametrize("command", ["label-plan", "calibrate"])
def test_a_hostile_pairs_file_is_one_line(
    kind: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _hostile(kind, tmp_path)
    if kind == "fifo":  # in a child process with a timeout: a FIFO used to hang for ever
        finished = _cli([command, str(bad)])
        code, error = finished.returncode, finished.stderr
    else:
        code = run([command, str(bad)], "llm-council", app)
        error = capsys.readouterr().err
    assert code == 2, error
    assert EXPECTED[kind] in error and str(bad) in error, error
    assert "Traceback" not in error and len(error.strip().splitlines()) == 1, error


@pytest.mark.parametrize("kind", ["directory", "dev-zero", "fifo", "deep"])
def test_label_ui_refuses_a_hostile_order_file_before_serving(kind: str, tmp_path: Path) -> None:
    bad = _hostile(kind, tmp_path)
    finished = _cli(
        ["label-ui", str(_good_pairs(tmp_path)), "--output", str(tmp_path / "l.jsonl"),
         "--order", str(bad), "--port", "0"]
    )  # fmt: skip
    assert finished.returncode == 2, finished.stderr
    assert EXPECTED[kind] in finished.stderr and "Traceback" not in finished.stderr


@pytest.mark.parametrize("kind", ["directory", "dev-zero", "fifo", "not-utf8"])
def test_a_hostile_labels_or_cache_file_is_one_line(kind: str, tmp_path: Path) -> None:
    bad = _hostile(kind, tmp_path)
    pair = Pair(pair_id="p1", prompt="q", response_a="x", response_b="y")
    with pytest.raises(InputError, match=EXPECTED[kind]):
        LabelStore([pair], bad)
    if kind != "not-utf8":  # the cache skips its own torn lines; a bad file is refused
        with pytest.raises(InputError, match=EXPECTED[kind]):
            CallCache(bad)


def test_a_labels_file_nested_too_deeply_names_its_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "p0"}\n' + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    pair = Pair(pair_id="p1", prompt="q", response_a="x", response_b="y")
    with pytest.raises(InputError, match=r"labels.jsonl:2: not a labels line"):
        LabelStore([pair], labels)


def test_the_size_bound_is_documented_and_overridable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert max_input_bytes({}) == DEFAULT_MAX_INPUT_BYTES == 256 * 1024 * 1024
    path = _good_pairs(tmp_path)
    size = path.stat().st_size
    monkeypatch.setenv(MAX_INPUT_BYTES_VARIABLE, str(size - 1))
    with pytest.raises(InputError, match=f"is {size} bytes, over the {size - 1}-byte input"):
        read_input_text(path)
    monkeypatch.setenv(MAX_INPUT_BYTES_VARIABLE, str(size))
    assert read_input_text(path).startswith('{"id"')
    for bad in ("0", "-5", "lots"):
        monkeypatch.setenv(MAX_INPUT_BYTES_VARIABLE, bad)
        with pytest.raises(ConfigError, match="must be a positive integer"):
            read_input_text(path)


def test_json_errors_name_the_line_and_a_symlink_to_a_file_reads(tmp_path: Path) -> None:
    broken = tmp_path / "order.json"
    broken.write_text('{\n  "format": "x",\n  oops\n}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"order.json:3: invalid JSON"):
        load_input_json(broken)
    link = tmp_path / "link.json"
    link.symlink_to(_good_pairs(tmp_path))
    assert load_input_json(link)["id"] == "p1"
    with pytest.raises(InputError, match="file not found"):
        read_input_text(tmp_path / "missing.json")


def test_a_path_with_a_nul_is_one_line() -> None:
    with pytest.raises(InputError, match="the path holds a NUL character"):
        read_input_text("pairs\x00.jsonl")


@pytest.mark.parametrize("kind", ["directory", "dev-zero", "fifo"])
def test_bias_import_refuses_what_is_not_a_regular_file(kind: str, tmp_path: Path) -> None:
    bad = _hostile(kind, tmp_path)
    finished = _cli(["bias-import", str(bad), "--store", str(tmp_path / "store.jsonl")])
    assert finished.returncode == 2, finished.stderr
    assert EXPECTED[kind] in finished.stderr and "Traceback" not in finished.stderr
    assert not (tmp_path / "store.jsonl").exists()


@pytest.mark.parametrize("kind", ["directory", "dev-zero", "fifo"])
def test_ask_refuses_a_config_that_is_not_a_regular_file(kind: str, tmp_path: Path) -> None:
    bad = _hostile(kind, tmp_path)
    finished = _cli(["ask", "q?", "--config", str(bad)])
    assert finished.returncode == 2, finished.stderr
    assert EXPECTED[kind] in finished.stderr and "Traceback" not in finished.stderr
