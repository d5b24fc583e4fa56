"""User mistakes on convert / calibrate --input-format: one line, non-zero, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.cli.app import _run, app

LOGS = Path(__file__).parents[2] / "data" / "judgment_logs"
FASTCHAT = LOGS / "fastchat_pair.jsonl"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input-format", "fastchat"], "unknown input format 'fastchat'"),
        (
            ["--input-format", "fastchat-pair", "--map", "id=x"],
            "--map is for --input-format mapped",
        ),
        (
            ["--input-format", "mtbench-human", "--human", str(FASTCHAT)],
            "--human is for --input-format fastchat-pair",
        ),
        (["--input-format", "mapped"], "--input-format mapped needs --map"),
        (["--map", "id=x"], "--map and --human need --input-format other than 'ours'"),
    ],
)
def test_option_mistakes_are_one_line(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["calibrate", str(FASTCHAT), *extra], "llm-council", app) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and "\n" not in error


def test_live_run_refuses_pairs_without_answer_text(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "calibrate",
        str(FASTCHAT),
        "--input-format",
        "fastchat-pair",
        "--model",
        "simulated:primacy",
    ]
    assert _run(args, "llm-council", app) == 2
    assert "10 imported pairs have no answer text" in capsys.readouterr().err


def test_convert_into_a_directory_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["convert", str(FASTCHAT), "--input-format", "fastchat-pair", "--out", str(tmp_path)]
    assert _run(args, "llm-council", app) == 2
    assert f"error: {tmp_path}: cannot write" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone


def test_missing_and_unknown_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert (
        _run(
            [
                "convert",
                str(missing),
                "--input-format",
                "fastchat-pair",
                "--out",
                str(tmp_path / "o.jsonl"),
            ],
            "llm-council",
            app,
        )
        == 2
    )
    assert f"{missing}: file not found" in capsys.readouterr().err
    odd = tmp_path / "log.xlsx"
    odd.write_text("x")
    assert (
        _run(
            [
                "convert",
                str(odd),
                "--input-format",
                "mtbench-human",
                "--out",
                str(tmp_path / "o.jsonl"),
            ],
            "llm-council",
            app,
        )
        == 2
    )
    assert "unknown table suffix '.xlsx'" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert (
        _run(
            [
                "convert",
                str(empty),
                "--input-format",
                "fastchat-pair",
                "--out",
                str(tmp_path / "o.jsonl"),
            ],
            "llm-council",
            app,
        )
        == 2
    )
    assert f"{empty}: no pairs in file" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
