"""Progress bars only for a person at a terminal; the ``calibrate`` console script."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from llm_council.cli import calibrate as calibrate_cli
from llm_council.cli.app import calibrate_main

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_in_ci_and_without_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Terminal())
    monkeypatch.delenv("CI", raising=False)
    assert calibrate_cli.progress_enabled() is True
    monkeypatch.setenv("CI", "true")
    assert calibrate_cli.progress_enabled() is False
    monkeypatch.delenv("CI")
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert calibrate_cli.progress_enabled() is False


def test_progress_bar_counts_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv("CI", raising=False)
    with calibrate_cli.call_progress("judging") as (on_total, on_done):
        on_total(2)
        on_done(None)
        on_done(None)
    drawn = terminal.getvalue()
    assert "judging" in drawn and "2/2" in drawn


def test_calibrate_console_script_replays(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        calibrate_main([str(FIXTURE), "--judge", "claude"])
    assert caught.value.code == 3  # claude's human kappa 0.39 < 0.6
    assert "Judge calibration: claude" in capsys.readouterr().out
