from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_council.cli.app import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_ask_prints_answers_rankings_and_synthesis(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ask", "How do I reduce tail latency?", "--seed", "7")
    assert code == 0
    for heading in (
        "Stage 1: answers",
        "Stage 2: peer reviews",
        "Aggregate ranking",
        "Stage 3: synthesis",
    ):
        assert heading in out
    assert "stage1_done" in err and "duration_s" in err


def test_ask_json_has_label_to_model_with_display_indexes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "ask", "q?", "--seed", "7", "--json", "--log-level", "warning")
    result = json.loads(out)
    assert code == 0 and set(result) == {"stage1", "stage2", "stage3", "metadata"}
    labels = result["metadata"]["label_to_model"]["harsh"]
    assert labels["Response A"]["display_index"] == 0 and "model" in labels["Response A"]


def test_bad_config_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[council]\nmembers = 3\n")
    code, out, err = run_cli(capsys, "ask", "q", "--config", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {bad}: field 'members'")


def test_log_json_writes_json_lines_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ask", "q", "--seed", "1", "--json", "--log-json")
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert code == 0 and {line["event"] for line in lines} >= {
        "stage1_done",
        "stage2_done",
        "stage3_done",
        "session_done",
    }
    json.loads(out)


def test_console_script_is_installed() -> None:
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "llm-council"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0 and "ask" in completed.stdout
