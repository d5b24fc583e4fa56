"""The CI gate: a judge that fails every call, --fail-under, and the live/replay input fixes
of issue 10 (items 7, 8, 11), each reproduced as the issue describes it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply
from llm_council.calibration.gate import GateThresholds, evaluate_gate, parse_fail_under
from llm_council.calibration.pairs import read_pairs
from llm_council.cli.app import _run, app
from llm_council.errors import ConfigError, InputError

from .conftest import simulated_pair_records, write_jsonl

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
CANARY_KEY = "sk-canary-gate-0123456789"


class UnauthorizedOpenAI(LoopbackJsonServer):
    """Every request gets the 401 a revoked key gets."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        self.requests += 1
        body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        return Reply(status=401, body=body)


def test_a_judge_failing_every_call_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 10.7: a 401 on every request used to exit 0 with "No checklist threshold failed"
    path = write_jsonl(tmp_path / "p.jsonl", simulated_pair_records(6, seed=1))
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
    output = tmp_path / "report.json"
    with UnauthorizedOpenAI().running() as server:
        code = _run(
            [
                "calibrate",
                str(path),
                "--model",
                "openai:gpt-4o",
                "-o",
                f"base_url={server.url}/v1",
                "--no-cache",
                "--output",
                str(output),
            ],
            "llm-council",
            app,
        )
    assert server.requests >= 12  # it really tried every call
    assert code == 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "only 0 of 6 pairs judged in both orders" in err[0]
    assert CANARY_KEY not in err[0]
    gate = json.loads(output.read_text())["gate"]
    assert gate["verdict"] == "too_few_judgments" and gate["thresholds"]["min_evaluated"] == 0.5


def _report(evaluated: int, total: int, human_kappa: float | None = 0.7) -> dict[str, object]:
    return {
        "judge": "j",
        "pairs_total": total,
        "pairs_evaluated": evaluated,
        "unevaluated": [
            {"id": str(i), "reason": "missing order ba"} for i in range(total - evaluated)
        ],
        "consistency": {"percent_agreement": 0.9, "kappa": 0.8},
        "human_agreement": {"kappa": human_kappa, "pairs": evaluated, "accuracy": {"rate": 0.8}},
    }


def test_min_evaluated_is_a_share_and_configurable() -> None:
    # 4 of 10 evaluated: below the default half, above a 0.3 floor
    assert evaluate_gate([_report(4, 10)], GateThresholds())["verdict"] == "too_few_judgments"
    assert evaluate_gate([_report(4, 10)], GateThresholds(min_evaluated=0.3))["verdict"] == "pass"
    # zero evaluated fails even at a floor of 0: a gate that cannot fail is a defect
    assert evaluate_gate([_report(0, 10)], GateThresholds(min_evaluated=0.0))["verdict"] == (
        "too_few_judgments"
    )
    with pytest.raises(ConfigError, match="--min-evaluated"):
        GateThresholds(min_evaluated=1.5)


def test_fail_under_names_the_failed_threshold_and_fails_on_undefined() -> None:
    floors = parse_fail_under("kappa=0.6,agreement=0.85")
    assert floors == {"kappa": 0.6, "agreement": 0.85}
    gate = evaluate_gate([_report(10, 10, human_kappa=0.55)], GateThresholds(fail_under=floors))
    assert gate["verdict"] == "fail"
    assert [f["metric"] for f in gate["failures"]] == ["kappa"]
    assert "kappa 0.550 < 0.6" in gate["failures"][0]["message"]
    undefined = evaluate_gate(
        [_report(10, 10, human_kappa=None)], GateThresholds(fail_under=floors)
    )
    assert "kappa undefined < 0.6" in undefined["failures"][0]["message"]
    for bad in ("kapa=0.6", "kappa", "kappa=high", "kappa=nan"):
        with pytest.raises(ConfigError, match="--fail-under"):
            parse_fail_under(bad)


def test_fail_under_exit_status_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "r.json"
    base = ["calibrate", str(FIXTURE), "--judge", "gpt4", "--human-threshold", "0"]
    # gpt4's order agreement on the fixture is 50/80 = 0.625 (pinned in test_prd_replay.py)
    code = _run([*base, "--fail-under", "agreement=0.85", "--output", str(output)], "x", app)
    assert code == 4
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "gpt4: agreement 0.625 < 0.85" in err
    gate = json.loads(output.read_text())["gate"]
    assert gate["thresholds"]["fail_under"] == {"agreement": 0.85}
    assert gate["verdict"] == "fail"
    assert _run([*base, "--fail-under", "agreement=0.6"], "x", app) == 0


