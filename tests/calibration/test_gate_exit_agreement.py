"""Issue 28: the JSON report's gate verdict and the exit status agree on every path.

``calibrate ... --output cal.json`` exited 3 ("Do not trust this judge") while cal.json said
``"verdict": "pass"``: a CI step reading the JSON passed a judge the tool said not to trust.
Each exit status (0, 3, 4, 5) is reached here through the real CLI path and the JSON read
back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_council.calibration.gate import (
    VERDICT_EXIT_STATUS,
    GateThresholds,
    decide_gate,
)
from llm_council.cli.app import _run, app

from .conftest import simulated_pair_records, write_jsonl

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def _calibrate(args: list[str], output: Path) -> tuple[int, dict[str, Any]]:
    code = _run(["calibrate", *args, "--output", str(output)], "llm-council", app)
    return code, json.loads(output.read_text())["gate"]


def _assert_agrees(code: int, gate: dict[str, Any], verdict: str) -> None:
    assert gate["verdict"] == verdict
    assert gate["exit_status"] == code == VERDICT_EXIT_STATUS[verdict]


def test_untrusted_judge_exit_3_is_untrusted_in_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command: a primacy judge on 20 labelled pairs agrees with humans at
    # kappa 0.54 < 0.6 (printed below), no --fail-under
    pairs = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(20, seed=1))
    code, gate = _calibrate(
        [str(pairs), "--model", "simulated:primacy", "--no-cache"], tmp_path / "cal.json"
    )
    _assert_agrees(code, gate, "untrusted")
    assert gate["failures"] == [] and gate["thresholds"]["human_kappa"] == 0.6
    assert gate["untrusted_judges"] == ["simulated:primacy (kappa 0.54)"]
    err = capsys.readouterr().err.strip()
    assert err == f"error: {gate['message']}"
    assert "human agreement below 0.6 for simulated:primacy (kappa 0.54)" in err


def test_fail_under_exit_4_is_fail_in_the_json_and_lists_the_untrusted_judge_too(
    tmp_path: Path,
) -> None:
    # gpt4 on the PRD fixture: order agreement 0.625 (test_prd_replay.py), human kappa below
    # 0.6: both rules fire; the first in the gate's order (--fail-under) sets verdict and exit
    code, gate = _calibrate(
        [str(FIXTURE), "--judge", "gpt4", "--fail-under", "agreement=0.85"],
        tmp_path / "r.json",
    )
    _assert_agrees(code, gate, "fail")
    assert [f["metric"] for f in gate["failures"]] == ["agreement"]
    assert len(gate["untrusted_judges"]) == 1 and gate["untrusted_judges"][0].startswith("gpt4")


def test_too_few_judgments_exit_5_is_too_few_in_the_json(tmp_path: Path) -> None:
    # replayed verdicts in one order only: no pair was judged in both orders
    records = [
        {**record, "judge": "j", "judgments": [{"order": "ab", "winner": "a"}]}
        for record in simulated_pair_records(12, seed=2)
    ]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", records)
    code, gate = _calibrate([str(pairs), "--fail-under", "agreement=0.85"], tmp_path / "r.json")
    _assert_agrees(code, gate, "too_few_judgments")
    assert "only 0 of 12 pairs judged in both orders" in gate["message"]


def test_a_trusted_judge_exit_0_is_pass_in_the_json(tmp_path: Path) -> None:
    code, gate = _calibrate(
        [str(FIXTURE), "--judge", "gpt4", "--human-threshold", "0"], tmp_path / "r.json"
    )
    _assert_agrees(code, gate, "pass")
    assert gate["message"] is None and gate["untrusted_judges"] == []


def test_a_file_without_human_labels_is_not_held_to_the_kappa_rule(tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(20, seed=3, human="none"))
    code, gate = _calibrate(
        [str(pairs), "--model", "simulated:unbiased", "--no-cache"], tmp_path / "r.json"
    )
    _assert_agrees(code, gate, "pass")


def _report(evaluated: int, kappa: float | None, trusted: bool | None) -> dict[str, Any]:
    return {
        "judge": "j",
        "pairs_total": 10,
        "pairs_evaluated": evaluated,
        "unevaluated": [],
        "consistency": {"percent_agreement": 0.9, "kappa": 0.8},
        "human_agreement": {"kappa": kappa, "pairs": evaluated, "trusted": trusted},
    }


@pytest.mark.parametrize(
    ("report", "floors", "verdict"),
    [
        (_report(10, 0.8, True), {}, "pass"),
        (_report(10, 0.4, False), {}, "untrusted"),
        (_report(10, 0.4, False), {"kappa": 0.6}, "fail"),
        (_report(2, 0.4, False), {"kappa": 0.6}, "too_few_judgments"),
        (_report(10, None, None), {}, "pass"),  # no labels: the kappa rule does not apply
    ],
)
def test_every_verdict_raises_the_error_with_its_exit_status(
    report: dict[str, Any], floors: dict[str, float], verdict: str
) -> None:
    decision = decide_gate([report], GateThresholds(fail_under=floors, human_kappa=0.6))
    assert decision.verdict == verdict == decision.as_json()["verdict"]
    if verdict == "pass":
        decision.raise_if_failed()  # nothing raised
        return
    with pytest.raises(Exception) as raised:
        decision.raise_if_failed()
    assert getattr(raised.value, "exit_code", None) == decision.exit_status
    assert str(raised.value) == decision.message
