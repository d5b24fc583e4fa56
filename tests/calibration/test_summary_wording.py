"""Issue 28: the calibrate summary speaks plain English, and its counts say what they count."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.calibration.summary import direction_text
from llm_council.cli.app import _run, app

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def test_the_summary_names_the_direction_and_the_decisive_pairs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # gpt4 on the PRD fixture: 30 flips toward the first answer, 0 toward the second; the
    # longer answer wins 45 of the 50 decisive pairs of unequal length (90%)
    assert (
        _run(["calibrate", str(FIXTURE), "--judge", "gpt4", "--human-threshold", "0"], "x", app)
        == 0
    )
    out = capsys.readouterr().out
    assert "favors the first answer (flips toward first 30, toward second 0;" in out
    assert "sign test p<0.001" in out
    assert "prefers longer in 90% [79%-96%] of 50 decisive pairs" in out
    assert "favors_first" not in out and "(n=50)" not in out


def test_direction_text_covers_every_code() -> None:
    assert direction_text("favors_first") == "favors the first answer"
    assert direction_text("favors_second") == "favors the second answer"
    assert direction_text(None) == "no significant direction"
