"""The commands end to end through the real CLI path (``llm_council.cli.app._run``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.cli.app import _run, app

from .conftest import simulated_pair_records, write_jsonl

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def test_live_calibrate_writes_report_and_summary(
    pairs_file, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pairs_file(40, seed=2)
    output = tmp_path / "report.json"
    args = [
        "calibrate",
        str(path),
        "--model",
        "simulated:custom",
        "-o",
        "noise_sd=0.2",
        "-o",
        "score_decimals=2",
        "--output",
        str(output),
    ]
    assert _run(args, "llm-council", app) == 0
    document = json.loads(output.read_text())
    (report,) = document["reports"]
    assert document["mode"] == "live" and report["pairs_evaluated"] == 40
    assert (
        tmp_path / "report.json.calls.jsonl"
    ).exists()  # the default checkpoint sits beside the report
    summary = capsys.readouterr().out
    assert "GRADE A" in summary and "order agreement" in summary and "human agreement" in summary
    assert len(summary.splitlines()) <= 12  # readable at a glance
    # a second run is served from the checkpoint: no model calls
    assert _run(args, "llm-council", app) == 0
    assert json.loads(output.read_text())["reports"][0]["model_calls"] == 0


def test_low_human_agreement_exits_with_distinct_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", simulated_pair_records(40, seed=3, human="random"))
    code = _run(
        ["calibrate", str(path), "--model", "simulated:unbiased", "--no-cache"], "llm-council", app
    )
    assert code == 3
    captured = capsys.readouterr()
    assert "Do not trust this judge" in captured.out
    assert "human agreement below 0.6" in captured.err
    # the threshold is configurable: at -1 every kappa passes
    assert (
        _run(
            [
                "calibrate",
                str(path),
                "--model",
                "simulated:unbiased",
                "--no-cache",
                "--human-threshold",
                "-1",
            ],
            "llm-council",
            app,
        )
        == 0
    )


def test_replay_of_real_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "r.json"
    code = _run(
        [
            "calibrate",
            str(FIXTURE),
            "--judge",
            "gpt4",
            "--output",
            str(output),
            "--human-threshold",
            "0.4",
        ],
        "llm-council",
        app,
    )
    assert code == 0  # gpt4's kappa with humans on this subset is 0.43 >= 0.4
    (report,) = json.loads(output.read_text())["reports"]
    assert report["judge"] == "gpt4" and report["pairs_evaluated"] == 80
    assert "GRADE D" in capsys.readouterr().out


def test_replay_reports_pairs_missing_an_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = simulated_pair_records(3, seed=4)
    base[0] |= {
        "judge": "j",
        "judgments": [{"order": "ab", "winner": "a"}, {"order": "ba", "winner": "a"}],
    }
    base[1] |= {"judge": "j", "judgments": [{"order": "ab", "winner": "a"}]}
    base[2] |= {
        "judge": "j",
        "judgments": [
            {"order": "ab", "winner": "b"},
            {"order": "ba", "winner": "b"},
            {"order": "ab", "winner": "a"},
        ],
    }
    path = write_jsonl(tmp_path / "replay.jsonl", base)
    output = tmp_path / "r.json"
    _run(
        ["calibrate", str(path), "--output", str(output), "--human-threshold", "-1"],
        "llm-council",
        app,
    )
    (report,) = json.loads(output.read_text())["reports"]
    assert report["pairs_evaluated"] == 2
    assert report["unevaluated"] == [{"id": "pair-1", "reason": "missing order ba"}]
    assert report["repetition_stability"]["orders_with_repetitions"] == 1
    assert "1 unevaluated" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"id": "p", "prompt": "q", "response_a": "x"}\n',
            "p.jsonl:1: missing field 'response_b'",
        ),
        ("{oops\n", "p.jsonl:1: invalid JSON"),
        (
            '{"id": "p", "prompt": "q", "response_a": "x", "response_b": "y"}\n',
            "no recorded 'judgments' to replay",
        ),
    ],
)
def test_bad_input_is_one_line_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    assert _run(["calibrate", str(path)], "llm-council", app) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("value", ["1.5", "-0.1", "often", "nan"])
def test_invalid_bias_check_probability_is_a_config_error(
    pairs_file, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_CHECK_PROBABILITY", value)
    assert (
        _run(
            ["calibrate", str(pairs_file(3)), "--model", "simulated:unbiased", "--no-cache"],
            "llm-council",
            app,
        )
        == 2
    )
    assert (
        "LLM_COUNCIL_BIAS_CHECK_PROBABILITY must be a number from 0 to 1" in capsys.readouterr().err
    )


def test_bias_check_probability_samples_pairs(
    pairs_file, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_CHECK_PROBABILITY", "0.5")
    output = tmp_path / "r.json"
    args = [
        "calibrate",
        str(pairs_file(60)),
        "--model",
        "simulated:unbiased",
        "--no-cache",
        "--output",
        str(output),
        "--human-threshold",
        "-1",
        "--probes",
        "padding",
    ]
    assert _run(args, "llm-council", app) == 0
    report = json.loads(output.read_text())["reports"][0]
    # Binomial(60, 0.5): 30 expected; 15..45 covers it with overwhelming probability
    assert 15 <= report["bias_check_pairs"] <= 45
    assert report["probes"]["padding"]["pairs"] == report["bias_check_pairs"]
    monkeypatch.setenv("LLM_COUNCIL_BIAS_CHECK_PROBABILITY", "0")
    assert _run(args + ["--bias-check"], "llm-council", app) == 0  # --bias-check: always
    assert json.loads(output.read_text())["reports"][0]["bias_check_pairs"] == 60


def test_probe_command(pairs_file, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "probe.json"
    args = [
        "probe",
        str(pairs_file(30)),
        "--model",
        "simulated:verbose",
        "--probes",
        "padding,format",
        "--no-cache",
        "--output",
        str(output),
    ]
    assert _run(args, "llm-council", app) == 0
    probes = json.loads(output.read_text())["reports"][0]["probes"]
    assert set(probes) == {"padding", "format"}
    assert (
        probes["format"]["robustness"]["rate"] == 1.0
    )  # formatting changes neither quality nor length
    assert probes["padding"]["robustness"]["rate"] < 1.0  # the verbose judge rewards the filler
    assert "probe padding" in capsys.readouterr().out
    assert (
        _run(
            ["probe", str(pairs_file(3)), "--model", "simulated:unbiased", "--probes", "vibes"],
            "llm-council",
            app,
        )
        == 2
    )


def test_export_openai_evals(tmp_path: Path) -> None:
    out = tmp_path / "evals"
    assert _run(["export-openai-evals", str(FIXTURE), "--out", str(out)], "llm-council", app) == 0
    samples = [
        json.loads(line)
        for line in (out / "data" / "llm-council-pairwise" / "samples.jsonl")
        .read_text()
        .splitlines()
    ]
    # 80 distinct pairs in the fixture (each appears once per judge), 72 with a human label, 2 orders each
    assert len(samples) == 144
    first = samples[0]
    assert (
        first["input"][0]["role"] == "system"
        and "<<<CANDIDATE Response A" in first["input"][1]["content"]
    )
    assert {s["ideal"] for s in samples} <= {"Response A", "Response B", "tie"}
    by_order = {(s["id"], s["order"]): s["ideal"] for s in samples}
    for (pair_id, order), ideal in by_order.items():
        if order == "ab" and ideal != "tie":  # the same winner sits in the other slot when swapped
            assert by_order[(pair_id, "ba")] == (
                "Response B" if ideal == "Response A" else "Response A"
            )
    spec = (out / "evals" / "llm-council-pairwise.yaml").read_text()
    assert "class: evals.elsuite.modelgraded.classify:ModelBasedClassify" in spec
    assert 'modelgraded_spec: "llm-council-pairwise"' in spec
    graded = (out / "modelgraded" / "llm-council-pairwise.yaml").read_text()
    assert "{completion}" in graded and '"Y": 1.0' in graded