def test_live_run_on_a_multi_judge_file_judges_each_id_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 10.8: the PRD fixture lists each id under two judges; live mode made 160 "pairs"
    output = tmp_path / "r.json"
    code = _run(
        [
            "calibrate",
            str(FIXTURE),
            "--model",
            "simulated:unbiased",
            "--no-cache",
            "--human-threshold",
            "-1",
            "--output",
            str(output),
        ],
        "llm-council",
        app,
    )
    assert code == 0, capsys.readouterr().err
    (report,) = json.loads(output.read_text())["reports"]
    assert report["pairs_total"] == 80
    assert all(len(p["ab"]) == 1 and len(p["ba"]) == 1 for p in report["pairs"])


def test_live_run_refuses_an_id_whose_records_disagree(tmp_path: Path) -> None:
    records = simulated_pair_records(2, seed=4)
    clash = {**records[0], "response_b": "something else", "judge": "other"}
    path = write_jsonl(tmp_path / "p.jsonl", [records[0], records[1], clash])
    from llm_council.calibration.pairs import distinct_questions

    with pytest.raises(InputError, match=r"p.jsonl:3: id 'pair-0' repeats line 1 .*'response_b'"):
        distinct_questions(read_pairs(path), str(path))


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    # issue 10.11: a writer killed mid-line leaves no newline and half a JSON object
    good = "".join(json.dumps(r) + "\n" for r in simulated_pair_records(3, seed=5))
    path = tmp_path / "labels.jsonl"
    path.write_text(good + '{"id": "pair-3", "prompt": "cut he', encoding="utf-8")
    with pytest.warns(UserWarning, match=r"labels.jsonl:4: skipped a torn last line"):
        pairs = read_pairs(path)
    assert [p.pair_id for p in pairs] == ["pair-0", "pair-1", "pair-2"]


def test_malformed_line_elsewhere_stays_an_error(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in simulated_pair_records(3, seed=6)]
    path = tmp_path / "p.jsonl"
    # a bad line in the middle, or a bad last line that ends with a newline, is not torn
    path.write_text(lines[0] + "\n{bad\n" + lines[1] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.jsonl:2: invalid JSON"):
        read_pairs(path)
    path.write_text(lines[0] + "\n{bad\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.jsonl:2: invalid JSON"):
        read_pairs(path)
    # a complete last line without a newline is read, silently
    path.write_text(lines[0] + "\n" + lines[1], encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_pairs(path)) == 2


def test_calibrate_accepts_a_torn_labels_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = simulated_pair_records(12, seed=7)
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in records) + json.dumps(records[0])[:40],
        encoding="utf-8",
    )
    args = ["calibrate", str(path), "--model", "simulated:unbiased", "--no-cache"]
    with pytest.warns(UserWarning, match=r"labels.jsonl:13: skipped a torn last line"):
        code = _run([*args, "--human-threshold", "-1"], "llm-council", app)
    assert code == 0
    assert "pairs evaluated     12 of 12" in capsys.readouterr().out


def test_two_human_labels_are_not_enough_to_trust_or_to_pass_a_kappa_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review finding: 40 pairs with only 2 human labels gave kappa 1.00, "trusted" and a
    passing ``--fail-under human_kappa=0.9``. Below 10 labelled pairs kappa counts as
    undefined: the floor fails (exit 4) and the judge is not trusted (exit 3 without a floor)."""
    records = []
    for index in range(40):
        winner = "a" if index % 2 == 0 else "b"
        record = {
            "id": f"p{index}",
            "prompt": "q",
            "response_a": "one answer",
            "response_b": "another answer",
            "judge": "j",
            "judgments": [{"order": "ab", "winner": winner}, {"order": "ba", "winner": winner}],
        }
        if index < 2:
            record["human_label"] = winner  # the judge agrees with both labels: kappa 1.0
        records.append(record)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", records)
    output = tmp_path / "r.json"
    code = _run(
        ["calibrate", str(pairs), "--fail-under", "human_kappa=0.9", "--output", str(output)],
        "x",
        app,
    )
    assert code == 4
    report = json.loads(output.read_text())["reports"][0]
    assert report["human_agreement"]["kappa"] == 1.0 and report["human_agreement"]["pairs"] == 2
    assert report["human_agreement"]["trusted"] is False
    capsys.readouterr()
    assert _run(["calibrate", str(pairs)], "x", app) == 3
    assert "from only 2 labelled pairs, too few" in capsys.readouterr().err
