"""Issue 37 A.1: output options write to devices, FIFOs and ``-`` as streams, never replace them.

As root, ``label-plan --out /dev/null`` used to rename a regular file over the device
node. The rule (atomic_files' docstring, ADR 0055) is tested at the module level in
tests/infra/test_atomic_files.py; here through the commands that take an output path.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from llm_council.cli.command_group import app, run


def _pairs(tmp_path: Path) -> Path:
    records = [
        {
            "id": f"p{i}",
            "prompt": "q",
            "response_a": "x",
            "response_b": "y",
            "judge": "j",
            "judgments": [{"order": "ab", "winner": "a"}, {"order": "ba", "winner": "a"}],
        }
        for i in range(4)
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_label_plan_out_dev_null_keeps_the_device(tmp_path: Path) -> None:
    assert run(["label-plan", str(_pairs(tmp_path)), "--out", "/dev/null"], "llm-council", app) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_label_plan_out_dash_prints_the_order_and_the_summary_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["label-plan", str(_pairs(tmp_path)), "--out", "-"], "llm-council", app) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is the order file alone
    assert sorted(entry["id"] for entry in document["order"]) == ["p0", "p1", "p2", "p3"]
    assert "label" in captured.err
    assert not (tmp_path / "-").exists()


def test_label_plan_out_fifo_streams(tmp_path: Path) -> None:
    fifo = tmp_path / "order.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert run(["label-plan", str(_pairs(tmp_path)), "--out", str(fifo)], "llm-council", app) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(json.loads(received[0])["order"]) == 4


def test_calibrate_output_into_a_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    code = run(
        ["calibrate", str(_pairs(tmp_path)), "--output", str(tmp_path / "out")], "llm-council", app
    )
    error = capsys.readouterr().err
    assert code == 2 and "Is a directory" in error and "Traceback" not in error
    assert len(error.strip().splitlines()) == 1


def test_calibrate_output_dash_keeps_the_json_alone_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["calibrate", str(_pairs(tmp_path)), "--output", "-"], "llm-council", app)
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err  # the gate may fail on 4 pairs; the output is the point
    assert json.loads(captured.out)["mode"] == "replay"


def test_export_openai_evals_refuses_dash_for_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = run(["export-openai-evals", str(_pairs(tmp_path)), "--out", "-"], "llm-council", app)
    error = capsys.readouterr().err
    assert code == 2 and "'-' (stdout) is not one" in error
    assert not (tmp_path / "-").exists()


def test_bias_report_out_dev_null_and_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own example: `bias-report --out /dev/stdout` (here /dev/null and -)."""
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    assert run(["ask", "q?", "--seed", "1", "--bias-audit", "--json"], "llm-council", app) == 0
    capsys.readouterr()
    args = ["bias-report", "--store", str(store), "--format", "json"]
    assert run([*args, "--out", "/dev/null"], "llm-council", app) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    capsys.readouterr()
    assert run([*args, "--out", "-"], "llm-council", app) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n_sessions"] == 1
    assert "wrote json report to -" in captured.err
